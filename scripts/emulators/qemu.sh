# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The QEMU command line, per architecture: the one place that decides it.
# Sourced by scripts/boot-vm.sh, which sets KERNEL, INITRD, APPEND, OUT
# (console.log and guest.out go there) and optionally GDB_PORT, then calls
# emu_command to fill the EMU_CMD array.  EMU_MATCH is what only this run's
# emulator has on its command line (boot-vm.sh kills what matches it).
#
# Why these settings:
#  - arm64 "-M virt -cpu max" is the only way to get FEAT_GCS (QEMU >= 10.2).
#  - x86_64 "-cpu max": TCG has no CET, so the guest has no user shadow stack;
#    shstk.why= lets guest programs say so in their SKIP lines.
#  - x86_64 runs one of two QEMUs, SHSTK_QEMU (make QEMU=) says which:
#    "stock", the toolbox's Debian QEMU 11.1 (the default for now), or
#    "patched", Debian's QEMU 10.2.2 source with patches/qemu/ (XSAVES,
#    XSAVEC and IA32_XSS in TCG, so the kernel switches FPU state in the
#    compacted format), built by scripts/build-qemu.sh.  Its source package
#    has no firmware: it takes Debian's (seabios, qemu-system-data) from the
#    toolbox with -L.
#  - two CPUs so the token race in the guest suite really races.
#  - the console goes to a file; test results go to a second channel (a
#    virtio console, /dev/hvc0 in the guest) so kernel messages can never
#    interleave with KTAP.
#  - "-no-reboot" and "panic=-1": a panic ends QEMU at once instead of
#    hanging until the timeout; the host finds the panic in console.log.

# shellcheck disable=SC2034  # read by boot-vm.sh
EMU_MATCH=$OUT/console.log

emu_command() {
	local common_append="panic=-1 oops=panic loglevel=5 shstk.out=/dev/hvc0"
	# Tells the guest's init where the bpftrace root filesystem is.
	[ -z "${SHSTK_ROOTFS:-}" ] || common_append+=" shstk.rootfs=9p"
	case "$ARCH" in
	arm64)
		EMU_CMD=(qemu-system-aarch64 -M virt -cpu max -smp 2 -m 1G
			-kernel "$KERNEL" -initrd "$INITRD"
			-append "console=ttyAMA0 $common_append $APPEND"
			-device virtio-serial-device)
		;;
	x86_64)
		qemu_x86_select
		EMU_CMD=("${QEMU_X86[@]}" -M q35 -cpu max -smp 2 -m 1G
			-kernel "$KERNEL" -initrd "$INITRD"
			-append "console=ttyS0 $common_append shstk.why=QEMU_TCG_does_not_emulate_CET $APPEND"
			-device virtio-serial-pci)
		;;
	esac
	# shellcheck disable=SC2054  # commas inside QEMU option values
	EMU_CMD+=(-nodefaults -display none -monitor none -no-reboot
		-serial "file:$OUT/console.log"
		-chardev "file,id=results,path=$OUT/guest.out"
		-device virtconsole,chardev=results)
	if [ -n "${SHSTK_ROOTFS:-}" ]; then
		# The bpftrace root filesystem, read-only over 9p (mount tag "rootfs").
		local dev=virtio-9p-pci
		[ "$ARCH" = arm64 ] && dev=virtio-9p-device
		EMU_CMD+=(-fsdev "local,id=rootfs,path=$SHSTK_ROOTFS,security_model=none,readonly=on"
			-device "$dev,fsdev=rootfs,mount_tag=rootfs")
	fi
	if [ -n "${GDB_PORT:-}" ]; then
		# Paused at the first instruction until gdb continues it.
		EMU_CMD+=(-gdb "tcp:127.0.0.1:$GDB_PORT" -S)
	fi
}

# Which x86_64 QEMU: sets QEMU_X86 (the binary and its firmware options) and
# EMU_BUILD (what the binary is, for the run's record, vm.json), and says it.
qemu_x86_select() {
	local bin
	case "${SHSTK_QEMU:-stock}" in
	stock)
		QEMU_X86=(qemu-system-x86_64)
		EMU_BUILD="stock $(tb qemu-system-x86_64 --version | sed -n '1s/.*version //p')"
		;;
	patched)
		bin=$("$SHSTK_TOP/scripts/build-qemu.sh") || die "building the patched QEMU failed"
		QEMU_X86=("$bin" -L /usr/share/seabios -L /usr/share/qemu)
		EMU_BUILD="patched $("$SHSTK_TOP/scripts/build-qemu.sh" --info)"
		;;
	*) die "SHSTK_QEMU (make QEMU=) must be stock or patched (is '$SHSTK_QEMU')" ;;
	esac
	export EMU_BUILD
	msg "x86_64 QEMU: $EMU_BUILD"
}
