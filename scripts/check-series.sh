#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The series as a kernel developer would check it: every patch applies with
# git am onto the pristine tree, and scripts/checkpatch.pl --strict reports
# no errors.  One KTAP line per check; warnings are listed, not fatal.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
host_check

"$SHSTK_TOP/scripts/build/kernel-source.sh" --check >&2
AM=$SHSTK_CACHE/src/linux-am
mapfile -t patches < <(series_list "$SHSTK_TOP/patches/series")
echo "KTAP version 1"
echo "1..$((${#patches[@]} + 1))"
echo "ok 1 series applies with git am onto $(cat "$SHSTK_PATCHED_SRC/.shstk-kernel-version")"
n=1 rc=0
for p in "${patches[@]}"; do
	n=$((n + 1))
	# One run: the findings, then its "total: ..." line.
	report=$("$AM/scripts/checkpatch.pl" --strict --no-tree -q "$SHSTK_TOP/patches/$p" 2>&1 || true)
	summary=$(grep -m1 '^total:' <<<"$report" || true)
	grep -E '^(ERROR|WARNING|CHECK):' <<<"$report" | sed 's/^/# /' || true
	if grep -q '^ERROR:' <<<"$report"; then
		echo "not ok $n checkpatch $p: $summary"
		rc=1
	else
		echo "ok $n checkpatch $p: ${summary:-clean}"
	fi
done
exit "$rc"
