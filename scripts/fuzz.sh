#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make fuzz: the clone3() fuzzer and the long token race (guest/fuzz_clone3.c)
# on a kernel built with the kernel's own checkers (config/kernel/debug.config:
# KASAN, lockdep, DEBUG_VM, DEBUG_ATOMIC_SLEEP, DEBUG_LIST, kmemleak).
#
#   scripts/fuzz.sh ARCH [EMU]
#   SEED=  CALLS= (100000)  ROUNDS= (10000)  KCONFIG= (debug; "" for the normal kernel)
#
# The verdict: every invariant held, and no KASAN, lockdep, WARN, BUG or
# kmemleak report in the console log.  Results in out/<arch>[-emu]/fuzz/.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

export SHSTK_KCONFIG_VARIANT=${KCONFIG-debug}
arch_vars "${1:-}"
emu_vars "${2:-}"
seed=${SEED:-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')}
calls=${CALLS:-100000}
rounds=${ROUNDS:-10000}
out=$EMU_OUT/fuzz

"$SHSTK_TOP/scripts/build-kernel.sh" "$ARCH"
image=$(SHSTK_KCONFIG_VARIANT='' SHSTK_BASELINE='' "$SHSTK_TOP/scripts/build-guest.sh" "$ARCH" fuzz)
msg "fuzzing $ARCH/$EMU (kernel: ${SHSTK_KCONFIG_VARIANT:-default}) with seed 0x${seed#0x}: $calls calls, $rounds race rounds"
t0=$EPOCHREALTIME
run_child "$SHSTK_TOP/scripts/boot-vm.sh" "$ARCH" "$EMU" "$KBUILD_DIR/$KIMAGE" "$image" "$out" \
	"${SHSTK_FUZZ_TIMEOUT:-5400}" \
	"SHSTK_SEED=0x${seed#0x} SHSTK_FUZZ_CALLS=$calls SHSTK_FUZZ_ROUNDS=$rounds" || true
rc=0
PYTHONPATH=$SHSTK_TOP python3 -m checks.report "$out" || rc=$?
# A kernel with kmemleak must show that the end-of-run scan happened: a clean
# console alone could also mean the scan never ran.
if grep -q '^CONFIG_DEBUG_KMEMLEAK=y' "$KBUILD_DIR/.config"; then
	if line=$(grep -a -m1 'shstk-lab: kmemleak scan:' "$out/console.log"); then
		msg "${line#shstk-lab: }"
	else
		msg "FAIL: the kernel has kmemleak, but the guest never reported its scan"
		rc=1
	fi
fi
msg "fuzz $ARCH/$EMU: seed 0x${seed#0x}, $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }') s"
exit "$rc"
