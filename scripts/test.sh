#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make test: every check the project has, in the order a failure is cheapest
# to find, each logged under out/test/, then one summary:
#
#   the series (git am, checkpatch) -> unit tests (host, no VM) -> lint
#   -> per arch: kernel build -> smoke boot -> the guest suite -> gdb-check
#      -> trace -> short fuzz (and on x86 all of them again under Bochs,
#      with CET)
#
# Ends with "total: N passed, N failed, N skipped" (test points, summed).
# ARCH limits the VM steps to one architecture.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

arches=${1:-x86_64 arm64}
LOG=$SHSTK_OUT/test
mkdir -p "$LOG"
steps=()
cd "$SHSTK_TOP"

# run_step NAME KIND CMD...: KIND says how to count its result (see
# checks/summary.py); the command's output goes to out/test/NAME.log.
run_step() {
	local name=$1 kind=$2 rc=0 t0=$EPOCHREALTIME
	shift 2
	msg "== $name"
	"$@" >"$LOG/$name.log" 2>&1 || rc=$?
	steps+=("$name" "$kind" "$rc")
	msg "   $name: exit $rc in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }') s (log: $LOG/$name.log)"
}

# The series first: it fetches the kernel tree, which the lint (checkpatch.pl)
# and some harness tests use.
run_step series ktap scripts/check-series.sh
run_step unit unittest python3 -m unittest discover -s tests -t . -v
run_step lint ktap scripts/lint.sh
for a in $arches; do
	a=$(shstk_arch "$a")
	# The kernel build is its own step: a broken build is named as such.
	run_step "kernel-$a" build scripts/build-kernel.sh "$a"
	run_step "smoke-$a" "results:$SHSTK_OUT/$a/smoke" scripts/run.sh smoke "$a"
	run_step "run-$a" "results:$SHSTK_OUT/$a" scripts/run.sh run "$a"
	run_step "gdb-check-$a" gdbsteps scripts/gdb-check.sh "$a"
	run_step "trace-$a" gdbsteps scripts/trace.sh "$a"
	run_step "trace-vmas-$a" gdbsteps scripts/trace.sh "$a" qemu shstk-vmas
	# A short fuzz on the normal kernel (make fuzz is the long one, on the
	# debug kernel); its seed is in the log.
	[ "$a" = x86_64 ] || run_step "fuzz-$a" "results:$SHSTK_OUT/$a/fuzz" \
		env KCONFIG= CALLS=3000 ROUNDS=300 scripts/fuzz.sh "$a"
	if [ "$a" = x86_64 ]; then
		# x86 shadow stacks for real: Bochs emulates CET, QEMU does not.
		run_step "smoke-$a-bochs" "results:$SHSTK_OUT/$a-bochs/smoke" scripts/run.sh smoke "$a" bochs
		run_step "run-$a-bochs" "results:$SHSTK_OUT/$a-bochs" scripts/run.sh run "$a" bochs
		run_step "gdb-check-$a-bochs" gdbsteps scripts/gdb-check.sh "$a" bochs
		run_step "trace-$a-bochs" gdbsteps scripts/trace.sh "$a" bochs
		run_step "trace-vmas-$a-bochs" gdbsteps scripts/trace.sh "$a" bochs shstk-vmas
		run_step "fuzz-$a-bochs" "results:$SHSTK_OUT/$a-bochs/fuzz" \
			env KCONFIG= CALLS=3000 ROUNDS=300 scripts/fuzz.sh "$a" bochs
	fi
done

# The harness under faults (Ctrl-C, a hung guest, two arches at once): these
# boot VMs, so they come after the kernels are built.
run_step harness unittest python3 -m unittest tests.vm_harness -v

PYTHONPATH=$SHSTK_TOP python3 -m checks.summary "$LOG" "${steps[@]}"
