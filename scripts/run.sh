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
#   SHSTK_TESTS=...  (make's TESTS=) run only these programs and cases of
#                    the suite (spec/selection.py); the report names what
#                    was left out
#
# Each guest program's verdict is printed as it ends (checks/live.py); the
# report after the run is the judge.
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
if [ -n "${SHSTK_TESTS:-}" ]; then
	[ "$mode" = run ] || shstk_die "TESTS= chooses from the run suite: make smoke runs its one program"
	[ -z "$PROG" ] || shstk_die "TESTS= chooses from the suite, PROG= runs your program instead: give one"
fi
[ -z "$PROG" ] || shstk_prog_check "$PROG"
[ -n "$PROG" ] || [ "$mode" != run ] || shstk_tests_select run
# A later setting on the kernel command line wins over the emulator's.
append=
if [ -n "${XSAVE_SECONDS:-}" ]; then
	[[ $XSAVE_SECONDS =~ ^[0-9]+$ ]] || shstk_die "XSAVE_SECONDS=$XSAVE_SECONDS is not a number of seconds"
	append="SHSTK_XSAVE_SECONDS=$XSAVE_SECONDS"
fi
append+=${TESTS_APPEND:+${append:+ }$TESTS_APPEND}
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
[ -z "${TESTS_NONE:-}" ] || shstk_skip_step run "$TESTS_NONE"
if [ -n "$PROG" ]; then
	shstk_build_boot --prog "$PROG"
else
	shstk_build_boot "$mode"
fi

t0=$EPOCHREALTIME
shstk_msg "booting $ARCH under $EMU (timeout $timeout s); logs in $out"
shstk_start_boot "$ARCH" "$EMU" "$KBUILD_DIR/$KIMAGE" "$GUEST_IMAGE" "$out" "$timeout" "$append"
shstk_wait_boot || true

if [ -n "$PROG" ]; then
	shstk_msg "output of $(basename "$PROG"):"
	sed -n '/^SHSTK-LAB BEGIN user/,/^SHSTK-LAB END user/{/^SHSTK-LAB /d;p}' "$out/guest.out"
fi
rc=0
PYTHONPATH=$SHSTK_TOP shstk_py -m checks.report "$out" || rc=$?
shstk_msg "$mode $ARCH/$EMU: $(shstk_elapsed "$t0") s"
exit "$rc"
