#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: one table of figures measured on this machine, medians of
# several runs, written to out/bench.md with the date (and to the tracked
# docs/bench.md with BENCH_DOCS=1).  Run it on an idle machine: every
# figure is wall time.
#
#   kernel build: cold (once, in a scratch directory) and after a one-line
#     change in kernel/fork.c;
#   boot to the first test output, per arch and emulator (make smoke), x86
#     under the project's QEMU (CET) and Debian's (QEMU=stock, no CET):
#     restored from the post-boot snapshot (the default) and booted cold
#     (SHSTK_SNAPSHOT=0);
#   make run (the same programs on every emulator), make gdb-check and
#     make trace wall times; x86's ratios: boot with CET against stock QEMU,
#     make run under Bochs booting cold against QEMU with CET (#15's);
#   the same x86_64 kernel and the same static program (guest/smoke.c)
#     booted by shstk-lab and by virtme-ng (--disable-kvm), as a ratio;
#   make test, warm, each step against its budget (config/test-budgets).
#
#   RUNS=N (default 3) runs of each figure; boots get RUNS+2 on QEMU.
set -euo pipefail
# shellcheck source=lib/entry.sh
. "$(dirname "$0")/lib/entry.sh"
shstk_host_check
shstk_toolbox_need bench

runs=${RUNS:-3}
table=$SHSTK_OUT/bench.md
log=$SHSTK_OUT/bench.log
mkdir -p "$SHSTK_OUT"
: >"$log"

# The median of the figures on stdin, or "failed" if a run said so (or gave
# no figure: "None" from a vm.json without one).
median() {
	local v
	v=$(cat)
	case "$v" in "") echo n/a && return ;; *failed* | *None*) echo failed && return ;; esac
	sort -n <<<"$v" | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "n/a" }'
}

# $1 / $2 to two places, or "n/a" when either is not a figure.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2fx\n", a / b; else print "n/a" }'
}

# Wall time in seconds of a command run $1 times: the median, or "failed"
# (its output is in bench.log) if any run fails.  To two places, because
# a restored boot takes under a second and a ratio of it needs them.
timed() {
	local n=$1 i t0
	shift
	shstk_msg "timing $n x: ${*#"$SHSTK_TOP/"}"
	for ((i = 0; i < n; i++)); do
		t0=$EPOCHREALTIME
		"$@" >>"$log" 2>&1 || { echo failed; return 0; }
		shstk_elapsed "$t0" 2
	done | median
}

# Seconds from emulator start to the guest's first test output (vm.json
# "first_output") of a smoke boot, median of $3 boots.
first_output() {
	local arch=$1 emu=$2 n=$3 i dir
	dir=$(shstk_arch_vars "$arch" && shstk_emu_vars "$emu" && echo "$EMU_OUT")
	shstk_msg "timing $n smoke boots of $arch/$emu"
	for ((i = 0; i < n; i++)); do
		"$SHSTK_TOP/scripts/run.sh" smoke "$arch" "$emu" >>"$log" 2>&1 || { echo failed; return 0; }
		shstk_py -c 'import json, sys; print(json.load(open(sys.argv[1]))["first_output"])' "$dir/smoke/vm.json"
	done | median
}

# A one-line change to kernel/fork.c, then CMD ARGS... timed to its exit,
# median of $runs; the change taken back and the kernel built again after
# each.  A developer's tree is never written to.
#   after_fork_edit ARCH WHAT CMD ARGS...
after_fork_edit() {
	local arch=$1 what=$2 fork=$SHSTK_PATCHED_SRC/kernel/fork.c i t0
	shift 2
	[ -z "$SHSTK_KSRC" ] || { echo "skipped (KSRC: bench does not edit your tree)"; return; }
	"$SHSTK_TOP/scripts/build/kernel.sh" "$arch" >>"$log" 2>&1 || shstk_die "the $arch kernel does not build; see $log"
	shstk_msg "timing $runs one-line changes of the $arch kernel: $what"
	# A Ctrl-C or TERM in the middle must not leave the cache's tree edited.
	# shellcheck disable=SC2064  # the path now
	trap "git -C '$SHSTK_PATCHED_SRC' checkout -q -- kernel/fork.c" EXIT
	for ((i = 0; i < runs; i++)); do
		echo "/* shstk-lab bench $i */" >>"$fork"
		t0=$EPOCHREALTIME
		"$@" >>"$log" 2>&1 || echo failed
		shstk_elapsed "$t0"
		git -C "$SHSTK_PATCHED_SRC" checkout -q -- kernel/fork.c
	done | median
	trap - EXIT
	"$SHSTK_TOP/scripts/build/kernel.sh" "$arch" >>"$log" 2>&1
}

# The rebuild alone.
incremental() {
	after_fork_edit "$1" "the rebuild" "$SHSTK_TOP/scripts/build/kernel.sh" "$1"
}

# The developer's loop: make run with TESTS=shstk_clone3, timed to its exit
# (the rebuild, the first boot of the new kernel and the verdicts).
inner_loop() {
	after_fork_edit "$1" "to the shstk_clone3 verdicts" \
		env SHSTK_TESTS=shstk_clone3 "$SHSTK_TOP/scripts/run.sh" run "$1"
}

# A cold build of the same configuration in a scratch directory, removed
# after: once, it takes minutes.  BENCH_COLD=0 skips it.
cold() {
	local dir=$SHSTK_CACHE/build/bench-cold-$1 t0 t
	[ "${BENCH_COLD:-1}" = 1 ] || { echo "skipped (BENCH_COLD=0)"; return; }
	rm -rf "$dir"
	shstk_msg "timing a cold build of the $1 kernel (several minutes)"
	t0=$EPOCHREALTIME
	if SHSTK_BUILD_DIR=$dir "$SHSTK_TOP/scripts/build/kernel.sh" "$1" >>"$log" 2>&1; then
		t=$(shstk_elapsed "$t0")
	else
		t=failed
	fi
	rm -rf "$dir"
	echo "$t"
}

# The same kernel build and the same static smoke program: shstk-lab's boot
# (vm/boot.sh: QEMU entering vmlinux through PVH, an initramfs with busybox
# and the program) against virtme-ng's (vng --run with the bzImage: QEMU
# TCG, the toolbox's own root over 9p/virtiofs).
# Both timed from command start to exit.  x86_64 only: virtme-ng boots the
# root filesystem it runs in, and the toolbox is amd64.
vng_ratio() {
	local kernel prog image ours restored theirs i t0 out
	# What boot.sh is given, built as every entry point builds it
	# (vng_ratio runs in a subshell of its own: these settings end with it).
	shstk_arch_vars x86_64
	shstk_emu_vars qemu
	shstk_build_boot smoke 2>>"$log"
	# vng boots the bzImage, which a QEMU run's build does not make.
	"$SHSTK_TOP/scripts/build/kernel.sh" x86_64 --boot-image >>"$log" 2>&1 ||
		shstk_die "the x86_64 boot image does not build; see $log"
	kernel=$KBUILD_DIR/$KIMAGE prog=$GUEST_DIR/bin/smoke image=$GUEST_IMAGE
	out=$SHSTK_OUT/x86_64/bench-smoke
	# A boot against a boot: not restored from a snapshot.  Then what a
	# run here takes, restored (the first may make the snapshot: the
	# median is of restores).
	ours=$(SHSTK_SNAPSHOT=0 timed "$((runs + 2))" "$SHSTK_TOP/scripts/vm/boot.sh" x86_64 qemu "$kernel" "$image" "$out" 120)
	restored=$(timed "$((runs + 2))" "$SHSTK_TOP/scripts/vm/boot.sh" x86_64 qemu "$kernel" "$image" "$out" 120)
	shstk_msg "timing $((runs + 2)) x: vng --run (same kernel, same program)"
	theirs=$(for ((i = 0; i < runs + 2; i++)); do
		t0=$EPOCHREALTIME
		# The program's own KTAP verdict proves the boot ran it.
		shstk_tb timeout -k 5 300 vng --run "$kernel" --disable-kvm --cpus 2 --memory 1G -- "$prog" \
			</dev/null >"$SHSTK_OUT/vng.out" 2>&1 || true
		cat "$SHSTK_OUT/vng.out" >>"$log"
		grep -q '^# totals: pass:[1-9][0-9]* fail:0' "$SHSTK_OUT/vng.out" || { echo failed; break; }
		shstk_elapsed "$t0" 2
	done | median)
	case "$ours $restored $theirs" in
	*failed*) echo "shstk-lab $ours s (restored $restored s), virtme-ng $theirs s (see $log) | - | - | - | - |" ;;
	*) awk -v a="$ours" -v r="$restored" -v b="$theirs" 'BEGIN { printf "shstk-lab %.2f s booting, %.2f s restored; virtme-ng %.2f s: virtme-ng takes %.2fx, %.2fx restored | - | - | - | - |\n", a, r, b, b / a, b / r }' ;;
	esac
}

# make test once more, warm (the figures above built everything), each step
# against its budget in config/test-budgets (checks/budgets.py): over budget
# is a failure of make bench.  BENCH_TEST=0 skips it.
over=$SHSTK_OUT/bench.over-budget
rm -f "$over"
test_budgets() {
	local t0 rc=0
	[ "${BENCH_TEST:-1}" = 1 ] || { echo "Not run (BENCH_TEST=0)."; return 0; }
	shstk_msg "running make test, warm, against its time budgets (about 12 minutes)"
	t0=$EPOCHREALTIME
	"$SHSTK_TOP/scripts/test.sh" >>"$log" 2>&1 || rc=$?
	echo "Warm \`make test\`: $(shstk_elapsed "$t0") s, exit $rc; each step against config/test-budgets:"
	echo
	PYTHONPATH=$SHSTK_TOP shstk_py -m checks.budgets --markdown "$SHSTK_OUT/test$SHSTK_TREE_SUFFIX/steps.tsv" || touch "$over"
	[ "$rc" -eq 0 ] || touch "$over"
}

S=$SHSTK_TOP/scripts
{
	echo "# make bench, $(date -u +%F) ($(nproc) CPUs, $(free -g | awk '/^Mem/ { print $2 }') GiB, $(shstk_tb --versions 2>/dev/null | awk '/qemu-system-x86_64/ { print "QEMU " $5 }'))"
	echo
	echo "| figure | x86_64, QEMU with CET (patched) | x86_64, QEMU=stock (no CET) | x86_64, Bochs | arm64, QEMU | riscv64, QEMU (patched) |"
	echo "|---|---|---|---|---|---|"
	echo "| kernel build, cold, -j$(nproc) (s, one run) | $(cold x86_64) | (same kernel) | (same kernel) | $(cold arm64) | $(cold riscv64) |"
	echo "| kernel rebuild, one-line kernel/fork.c change (s) | $(incremental x86_64) | (same kernel) | (same kernel) | $(incremental arm64) | $(incremental riscv64) |"
	echo "| the same change to the shstk_clone3 verdicts: make run TESTS=shstk_clone3 (s) | $(inner_loop x86_64) | - | - | $(inner_loop arm64) | $(inner_loop riscv64) |"
	boot_cet=$(first_output x86_64 qemu $((runs + 2)))
	boot_stock=$(SHSTK_QEMU=stock first_output x86_64 qemu $((runs + 2)))
	echo "| boot to first test output, smoke (s) | $boot_cet | $boot_stock | $(first_output x86_64 bochs "$runs") | $(first_output arm64 qemu $((runs + 2))) | $(first_output riscv64 qemu $((runs + 2))) |"
	export SHSTK_SNAPSHOT=0
	echo "| the same, booted cold, SHSTK_SNAPSHOT=0 (s) | $(first_output x86_64 qemu $((runs + 2))) | $(SHSTK_QEMU=stock first_output x86_64 qemu $((runs + 2))) | $(first_output x86_64 bochs "$runs") | $(first_output arm64 qemu $((runs + 2))) | $(first_output riscv64 qemu $((runs + 2))) |"
	unset SHSTK_SNAPSHOT
	# The suite's XSAVE state stress runs for guest seconds, 20 by default
	# under QEMU and 2 under Bochs: 1 everywhere here.
	export XSAVE_SECONDS=1
	run_cet=$(timed "$runs" "$S/run.sh" run x86_64)
	echo "| make run, XSAVE_SECONDS=1 (s) | $run_cet | $(SHSTK_QEMU=stock timed "$runs" "$S/run.sh" run x86_64) | $(timed "$runs" "$S/run.sh" run x86_64 bochs) | $(timed "$runs" "$S/run.sh" run arm64) | $(timed "$runs" "$S/run.sh" run riscv64) |"
	run_bochs_cold=$(SHSTK_SNAPSHOT=0 timed "$runs" "$S/run.sh" run x86_64 bochs)
	echo "| the same, booted cold, SHSTK_SNAPSHOT=0 (s) | - | - | $run_bochs_cold | - | - |"
	unset XSAVE_SECONDS
	echo "| x86_64: boot with CET against stock QEMU (goal <= 1.2); make run, Bochs booted cold against QEMU with CET (goal >= 3) | $(ratio "$boot_cet" "$boot_stock") | - | $(ratio "$run_bochs_cold" "$run_cet") | - | - |"
	echo "| make gdb-check (s) | $(timed "$runs" "$S/gdb-check.sh" x86_64) | - | $(timed "$runs" "$S/gdb-check.sh" x86_64 bochs) | $(timed "$runs" "$S/gdb-check.sh" arm64) | $(timed "$runs" "$S/gdb-check.sh" riscv64) |"
	echo "| make trace (s) | $(timed "$runs" "$S/trace.sh" x86_64) | - | $(timed "$runs" "$S/trace.sh" x86_64 bochs) | $(timed "$runs" "$S/trace.sh" arm64) | $(timed "$runs" "$S/trace.sh" riscv64) |"
	echo "| same kernel and static program, boot to exit: shstk-lab vs virtme-ng 1.35 (--disable-kvm), QEMU=stock for both | $(SHSTK_QEMU=stock vng_ratio)"
	echo
	echo "Wall times in seconds: medians of $runs runs ($((runs + 2)) for QEMU boots and the"
	echo "virtme-ng comparison), one cold build per arch.  The first test output is timed"
	echo "from the emulator's start (vm.json); runs are restored from a post-boot"
	echo "snapshot unless SHSTK_SNAPSHOT=0 says otherwise; the virtme-ng comparison"
	echo "boots cold, as virtme-ng does, and restored, as every run here does.  x86_64"
	echo "runs under the project's QEMU"
	echo "($("$S/build/qemu.sh" --info x86_64 2>/dev/null), CET in TCG) by default and"
	echo "under Debian's with QEMU=stock, whose TCG has no CET: there the run exercises"
	echo "the refusal paths only.  make run's figures give x86's XSAVE state"
	echo "stress one guest second everywhere (XSAVE_SECONDS=1; by default it runs"
	echo "20 under QEMU and 2 under Bochs, whose guest clock runs at about real"
	echo "time, with spinning rounds a twentieth as long; see docs/boot.md)."
	echo "Every run's output is in out/bench.log."
	echo
	echo "## make test's time budgets"
	echo
	test_budgets
} | tee "$table"
shstk_msg "written to $table"
if [ "${BENCH_DOCS:-0}" = 1 ]; then
	cp "$table" "$SHSTK_TOP/docs/bench.md"
	shstk_msg "copied to docs/bench.md (BENCH_DOCS=1)"
fi
[ ! -e "$over" ] || shstk_die "make test went over its time budgets, or failed (see $table and $log)"
