# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# What a make entry point (scripts/*.sh) sources: it may call every layer,
# so it has core.sh and both layers' helpers.  Sourced, never run.

# shellcheck source=scripts/lib/core.sh
. "${BASH_SOURCE[0]%/*}/core.sh"
# shellcheck source=scripts/lib/build.sh
. "$SHSTK_TOP/scripts/lib/build.sh"
# shellcheck source=scripts/lib/vm.sh
. "$SHSTK_TOP/scripts/lib/vm.sh"
