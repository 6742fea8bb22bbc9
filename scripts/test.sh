#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make test: every check the project has, in the order a failure is cheapest
# to find, each logged under out/test/, then one summary:
#
#   the series (git am, checkpatch) -> unit tests (host, no VM) -> lint
#   -> per arch: kernel build -> per emulator: its build if it is the
#      project's own (x86: QEMU with CET in TCG) and QEMU's system tests
#      of it (x86: XSAVES, CET, IBT) -> smoke boot -> the guest
#      suite -> gdb-check -> trace (every script, one boot) -> replay (QEMU:
#      record/replay, reverse execution) -> short fuzz; x86 runs all of them under
#      QEMU and again under Bochs, and then compares the two suites'
#      verdicts case by case
#
# Two lanes: an emulator that runs on one host thread (Bochs) gets its steps
# run beside the others' (a second make test process, "--steps ARCH EMU")
# when the machine has a CPU for it; SHSTK_TEST_LANES=1 runs everything in
# one.  A step that needs the CPUs to itself (the recorded token race, the
# fuzz, one VM per CPU) holds the other lane back while it runs.
#
# Ends with "N passed, N failed, N skipped" (test points, summed).
# ARCH limits the VM steps to one architecture.
#
#   scripts/test.sh [ARCH]
#   scripts/test.sh --steps ARCH EMU   (one emulator's VM steps: the side lane)
set -euo pipefail
# shellcheck source=lib/entry.sh
. "$(dirname "$0")/lib/entry.sh"
shstk_host_check
# Its counts are the whole suite's: a selection would change them.
[ -z "${SHSTK_TESTS:-}" ] ||
	shstk_die "make test runs the whole suite: TESTS= (SHSTK_TESTS=$SHSTK_TESTS) goes with make run and make fuzz"

LOG=$SHSTK_OUT/test$SHSTK_TREE_SUFFIX
cd "$SHSTK_TOP"

# run_step [--alone] NAME KIND CMD...: KIND says how to count its result
# (see checks/summary.py); the command's output goes to out/test/NAME.log.
# Each step's wall time goes to out/test/steps.tsv, for the time budgets
# (config/test-budgets, checks/budgets.py), and its verdict to
# out/test/verdicts.tsv, which both lanes write and the summary reads.
# --alone: no step of the other lane runs meanwhile (a turnstile held while
# it waits for the room, so the other lane cannot slip back in, and the room
# itself, which ordinary steps share).
run_step() {
	local alone='' name kind rc=0 t0 took turnstile room
	[ "$1" != --alone ] || { alone=1; shift; }
	name=$1 kind=$2
	shift 2
	exec {turnstile}>>"$LOG/.turnstile" {room}>>"$LOG/.room"
	flock -x "$turnstile"
	if [ -n "$alone" ]; then
		flock -x "$room"
	else
		flock -u "$turnstile"
		flock -s "$room"
	fi
	t0=$EPOCHREALTIME
	shstk_msg "== $name"
	# A child, so that a TERM or INT stops it; the locks stay this
	# shell's (a child that outlived its step would hold them).
	shstk_start_child "$@" >"$LOG/$name.log" 2>&1 {turnstile}>&- {room}>&-
	shstk_wait_child "$CHILD_PID" || rc=$?
	took=$(shstk_elapsed "$t0")
	exec {turnstile}>&- {room}>&-
	LAST_RC=$rc
	printf '%s\t%s\n' "$name" "$took" >>"$LOG/steps.tsv"
	printf '%s\t%s\t%s\n' "$name" "$kind" "$rc" >>"$LOG/verdicts.tsv"
	shstk_msg "   $name: exit $rc in $took s (log: $LOG/$name.log)"
}

# emu_steps ARCH EMU: every VM step of one emulator on one arch (the arch's
# kernel built).  Its suite's results.json is named in
# out/test/shstk-runs.ARCH when the guest has shadow stacks there.
emu_steps() {
	local a=$1 tag build tcg_tests
	shstk_arch_vars "$a"
	shstk_emu_vars "$2"
	tag=$(basename "$EMU_OUT")
	# The project's own emulator build (QEMU with CET and Zicfiss fixes,
	# Bochs's two builds: for gdb and for runs), also a step of its own.
	shstk_emulator_build_command build all
	if [ "${#build[@]}" -gt 0 ]; then
		run_step "emulator-$tag" build "${build[@]}"
		# Its VM steps would each try the failed build again.
		[ "$LAST_RC" -eq 0 ] || return 0
		# QEMU's own system tests of the project's TCG work, on that build.
		shstk_arch_fact_to tcg_tests "$a" qemu_tcg_tests
		if [ "$2" = qemu ] && [ -n "$tcg_tests" ]; then
			run_step "tcg-tests-$a" gdbsteps scripts/tcg-tests.sh "$a"
		fi
	fi
	run_step "smoke-$tag" "results:$EMU_OUT/smoke" scripts/run.sh smoke "$a" "$2"
	run_step "run-$tag" "results:$EMU_OUT" scripts/run.sh run "$a" "$2"
	run_step "gdb-check-$tag" gdbsteps scripts/gdb-check.sh "$a" "$2"
	# Every trace/ script in one boot, each log checked on its own.
	run_step "trace-$tag" gdbsteps scripts/trace.sh "$a" "$2"
	# One round of the token race recorded, replayed twice (the same
	# stops) and, where the emulator can, run backwards under gdb; a skip
	# that says why where it cannot record.
	run_step --alone "replay-$tag" gdbsteps scripts/replay.sh --check "$a" "$2"
	# A short fuzz on the normal kernel (make fuzz is the long one, on the
	# debug kernel); its seed is in the log.  Not where the guest has no
	# shadow stack: it would fuzz the refusal path only.
	if [ -z "$EMU_NO_SHSTK_WHY" ]; then
		run_step --alone "fuzz-$tag" "results:$EMU_OUT/fuzz" \
			env KCONFIG= CALLS=3000 ROUNDS=300 XSAVE_SECONDS=1 scripts/fuzz.sh "$a" "$2"
		echo "$EMU_OUT/results.json" >>"$LOG/shstk-runs.$a"
	fi
}

if [ "${1:-}" = --steps ]; then
	[ "$#" -eq 3 ] || shstk_die "usage: scripts/test.sh --steps ARCH EMU"
	mkdir -p "$LOG"
	emu_steps "$2" "$3"
	exit 0
fi

arches=${1:-$(shstk_arch_names | paste -sd" ")}
# The arches in progress are left out, with the reason (config/arches.ini).
if [ -z "${1:-}" ]; then
	for a in $(shstk_arch_names --all); do
		[[ " $arches " == *" $a "* ]] || shstk_msg "$a: not in make test, $(shstk_arch_fact "$a" status)"
	done
fi
# A bad emulator setting (QEMU=) stops make test before anything runs:
# later, shstk_emulators_for would take a backend that fails to declare itself
# for an arch to mean that it does not emulate it.
(shstk_arch_vars x86_64 && shstk_emu_vars qemu) >/dev/null
# An unknown ARCH, too.
arch_list=()
for a in $arches; do
	shstk_arch_resolve a "$a"
	# A developer's tree (KSRC) that cannot serve an arch the user did not
	# name: left out with the reason.
	if [ -z "${1:-}" ] && ! why=$(shstk_tree_serves "$a"); then
		shstk_msg "$a: not in make test, $why"
		continue
	fi
	arch_list+=("$a")
done
[ "${#arch_list[@]}" -gt 0 ] || shstk_die "no architecture to test: KSRC=$SHSTK_KSRC serves none of $arches (reasons above)"
# One make test at a time in this checkout: its logs and tables are
# rewritten below (its own side lane, started later, takes no lock).
shstk_lock_out "$LOG"
mkdir -p "$LOG"
# The builds found current once (scripts/lib/build.sh, shstk_build_checked): the
# later steps' runs, the side lane's too, take them as they are.
export SHSTK_CHECKED_BUILDS=$LOG/checked-builds
: >"$SHSTK_CHECKED_BUILDS"
: >"$LOG/steps.tsv"
: >"$LOG/verdicts.tsv"
rm -f "$LOG"/shstk-runs.*
t_start=$EPOCHREALTIME

# The toolbox first: every later step runs its tools, and on a fresh cache a
# unit test would otherwise wait for it to be made.  The kernel's source,
# which needs none of them, is fetched meanwhile (on a fresh cache: the
# network and one CPU for a minute); the series step checks it.  The series
# before the lint (checkpatch.pl) and the harness tests, which use its tree.
shstk_start_child scripts/build/kernel-source.sh >"$LOG/kernel-source.log" 2>&1
source_pid=$CHILD_PID
run_step toolbox build scripts/tools/toolbox.sh all
# The bpftrace root filesystems and their disk images, all at once, beside
# the steps until a trace step asks for one (it waits for the build under
# way, or finds it made), so that on a fresh cache no trace step waits for
# the network and the disk; at nice 19 they take little from the
# compilers (docs/pipeline.md).  On a warm cache each finds its image
# current at once.
rootfs_pids=()
for a in "${arch_list[@]}"; do
	shstk_start_child nice -n 19 scripts/build/rootfs.sh "$a" --disk >"$LOG/rootfs-$a.log" 2>&1
	rootfs_pids+=("$CHILD_PID")
done
run_step series ktap scripts/check-series.sh
shstk_wait_child "$source_pid" ||
	shstk_warn "fetching the kernel source beside the toolbox failed ($LOG/kernel-source.log); the series step tried again"
run_step unit unittest "$SHSTK_PYTHON" -m unittest discover -s tests -t . -v
run_step lint ktap scripts/lint.sh

# side_lane EMU: whether EMU's steps may run beside the main lane's: it
# runs on one host thread and the machine has a CPU besides the one the
# main lane's emulator keeps busy most.
side_lane() {
	[ "${SHSTK_TEST_LANES:-2}" != 1 ] && [ "$(nproc)" -ge 2 ] &&
		(shstk_emu_vars "$1" && [ "$EMU_HOST_THREADS" -eq 1 ]) >/dev/null 2>&1
}

# Every VM step runs under every emulator that emulates the arch (x86: the
# project's QEMU and Bochs, both with CET); a side-lane emulator's first,
# so that they overlap the most.
side_pid=
for a in "${arch_list[@]}"; do
	# The kernel build is its own step: a broken build is named as such.
	run_step "kernel-$a" build scripts/build/kernel.sh "$a" --boot-image
	shstk_arch_vars "$a"
	main=()
	for emu in $(shstk_emulators_for "$a"); do
		if side_lane "$emu"; then
			# One side lane at a time.
			[ -z "$side_pid" ] || shstk_wait_child "$side_pid" || true
			shstk_start_child scripts/test.sh --steps "$a" "$emu"
			side_pid=$CHILD_PID
		else
			main+=("$emu")
		fi
	done
	for emu in "${main[@]}"; do
		emu_steps "$a" "$emu"
	done
done
[ -z "$side_pid" ] || shstk_wait_child "$side_pid" || shstk_warn "the side lane (scripts/test.sh --steps) failed"
# By now every trace step has had its root filesystem, from this build or
# its own; a failure here was the trace steps' too.
for i in "${!arch_list[@]}"; do
	shstk_wait_child "${rootfs_pids[i]}" ||
		shstk_warn "making the ${arch_list[i]} root filesystem beside the steps failed ($LOG/rootfs-${arch_list[i]}.log)"
done

# Two emulators with shadow stacks (x86: QEMU with CET in TCG, and Bochs):
# the same cases must get the same verdicts on both.
for a in "${arch_list[@]}"; do
	[ -f "$LOG/shstk-runs.$a" ] || continue
	mapfile -t runs <"$LOG/shstk-runs.$a"
	[ "${#runs[@]}" -ne 2 ] || run_step "compare-$a" ktap "$SHSTK_PYTHON" -m checks.compare "${runs[@]}"
done

# The harness under faults (Ctrl-C, a hung guest, two arches at once): these
# boot VMs, so they come after the kernels are built, and alone.
run_step harness unittest "$SHSTK_PYTHON" -m unittest tests.vm_harness -v
printf 'total\t%s\n' "$(shstk_elapsed "$t_start")" >>"$LOG/steps.tsv"

# Every step's verdict, in the order the steps ended.
steps=()
while IFS=$'\t' read -r name kind rc; do
	steps+=("$name" "$kind" "$rc")
done <"$LOG/verdicts.tsv"
# JUnit XML for CI systems, beside the summary: out/test/results.junit.xml.
PYTHONPATH=$SHSTK_TOP shstk_py -m checks.junit make-test "$LOG" "$LOG/results.junit.xml" "${steps[@]}" ||
	shstk_warn "writing $LOG/results.junit.xml failed"
# The steps against their time budgets: information here (a busy machine is
# no regression), a check in make bench.
shstk_msg "time budgets (config/test-budgets):"
PYTHONPATH=$SHSTK_TOP shstk_py -m checks.budgets "$LOG/steps.tsv" >&2 || true
# The verdict is the exit status: a failed step is no error of the script.
PYTHONPATH=$SHSTK_TOP shstk_py -m checks.summary "$LOG" "${steps[@]}" || exit
