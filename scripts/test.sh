#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make test: every check the project has, in the order a failure is cheapest
# to find, each logged under out/test/, then one summary:
#
#   the series (git am, checkpatch) -> unit tests (host, no VM) -> lint
#   -> per arch: kernel build -> per emulator: its build if it is the
#      project's own (x86: QEMU with CET in TCG) -> smoke boot -> the guest
#      suite -> gdb-check -> trace (every script, one boot) -> replay (QEMU:
#      record/replay, reverse execution) -> short fuzz; x86 runs all of them under
#      QEMU and again under Bochs, and then compares the two suites'
#      verdicts case by case
#
# Ends with "N passed, N failed, N skipped" (test points, summed).
# ARCH limits the VM steps to one architecture.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

arches=${1:-$(arch_names | paste -sd" ")}
# The arches in progress are left out, with the reason (config/arches.ini).
if [ -z "${1:-}" ]; then
	for a in $(arch_names --all); do
		[[ " $arches " == *" $a "* ]] || msg "$a: not in make test, $(arch_fact "$a" status)"
	done
fi
LOG=$SHSTK_OUT/test
steps=()
shstk_runs=()
cd "$SHSTK_TOP"
# A bad emulator setting (QEMU=) stops make test before anything runs:
# later, emulators_for would take a backend that fails to declare itself
# for an arch to mean that it does not emulate it.
(arch_vars x86_64 && emu_vars qemu) >/dev/null
mkdir -p "$LOG"
: >"$LOG/steps.tsv"

# run_step NAME KIND CMD...: KIND says how to count its result (see
# checks/summary.py); the command's output goes to out/test/NAME.log.
# Each step's wall time goes to out/test/steps.tsv, for the time budgets
# (config/test-budgets, checks/budgets.py).
run_step() {
	local name=$1 kind=$2 rc=0 t0=$EPOCHREALTIME took
	shift 2
	msg "== $name"
	"$@" >"$LOG/$name.log" 2>&1 || rc=$?
	steps+=("$name" "$kind" "$rc")
	took=$(elapsed "$t0")
	printf '%s\t%s\n' "$name" "$took" >>"$LOG/steps.tsv"
	msg "   $name: exit $rc in $took s (log: $LOG/$name.log)"
}

# The toolbox first: every later step runs its tools, and on a fresh cache a
# unit test would otherwise wait for it to be made.  Then the series: it
# fetches the kernel tree, which the lint (checkpatch.pl) and some harness
# tests use.
run_step toolbox build scripts/tools/toolbox.sh
run_step series ktap scripts/check-series.sh
run_step unit unittest py -m unittest discover -s tests -t . -v
run_step lint ktap scripts/lint.sh
# Every VM step runs under every emulator that emulates the arch (x86: the
# project's QEMU and Bochs, both with CET).

for a in $arches; do
	a=$(shstk_arch "$a")
	# The kernel build is its own step: a broken build is named as such.
	run_step "kernel-$a" build scripts/build/kernel.sh "$a"
	arch_vars "$a"
	for emu in $(emulators_for "$a"); do
		emu_vars "$emu"
		tag=$(basename "$EMU_OUT")
		# The project's own emulator build (x86: QEMU with CET), also a
		# step of its own.
		EMU_BUILD_CMD=()
		! declare -F emu_build_command >/dev/null || emu_build_command
		if [ "${#EMU_BUILD_CMD[@]}" -gt 0 ]; then
			run_step "emulator-$tag" build "${EMU_BUILD_CMD[@]}"
			# Its VM steps would each try the failed build again.
			[ "${steps[-1]}" -eq 0 ] || continue
		fi
		run_step "smoke-$tag" "results:$EMU_OUT/smoke" scripts/run.sh smoke "$a" "$emu"
		run_step "run-$tag" "results:$EMU_OUT" scripts/run.sh run "$a" "$emu"
		run_step "gdb-check-$tag" gdbsteps scripts/gdb-check.sh "$a" "$emu"
		# Every trace/ script in one boot, each log checked on its own.
		run_step "trace-$tag" gdbsteps scripts/trace.sh "$a" "$emu"
		# One round of the token race recorded, replayed twice (the same
		# stops) and, where the emulator can, run backwards under gdb; a
		# skip that says why where it cannot record.
		run_step "replay-$tag" gdbsteps scripts/replay.sh --check "$a" "$emu"
		# A short fuzz on the normal kernel (make fuzz is the long one, on
		# the debug kernel); its seed is in the log.  Not where the guest
		# has no shadow stack: it would fuzz the refusal path only.
		if [ -z "$EMU_NO_SHSTK_WHY" ]; then
			run_step "fuzz-$tag" "results:$EMU_OUT/fuzz" \
				env KCONFIG= CALLS=3000 ROUNDS=300 XSAVE_SECONDS=1 scripts/fuzz.sh "$a" "$emu"
			shstk_runs+=("$EMU_OUT/results.json")
		fi
	done
	# Two emulators with shadow stacks (x86: QEMU with CET in TCG, and
	# Bochs): the same cases must get the same verdicts on both.
	if [ "${#shstk_runs[@]}" -eq 2 ]; then
		run_step "compare-$a" ktap py -m checks.compare "${shstk_runs[@]}"
	fi
	shstk_runs=()
done

# The harness under faults (Ctrl-C, a hung guest, two arches at once): these
# boot VMs, so they come after the kernels are built.
run_step harness unittest py -m unittest tests.vm_harness -v

# JUnit XML for CI systems, beside the summary: out/test/results.junit.xml.
PYTHONPATH=$SHSTK_TOP py -m checks.junit make-test "$LOG" "$LOG/results.junit.xml" "${steps[@]}" ||
	warn "writing $LOG/results.junit.xml failed"
# The steps against their time budgets: information here (a busy machine is
# no regression), a check in make bench.
msg "time budgets (config/test-budgets):"
PYTHONPATH=$SHSTK_TOP py -m checks.budgets "$LOG/steps.tsv" >&2 || true
PYTHONPATH=$SHSTK_TOP py -m checks.summary "$LOG" "${steps[@]}"
