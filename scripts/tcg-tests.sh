#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# QEMU's own bare-metal system tests of the project's TCG work
# (tests/tcg/ARCH/system in the project's QEMU source, where patches/qemu/
# adds them; config/arches.ini's qemu_tcg_tests names them), each built with
# the arch's compiler against QEMU's test harness and run under the
# project's QEMU, one VM per test with a timeout; checks/tcgtests.py judges
# their output, as KTAP with one point per check.  Logs and images in
# out/ARCH/tcg-tests/.
#
#   scripts/tcg-tests.sh ARCH
set -euo pipefail
# shellcheck source=lib/entry.sh
. "$(dirname "$0")/lib/entry.sh"
shstk_host_check
shstk_arch_vars "${1:-}"
shstk_toolbox_need "arch:$ARCH"
shstk_exit_on_signals

TIMEOUT=60
# The tests do not depend on the kernel: one place whatever the tree.
out=$SHSTK_OUT/$ARCH/tcg-tests
tests='' crt='' devices='' machine='' cpu=''
shstk_arch_set tests qemu_tcg_tests
[ -n "$tests" ] || shstk_skip_step tcg-tests "the project's QEMU has no system tests for $ARCH (config/arches.ini: qemu_tcg_tests)"
shstk_arch_set crt qemu_tcg_test_crt
shstk_arch_set devices qemu_tcg_test_devices
shstk_arch_set machine qemu_machine
shstk_arch_set cpu qemu_cpu

shstk_emu_vars qemu
[ "$QEMU_VARIANT" = patched ] ||
	shstk_die "the system tests test the project's QEMU: QEMU=$QEMU_VARIANT runs another"
shstk_emulator_build run
qemu_select
src=$SHSTK_CACHE/qemu/src/tests/tcg
sys=$src/$ARCH/system
shstk_lock_out "$out"
mkdir -p "$out"
cd "$out"

# As QEMU's tests/tcg Makefiles compile them.
cflags=(-nostdlib -ffreestanding -fno-stack-protector -ggdb -O0 -isystem "$src/minilib")
log=$out/build.log
: >"$log"
build() {
	shstk_tb "$ARCH_CC" "$@" >>"$log" 2>&1 ||
		shstk_die "building the system tests failed: $ARCH_CC $*; see $log"
}
objs=()
for s in $crt; do
	build "${cflags[@]}" -Wa,--noexecstack -c "$sys/$s" -o "${s%.*}.o"
	objs+=("${s%.*}.o")
done
build "${cflags[@]}" -c "$src/minilib/printf.c" -o printf.o
objs+=(printf.o)

# Output on the debugcon device, the verdict through the exit device.
qemu_args=(-M "$machine" -cpu "$cpu" -display none -nodefaults -no-reboot)
for d in $devices; do
	qemu_args+=(-device "$d")
done
results=()
for t in $tests; do
	[ -f "$sys/$t.c" ] || shstk_die "qemu_tcg_tests names $t, but the project's QEMU has no $sys/$t.c (patches/qemu/)"
	build "${cflags[@]}" "$sys/$t.c" -o "$t" -Wl,-T"$sys/kernel.ld" -static "${objs[@]}" -lgcc
	rm -f "$t.out"
	shstk_msg "$t: under $SHSTK_EMU_DESCRIPTION"
	rc=0
	shstk_run_child timeout -k 5 "$TIMEOUT" "$SHSTK_TOP/scripts/tools/tb" "${QEMU_BIN[@]}" \
		"${qemu_args[@]}" -chardev "file,id=output,path=$out/$t.out" -kernel "$t" \
		</dev/null >"$t.log" 2>&1 || rc=$?
	results+=("$t=$rc")
done
PYTHONPATH=$SHSTK_TOP shstk_py -m checks.tcgtests "$ARCH" "$out" "${results[@]}"
