#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# QEMU's own bare-metal system tests of the project's TCG work
# (tests/tcg/ARCH/system in the project's QEMU source, where patches/qemu/
# adds them; config/arches.ini's qemu_tcg_tests names them), each built with
# the arch's compiler against QEMU's test harness and run under the
# project's QEMU, one VM per test with a timeout.  Each check a test prints
# ("ok N name" or "not ok N name: why") becomes a KTAP test point named
# TEST.name; a test that does not end with its "N tests, M failures" line
# and exit status 0 is one failure more.  Logs and images in
# out/ARCH/tcg-tests/.
#
#   scripts/tcg-tests.sh ARCH
set -euo pipefail
# shellcheck source=lib/entry.sh
. "$(dirname "$0")/lib/entry.sh"
shstk_arch_vars "${1:-}"

TIMEOUT=60
out=$ARCH_OUT/tcg-tests
shstk_arch_set tests qemu_tcg_tests
if [ -z "$tests" ]; then
	echo "KTAP version 1"
	echo "1..0 # SKIP the project's QEMU has no system tests for $ARCH (config/arches.ini: qemu_tcg_tests)"
	echo "tcg-tests $ARCH: 0 passed, 0 failed, 1 skipped"
	exit 0
fi
# How a test image boots and reports: QEMU's tests/tcg/ARCH/Makefile.softmmu-target.
case "$ARCH" in
x86_64)
	# shellcheck disable=SC2054  # the commas are QEMU's, inside options
	machine=(-M q35 -cpu max -display none -nodefaults -no-reboot
		-device isa-debugcon,chardev=output
		-device isa-debug-exit,iobase=0xf4,iosize=0x4)
	crt=(boot.S)
	;;
*) shstk_die "qemu_tcg_tests names tests for $ARCH, but scripts/tcg-tests.sh does not know how its tests boot" ;;
esac

shstk_emu_vars qemu
[ "$QEMU_VARIANT" = patched ] ||
	shstk_die "the system tests test the project's QEMU: QEMU=$QEMU_VARIANT runs another"
shstk_emulator_build run
src=$SHSTK_CACHE/qemu/src/tests/tcg
sys=$src/$ARCH/system
mkdir -p "$out"
cd "$out"

cflags=(-nostdlib -ggdb -O0 -isystem "$src/minilib")
log=$out/build.log
: >"$log"
build() {
	shstk_tb "$ARCH_CC" "$@" >>"$log" 2>&1 ||
		shstk_die "building the system tests failed: $ARCH_CC $*; see $log"
}
objs=()
for s in "${crt[@]}"; do
	build "${cflags[@]}" -Wa,--noexecstack -c "$sys/$s" -o "${s%.*}.o"
	objs+=("${s%.*}.o")
done
build "${cflags[@]}" -fno-stack-protector -c "$src/minilib/printf.c" -o printf.o
objs+=(printf.o)

# The KTAP lines, numbered in one plan: each check as TEST.name (a failed
# one's reason on a diagnostic line before it), then each test's own point.
lines=()
n=0 pass=0 fail=0
point() {
	n=$((n + 1))
	if [ "$1" = ok ]; then
		pass=$((pass + 1))
		lines+=("ok $n $2")
	else
		fail=$((fail + 1))
		lines+=("not ok $n $2")
	fi
}
check_re='^(ok|not ok) [0-9]+ ([^: ]+)(: (.*))?$'
for t in $tests; do
	[ -f "$sys/$t.c" ] || shstk_die "qemu_tcg_tests names $t, but the project's QEMU has no $sys/$t.c (patches/qemu/)"
	build "${cflags[@]}" "$sys/$t.c" -o "$t" -Wl,-T"$sys/kernel.ld" -static "${objs[@]}" -lgcc
	rm -f "$t.out"
	shstk_msg "$t: under $SHSTK_EMU_DESCRIPTION"
	rc=0
	timeout -k 5 "$TIMEOUT" "$SHSTK_TOP/scripts/tools/tb" "$SHSTK_EMU_BIN" \
		-L /usr/share/seabios -L /usr/share/qemu "${machine[@]}" \
		-chardev "file,id=output,path=$out/$t.out" -kernel "$t" \
		>"$t.log" 2>&1 || rc=$?
	[ -f "$t.out" ] || : >"$t.out"
	totals=
	while IFS= read -r line; do
		if [[ $line =~ $check_re ]]; then
			[ -z "${BASH_REMATCH[4]}" ] || lines+=("# $t.${BASH_REMATCH[2]}: ${BASH_REMATCH[4]}")
			point "${BASH_REMATCH[1]}" "$t.${BASH_REMATCH[2]}"
		elif [[ $line =~ ^[0-9]+\ tests,\ [0-9]+\ failures$ ]]; then
			totals=$line
		fi
	done <"$t.out"
	why=
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		why="no result after $TIMEOUT s (timed out)"
	elif [ -z "$totals" ]; then
		why="ended without its totals line (exit status $rc)"
	elif [ "$rc" -ne 0 ]; then
		why="$totals, exit status $rc"
	fi
	if [ -n "$why" ]; then
		lines+=("# $t: $why; its output $out/$t.out, QEMU's $out/$t.log")
		point "not ok" "$t"
	else
		lines+=("# $t: $totals")
		point ok "$t"
	fi
done

echo "KTAP version 1"
echo "1..$n"
printf '%s\n' "${lines[@]}"
echo "tcg-tests $ARCH: $pass passed, $fail failed, 0 skipped"
[ "$fail" -eq 0 ] || exit 1
