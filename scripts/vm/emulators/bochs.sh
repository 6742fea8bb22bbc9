# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The Bochs backend: what Bochs can do, its configuration and command line;
# the one place that decides them.  The interface is described in qemu.sh.
#
# Bochs emulated x86 CET before the project's QEMU did; it stays as the
# second x86 emulator, whose verdicts make test compares with QEMU's.  Its
# 3.0 is the one that works (bookworm's 2.7 reports bad XSAVE CPUID data and
# the kernel panics; sid's 3.1 panics early), built from Debian trixie's
# source with the project's patches by scripts/build/bochs.sh: the gdbstub
# configuration (Bochs builds either that or its internal debugger, which
# Debian's package has), for every run.
#
# Why the unusual settings:
#  - "nopku" on the kernel command line: Bochs 3.0's XRSTORS reads the CET
#    user state at the wrong offset when Linux leaves PKRU out of the restore
#    mask, and tasks then resume on each other's SSP.  Without PKU the kernel
#    never does that.
#  - an isolinux ISO: Bochs has no direct kernel boot.
#  - display_library nogui: nothing to show, no port to open.
#  - com1 is the console, com2 the results channel (/dev/ttyS1 in the guest).
#  - clock sync=none, ips=100M: as fast as it goes; the guest clock runs slow.
#  - Bochs exits 1 on power-off and on panic alike: checks/ reads the console.
#  - one CPU, emulated on one host thread: make fuzz runs a VM per host CPU.
#  - gdb: the gdbstub build matches breakpoints by address only, and gdb
#    reads code to resolve a function name (to skip an endbr64), which fails
#    on user addresses not mapped yet: software breakpoints by address.  It
#    shows no SSP register.
#  - the bpftrace root filesystem (SHSTK_ROOTFS): Bochs has no virtio, so it
#    is an ext4 image on the IDE disk ata0-slave, made once from the
#    directory and kept in the cache.  "mode=volatile" opens the image
#    read-only and keeps guest writes in a journal under OUT: Bochs locks an
#    image it opens for writing, and two runs may share this one.
#  - With GDB_PORT the gdbstub is enabled: Bochs waits for gdb at power-on.

# shellcheck disable=SC2034  # read by lib.sh, vm/boot.sh and the gdb scripts
emu_declare() {
	[ "$ARCH" = x86_64 ] || die "EMU=bochs emulates x86_64 only (ARCH=$ARCH)"
	EMU_SMP=1
	EMU_HOST_THREADS=1
	EMU_BREAKPOINTS=software-by-address
	EMU_SSP_REGISTER=
	EMU_NO_SHSTK_WHY=
	EMU_XSTATE_FORMAT=compacted
	EMU_POWEROFF_EXIT=1
	EMU_RECORD_REPLAY=no
	EMU_NO_REVERSE_WHY="Bochs does not record and replay"
	# No QMP: nothing to ask for a dump of the guest's memory.
	EMU_QMP=no
	EMU_RESULTS_DEV=/dev/ttyS1
	# libata names the first disk sda (the CD-ROM on ata0-master is sr0).
	EMU_ROOTFS_DEV=/dev/sda
	# Its guest clock runs about 25 times slower than real time here (sync=
	# none): the XSAVE state stress, 20 s elsewhere, gets 1 guest second
	# (about 30 s), unless the run asks otherwise (a later setting on the
	# command line wins: make fuzz's XSAVE_SECONDS=); shstk.slow= tells the
	# guest's init, which times its reports in real time.
	EMU_CMDLINE="nopku SHSTK_XSAVE_SECONDS=1 shstk.slow=25"
}

# The root filesystem directory as an ext4 image, remade when the directory
# is newer.  Sized to whole cylinders of 16 heads x 63 sectors, the geometry
# bochsrc gives the disk.
rootfs_disk() {
	local dir=$1 img=$1.ext4 cyl=$((16 * 63 * 512)) mib bytes
	if [ -f "$img" ] && [ "$img" -nt "$dir/.shstk-rootfs" ]; then
		echo "$img"
		return
	fi
	mib=$(du -sm "$dir" | cut -f1)
	bytes=$(((mib * 5 / 4 + 64) * 1024 * 1024 / cyl * cyl + cyl))
	msg "making the root filesystem disk image $img ($((bytes >> 20)) MiB) for Bochs"
	rm -f "$img.new"
	tb mke2fs -q -t ext4 -O ^has_journal -L shstk-rootfs -d "$dir" "$img.new" "$((bytes / 1024))k" \
		>"$OUT/mke2fs.log" 2>&1 || { msg "mke2fs failed; see $OUT/mke2fs.log"; return 1; }
	mv "$img.new" "$img"
	echo "$img"
}

emu_prepare() {
	local iso=$OUT/iso disk=
	if [ -n "${SHSTK_ROOTFS:-}" ]; then
		disk=$(rootfs_disk "$SHSTK_ROOTFS") || return 1
	fi
	rm -rf "$iso"
	mkdir -p "$iso/isolinux"
	tb cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 "$iso/isolinux/"
	cp "$KERNEL" "$iso/bzImage"
	cp "$INITRD" "$iso/initrd.gz"
	cat >"$iso/isolinux/isolinux.cfg" <<CFG
SERIAL 0 115200
DEFAULT linux
PROMPT 0
TIMEOUT 0
LABEL linux
  KERNEL /bzImage
  APPEND initrd=/initrd.gz $KERNEL_CMDLINE
CFG
	tb xorriso -as mkisofs -quiet -o "$OUT/boot.iso" -b isolinux/isolinux.bin -c isolinux/boot.cat \
		-no-emul-boot -boot-load-size 4 -boot-info-table "$iso" >"$OUT/xorriso.log" 2>&1 || return 1
	cat >"$OUT/bochsrc" <<RC
megs: 1024
cpu: model=tigerlake, count=1, ips=100000000, reset_on_triple_fault=0, ignore_bad_msrs=1
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
display_library: nogui
ata0-master: type=cdrom, path=$OUT/boot.iso, status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev=$OUT/console.log
com2: enabled=1, mode=file, dev=$OUT/guest.out
clock: sync=none
log: $OUT/bochs.log
panic: action=fatal
error: action=report
RC
	if [ -n "$disk" ]; then
		echo "ata0-slave: type=disk, mode=volatile, path=$disk, journal=$OUT/rootfs.redolog, heads=16, spt=63" >>"$OUT/bochsrc"
	fi
	if [ -n "${GDB_PORT:-}" ]; then
		echo "gdbstub: enabled=1, port=$GDB_PORT, text_base=0, data_base=0, bss_base=0" >>"$OUT/bochsrc"
	fi
}

# The project's Bochs, built when it is missing or out of date: make test
# runs this as a step of its own, a paused boot before it starts (lib.sh
# emu_build_now), so neither waits for a build on the way.
emu_build_command() {
	EMU_BUILD_CMD=("$SHSTK_TOP/scripts/build/bochs.sh")
}

emu_command() {
	local built
	# shellcheck disable=SC2034  # read by vm/boot.sh
	EMU_MATCH=$OUT/bochsrc
	built=$("$SHSTK_TOP/scripts/build/bochs.sh") || die "building Bochs failed"
	EMU_CMD=("${built%%$'\n'*}" -q -f "$OUT/bochsrc")
	# shellcheck disable=SC2034  # read by vm/boot.sh
	EMU_BUILD="patched ${built#*$'\n'}"
}
