#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make fuzz: the clone3() fuzzer and the long token race (guest/fuzz_clone3.c)
# on a kernel built with the kernel's own checkers (config/kernel/debug.config:
# KASAN, lockdep, DEBUG_VM, DEBUG_ATOMIC_SLEEP, DEBUG_LIST, kmemleak).
#
#   scripts/fuzz.sh ARCH [EMU]
#   SEED=  CALLS= (100000)  ROUNDS= (10000)  KCONFIG= (debug; "" for the normal kernel)
#   XSAVE_SECONDS= (60) how long x86's XSAVE state stress (guest/xsave_integrity.c)
#         runs in each VM, after the fuzzer
#   JOBS= VMs to split the calls and rounds over (default: as many as keep
#         the host's CPUs busy: 1 under QEMU, one per host CPU under Bochs)
#   SHSTK_TESTS= (make's TESTS=) only these programs of the fuzz suite
#         (fuzz_clone3, and xsave_integrity on x86; spec/selection.py)
#
# The verdict: every invariant held, and no KASAN, lockdep, WARN, BUG or
# kmemleak report in the console log.  Results in out/<arch>[-emu]/fuzz/:
# vmN/ per VM, results.json for the run.
set -euo pipefail
# shellcheck source=lib/entry.sh
. "$(dirname "$0")/lib/entry.sh"

shstk_host_check
export SHSTK_KCONFIG_VARIANT=${KCONFIG-debug}
shstk_arch_vars "${1:-}"
shstk_emu_vars "${2:-}"
seed=${SEED:-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')}
seed=${seed#0x}
calls=${CALLS:-100000}
rounds=${ROUNDS:-10000}
xsave_seconds=${XSAVE_SECONDS:-60}
# By default, as many VMs as keep the host's CPUs busy: one under QEMU,
# whose two vCPUs use two host threads; one per CPU under Bochs, which
# emulates on one (the backend's EMU_HOST_THREADS).
if [ -z "${JOBS:-}" ]; then
	JOBS=$(($(nproc) / EMU_HOST_THREADS))
	[ "$JOBS" -ge 1 ] || JOBS=1
fi
for v in CALLS:"$calls" ROUNDS:"$rounds" JOBS:"$JOBS" XSAVE_SECONDS:"$xsave_seconds"; do
	[[ ${v#*:} =~ ^[0-9]+$ ]] || shstk_die "${v%%:*}=${v#*:} is not a number"
done
[[ $seed =~ ^[0-9a-fA-F]{1,16}$ ]] || shstk_die "SEED=$seed is not a 64-bit hex number"
[ "$JOBS" -ge 1 ] || shstk_die "JOBS=$JOBS: at least one VM"
shstk_tests_select fuzz
out=$EMU_OUT/fuzz

shstk_lock_out "$out"
# A step's results come from this run or from nowhere, even if a build
# below fails.
rm -rf "$out"
[ -z "$TESTS_NONE" ] || shstk_skip_step fuzz "$TESTS_NONE"
shstk_build_boot fuzz
# The counts are what each program would do: TESTS= may leave one out.
chosen=${SHSTK_TESTS:+ (only TESTS=$SHSTK_TESTS)}
shstk_msg "fuzzing $ARCH/$EMU (kernel: ${SHSTK_KCONFIG_VARIANT:-default}) with seed 0x$seed: $calls calls, $rounds race rounds, $JOBS VM(s)$chosen"
mkdir -p "$out"

# VM i runs its share with seed + i: each VM's own seed, printed here and in
# its log, reproduces it alone (SEED= that seed, JOBS=1, CALLS= its share).
vm_seed() { printf '%x' $((0x$seed + $1)); }
vm_dirs=()
t0=$EPOCHREALTIME
for ((i = 0; i < JOBS; i++)); do
	n=$((calls / JOBS + (i < calls % JOBS))) r=$((rounds / JOBS + (i < rounds % JOBS)))
	vm_dirs+=("$out/vm$i")
	[ "$JOBS" -eq 1 ] || shstk_msg "vm$i: seed 0x$(vm_seed "$i"), $n calls, $r race rounds; logs in $out/vm$i"
	vm=("$ARCH" "$EMU" "$KBUILD_DIR/$KIMAGE" "$GUEST_IMAGE" "$out/vm$i"
		"${SHSTK_FUZZ_TIMEOUT:-5400}"
		"SHSTK_SEED=0x$(vm_seed "$i") SHSTK_FUZZ_CALLS=$n SHSTK_FUZZ_ROUNDS=$r SHSTK_XSAVE_SECONDS=$xsave_seconds${TESTS_APPEND:+ $TESTS_APPEND}")
	# With several VMs each one's messages carry its name, through a sed
	# that neither a Ctrl-C nor a TERM takes from the VM's last words (it
	# ends when they do).
	if [ "$JOBS" -eq 1 ]; then
		shstk_start_boot "${vm[@]}"
	else
		shstk_start_boot "${vm[@]}" > >(trap '' TERM INT; exec sed -u "s/^/[vm$i] /") 2>&1
	fi
done
shstk_wait_children || true

rc=0
# A kernel with kmemleak must show that the end-of-run scan happened: a
# clean console alone could also mean the scan never ran.
kmemleak=no
! grep -q '^CONFIG_DEBUG_KMEMLEAK=y' "$KBUILD_DIR/.config" || kmemleak=yes
for dir in "${vm_dirs[@]}"; do
	name=$(basename "$dir")
	PYTHONPATH=$SHSTK_TOP shstk_py -m checks.report "$dir" || rc=$?
	[ "$kmemleak" = yes ] || continue
	if line=$(grep -a -m1 'shstk-lab: kmemleak scan:' "$dir/console.log"); then
		shstk_msg "$name: ${line#shstk-lab: }"
	else
		shstk_msg "FAIL: $name: the kernel has kmemleak, but the guest never reported its scan"
		rc=1
	fi
done
# One results.json for the whole run (what make test counts).
PYTHONPATH=$SHSTK_TOP shstk_py -m checks.report --merge "$out" "${vm_dirs[@]}" || rc=1
shstk_msg "fuzz $ARCH/$EMU: seed 0x$seed, $calls calls, $rounds race rounds on $JOBS VM(s)$chosen, $(shstk_elapsed "$t0") s"
exit "$rc"
