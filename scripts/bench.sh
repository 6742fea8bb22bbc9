#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: one table of figures measured on this machine, medians of
# several runs, written to docs/bench.md with the date.
#
#   kernel build, cold (the last one recorded) and after a one-line change
#   in kernel/fork.c (measured now, median of 3); boot to the first test
#   output per arch and emulator (make smoke, median of 5); make run,
#   make gdb-check and make trace wall times (median of 3).
#   RUNS=N changes the number of runs.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

runs=${RUNS:-3}
table=$SHSTK_OUT/bench.md
mkdir -p "$SHSTK_OUT"

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "n/a" }'; }

# Wall time in seconds of a command run $2 times; the median.
timed() {
	local n=$1 i t0
	shift
	for ((i = 0; i < n; i++)); do
		t0=$EPOCHREALTIME
		"$@" >/dev/null 2>&1 || { echo "failed"; return 0; }
		awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", b - a }'
	done | median
}

# The emulator's own seconds from power-on to power-off of a smoke boot.
boot_time() {
	local arch=$1 emu=$2 i dir
	dir=$SHSTK_OUT/$arch
	[ "$emu" = qemu ] || dir=$dir-$emu
	for ((i = 0; i < $3; i++)); do
		"$SHSTK_TOP/scripts/run.sh" smoke "$arch" "$emu" >/dev/null 2>&1 || { echo failed; return 0; }
		python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["seconds"])' "$dir/smoke/vm.json"
	done | median
}

# A one-line change to kernel/fork.c, built, then taken back and built again.
incremental() {
	local arch=$1 fork=$SHSTK_CACHE/src/linux/kernel/fork.c i t0
	for ((i = 0; i < runs; i++)); do
		echo "/* shstk-lab bench $i */" >>"$fork"
		t0=$EPOCHREALTIME
		"$SHSTK_TOP/scripts/build-kernel.sh" "$arch" >/dev/null 2>&1 || true
		awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", b - a }'
		git -C "$SHSTK_CACHE/src/linux" checkout -q -- kernel/fork.c
	done | median
	"$SHSTK_TOP/scripts/build-kernel.sh" "$arch" >/dev/null 2>&1
}

cold() {
	local f=$SHSTK_CACHE/build/$1/shstk-build-times
	awk '$2 == "cold" { t = $3 } END { print t ? t : "not recorded" }' "$f" 2>/dev/null || echo "not recorded"
}

{
	echo "# make bench, $(date -u +%F) ($(nproc) CPUs, $(free -g | awk '/^Mem/ { print $2 }') GiB)"
	echo
	echo "| figure | x86_64 | arm64 |"
	echo "|---|---|---|"
	echo "| kernel build, cold (s, last recorded) | $(cold x86_64) | $(cold arm64) |"
	echo "| kernel rebuild after a one-line kernel/fork.c change (s) | $(incremental x86_64) | $(incremental arm64) |"
	echo "| boot to power-off, smoke, QEMU (s, emulator) | $(boot_time x86_64 qemu 5) | $(boot_time arm64 qemu 5) |"
	echo "| boot to power-off, smoke, Bochs (s, emulator) | $(boot_time x86_64 bochs 3) | - |"
	echo "| make run, QEMU (s, wall) | $(timed "$runs" "$SHSTK_TOP/scripts/run.sh" run x86_64) | $(timed "$runs" "$SHSTK_TOP/scripts/run.sh" run arm64) |"
	echo "| make run, Bochs (s, wall) | $(timed 1 "$SHSTK_TOP/scripts/run.sh" run x86_64 bochs) | - |"
	echo "| make gdb-check (s, wall) | $(timed "$runs" "$SHSTK_TOP/scripts/gdb-check.sh" x86_64) | $(timed "$runs" "$SHSTK_TOP/scripts/gdb-check.sh" arm64) |"
	echo "| make trace (s, wall) | $(timed "$runs" "$SHSTK_TOP/scripts/trace.sh" x86_64) | $(timed "$runs" "$SHSTK_TOP/scripts/trace.sh" arm64) |"
	echo
	echo "Medians of $runs runs (boots: 5 on QEMU, 3 on Bochs); the cold build is the last one"
	echo "build-kernel.sh recorded.  virtme-ng is not compared yet: it needs CONFIG_BLOCK and"
	echo "OVERLAY_FS in the kernel, which these lean configurations leave out."
} | tee "$table"
cp "$table" "$SHSTK_TOP/docs/bench.md"
msg "written to docs/bench.md"
