#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the patched kernel with a guest suite (or a user's program) and report.
#
#   scripts/run.sh run   ARCH [EMU] [PROG]   the whole suite, or PROG alone
#   scripts/run.sh smoke ARCH [EMU]          is the series in the kernel?
#
# Results land in out/<arch>[-<emu>]/[smoke|prog]/: console.log, guest.out,
# results.ktap, results.json.  Exit status 0 only if everything passed.
#
#   XSAVE_SECONDS=N  how long the suite's XSAVE state stress runs on x86
#                    (guest seconds; each emulator has its own default)
set -euo pipefail
# shellcheck source=lib/entry.sh
. "$(dirname "$0")/lib/entry.sh"

shstk_host_check
mode=${1:?run or smoke}
shstk_arch_vars "${2:-}"
shstk_emu_vars "${3:-}"
PROG=${4:-}
case "$mode" in run | smoke) ;; *) shstk_die "unknown mode '$mode' (run or smoke)" ;; esac

# Check what the user gave before any long step.
[ -z "$PROG" ] || shstk_prog_check "$PROG"
# A later setting on the kernel command line wins over the emulator's.
append=
if [ -n "${XSAVE_SECONDS:-}" ]; then
	[[ $XSAVE_SECONDS =~ ^[0-9]+$ ]] || shstk_die "XSAVE_SECONDS=$XSAVE_SECONDS is not a number of seconds"
	append="SHSTK_XSAVE_SECONDS=$XSAVE_SECONDS"
fi
out=$EMU_OUT
timeout=${SHSTK_RUN_TIMEOUT:-600}
if [ -n "$PROG" ]; then
	[ "$mode" = run ] || shstk_die "PROG= goes with run"
	out=$out/prog
elif [ "$mode" = smoke ]; then
	out=$out/smoke
	timeout=${SHSTK_RUN_TIMEOUT:-90}
fi

shstk_lock_out "$out"
# A step's results come from this run or from nowhere: a build that fails
# below must not leave the last run's verdict in place.
rm -f "$out/results.json" "$out/results.ktap" "$out/results.junit.xml"
if [ -n "$PROG" ]; then
	shstk_build_boot --prog "$PROG"
else
	shstk_build_boot "$mode"
fi

t0=$EPOCHREALTIME
shstk_msg "booting $ARCH under $EMU (timeout $timeout s); logs in $out"
shstk_run_child "$SHSTK_TOP/scripts/vm/boot.sh" "$ARCH" "$EMU" "$KBUILD_DIR/$KIMAGE" "$GUEST_IMAGE" "$out" "$timeout" "$append" || true

if [ -n "$PROG" ]; then
	shstk_msg "output of $(basename "$PROG"):"
	sed -n '/^SHSTK-LAB BEGIN user/,/^SHSTK-LAB END user/{/^SHSTK-LAB /d;p}' "$out/guest.out"
fi
rc=0
PYTHONPATH=$SHSTK_TOP shstk_py -m checks.report "$out" || rc=$?
shstk_msg "$mode $ARCH/$EMU: $(shstk_elapsed "$t0") s"
exit "$rc"
