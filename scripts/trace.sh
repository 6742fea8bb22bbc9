#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make trace: boot the guest with the bpftrace root filesystem, attach a
# trace/ script, run the token scenario (or PROG) under it, bring the log
# back and check it against what the guest program saw.
#
#   scripts/trace.sh ARCH [EMU] [SCRIPT] [PROG]
#
# SCRIPT is a trace/ script name (default token-validation).  Leaves
# out/<arch>[-bochs]/trace/ (console.log, guest.out) and
# out/<arch>[-bochs]/trace-SCRIPT.log.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

arch_vars "${1:-}"
emu_vars "${2:-}"
script=$(basename "${3:-token-validation}" .bt)
PROG=${4:-}
[ -f "$SHSTK_TOP/trace/$script.bt" ] || die "no trace script trace/$script.bt"
OUT=$EMU_OUT/trace

rm -f "$EMU_OUT/trace-$script.log"
if [ -n "$PROG" ]; then
	build_kernel_and_guest --prog "$PROG"
else
	build_kernel_and_guest trace
fi
rootfs=$("$SHSTK_TOP/scripts/build/rootfs.sh" "$ARCH")
t0=$EPOCHREALTIME
msg "booting $ARCH with bpftrace ($script); logs in $OUT"
export SHSTK_ROOTFS=$rootfs
run_child "$SHSTK_TOP/scripts/vm/boot.sh" "$ARCH" "$EMU" "$KBUILD_DIR/$KIMAGE" "$GUEST_IMAGE" \
	"$OUT" "${SHSTK_TRACE_TIMEOUT:-300}" "shstk.trace=$script" || true
rc=0
PYTHONPATH=$SHSTK_TOP python3 -m checks.trace "$OUT" "$ARCH" "$script" \
	"$EMU_OUT/trace-$script.log" "${PROG:+user}" || rc=$?
msg "trace $ARCH: $(elapsed "$t0") s"
exit "$rc"
