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
# source with the project's patches by the build layer: its gdbstub
# configuration for a run that gdb attaches to, its faster run
# configuration (no gdbstub) for every other.
#
# Why the unusual settings:
#  - "nopku" on the kernel command line: Bochs 3.0's XRSTORS reads the CET
#    user state at the wrong offset when Linux leaves PKRU out of the restore
#    mask, and tasks then resume on each other's SSP.  Without PKU the kernel
#    never does that.
#  - an isolinux ISO: Bochs has no direct kernel boot.
#  - display_library nogui: nothing to show, no port to open.
#  - com1 is the console, com2 the results channel (/dev/ttyS1 in the guest).
#  - clock sync=none, ips=100M: as fast as it goes.  The guest's clock is
#    its TSC, which counts instructions: the CPU model declares 2419.2 MHz
#    (CPUID 0x15), and Bochs runs a tenth of that or less, so a guest
#    second would take ten real ones or more.  "tsc_early_khz=" on the
#    kernel command line declares a tenth of it instead, which brings the
#    guest's clock near real time: timer ticks, timer signals and timeouts
#    come about as often per real second as on hardware.
#  - Bochs exits 1 on power-off and on panic alike: checks/ reads the console.
#  - one CPU, emulated on one host thread: make fuzz runs a VM per host CPU.
#  - gdb: the gdbstub build matches breakpoints by address only, and gdb
#    reads code to resolve a function name (to skip an endbr64), which fails
#    on user addresses not mapped yet: software breakpoints by address.  It
#    shows no SSP register.
#  - the bpftrace root filesystem (SHSTK_ROOTFS, its EROFS disk image): on
#    the IDE disk ata0-slave.  "mode=volatile" opens the image read-only
#    and keeps guest writes in a journal under OUT: Bochs locks an image it
#    opens for writing, and two runs may share this one.
#  - With GDB_PORT the gdbstub is enabled: Bochs waits for gdb at power-on.
#  - Every other run is restored from a post-boot snapshot (docs/boot.md):
#    the boot to init's snapshot point (guest/init.sh shstk.snapshot=)
#    takes many times the restore (docs/boot.md).  The snapshot is made once per
#    kernel, Bochs build, base guest image, configuration and disk set (the
#    bpftrace disk or not: two snapshots, as a disk cannot be added at a
#    restore and making one costs nothing for the runs without it), kept
#    in the cache under the hash of all of those.  What differs per run
#    comes on a payload disk (ata1-master): init's words of the command
#    line and the guest image.  Bochs checks a volatile disk's base image
#    at the restore against the saved size and mtime, so the payload disk
#    always has the same of both.  SHSTK_SNAPSHOT=0 boots cold.

# shellcheck disable=SC2034  # read by scripts/lib, vm/boot.sh and the gdb scripts
emu_declare() {
	[ "$ARCH" = x86_64 ] || shstk_die "EMU=bochs emulates x86_64 only (ARCH=$ARCH)"
	EMU_SMP=1
	EMU_HOST_THREADS=1
	EMU_BREAKPOINTS=software-by-address
	EMU_SSP_REGISTER=
	EMU_NO_SHSTK_WHY=
	EMU_XSTATE_FORMAT=compacted
	EMU_KERNEL_IBT=on
	EMU_POWEROFF_EXIT=1
	EMU_RECORD_REPLAY=no
	EMU_NO_REVERSE_WHY="Bochs does not record and replay"
	# No QMP: nothing to ask for a dump of the guest's memory.
	EMU_QMP=no
	EMU_SOURCE_BUILD=bochs
	EMU_BOOT_IMAGE=yes
	EMU_RESULTS_DEV=/dev/ttyS1
	# libata names the first disk sda (the CD-ROM on ata0-master is sr0).
	EMU_ROOTFS_DEV=/dev/sda
	# The XSAVE state stress (guest/xsave_integrity.c), 20 s elsewhere,
	# runs 2 s with a twentieth of its usual spin between load and check,
	# because every guest second is dear on an interpreted CPU and a
	# shorter spin still gives many rounds, switches and timer signals.  A
	# later setting on the command line wins (make fuzz's XSAVE_SECONDS=).
	EMU_CMDLINE="nopku tsc_early_khz=241920 SHSTK_XSAVE_SECONDS=2 SHSTK_XSAVE_SPIN=10000"
}

# The payload disk of a run restored from a snapshot: its size and mtime
# are the snapshot's, or Bochs refuses the restore (a volatile disk's base
# image must be the one it saved with); whole cylinders of the geometry
# bochsrc gives it.  32 MiB: the largest guest image is 3 MiB.
BOCHS_PAYLOAD_BYTES=$((65 * 16 * 63 * 512))
BOCHS_PAYLOAD_MTIME=@1000000000

# bochs_iso DIR CMDLINE INITRD: DIR/boot.iso, isolinux booting KERNEL.
bochs_iso() {
	local dir=$1 iso=$1/iso
	rm -rf "$iso"
	mkdir -p "$iso/isolinux"
	shstk_tb cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 "$iso/isolinux/"
	cp "$KERNEL" "$iso/bzImage"
	cp "$3" "$iso/initrd.gz"
	cat >"$iso/isolinux/isolinux.cfg" <<CFG
SERIAL 0 115200
DEFAULT linux
PROMPT 0
TIMEOUT 0
LABEL linux
  KERNEL /bzImage
  APPEND initrd=/initrd.gz $2
CFG
	shstk_tb xorriso -as mkisofs -quiet -o "$dir/boot.iso" -b isolinux/isolinux.bin -c isolinux/boot.cat \
		-no-emul-boot -boot-load-size 4 -boot-info-table "$iso" >"$dir/xorriso.log" 2>&1 ||
		shstk_die "making $dir/boot.iso failed; see $dir/xorriso.log"
	rm -rf "$iso"
}

# bochs_rc ISO RUNDIR: the configuration every run has, its console,
# results channel and log in RUNDIR.
bochs_rc() {
	cat <<RC
megs: 1024
cpu: model=tigerlake, count=1, ips=100000000, reset_on_triple_fault=0, ignore_bad_msrs=1
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
display_library: nogui
ata0-master: type=cdrom, path=$1, status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev=$2/console.log
com2: enabled=1, mode=file, dev=$2/guest.out
clock: sync=none
log: $2/bochs.log
panic: action=fatal
error: action=report
RC
	if [ -n "$BOCHS_ROOTFS_DISK" ]; then
		echo "ata0-slave: type=disk, mode=volatile, path=$BOCHS_ROOTFS_DISK, journal=$2/rootfs.redolog, heads=16, spt=63"
	fi
}

# bochs_payload IMAGE WORDS CPIO: the payload disk of a restored run
# (guest/init.sh shstk.snapshot=): a first 4 KiB block
# "shstk-payload BYTES\nWORDS\n", then CPIO, BYTES long.
bochs_payload() {
	local bytes head
	bytes=$(stat -c %s "$3")
	head=$(printf 'shstk-payload %d\n%s\n' "$bytes" "$2")
	[ "${#head}" -lt 4096 ] || shstk_die "the kernel command line is too long for the Bochs payload header"
	[ $((4096 + bytes)) -le "$BOCHS_PAYLOAD_BYTES" ] ||
		shstk_die "the guest image $3 ($bytes bytes) does not fit the Bochs payload disk ($BOCHS_PAYLOAD_BYTES bytes)"
	printf '%s\n' "$head" >"$1"
	truncate -s 4096 "$1"
	cat "$3" >>"$1"
	truncate -s "$BOCHS_PAYLOAD_BYTES" "$1"
	touch -d "$BOCHS_PAYLOAD_MTIME" "$1"
}

# A cold boot: the run's kernel command line and guest image on the ISO.
bochs_cold() {
	bochs_iso "$OUT" "$KERNEL_CMDLINE" "$INITRD"
	bochs_rc "$OUT/boot.iso" "$OUT" >"$OUT/bochsrc"
	if [ -n "${GDB_PORT:-}" ]; then
		echo "gdbstub: enabled=1, port=$GDB_PORT, text_base=0, data_base=0, bss_base=0" >>"$OUT/bochsrc"
	fi
	BOCHS_ARGS=(-q -f "$OUT/bochsrc")
}

# The snapshot's configuration, DIR its directory: the files of the run
# that made it in DIR/run, which a restored run's own replace.
bochs_snapshot_rc() {
	bochs_rc "$1/boot.iso" "$1/run"
	echo "ata1-master: type=disk, mode=volatile, path=$1/run/payload.img, journal=$1/run/payload.redolog, heads=16, spt=63"
}

# bochs_snapshot_save TMP DIR CMDLINE BASE (shstk_snapshot_make's SAVE): boot
# BASE cold with CMDLINE, saved at init's snapshot point into TMP/snap;
# its configuration names DIR, where it is moved.
bochs_snapshot_save() {
	local tmp=$1
	mkdir -p "$tmp/run" "$tmp/snap"
	bochs_iso "$tmp" "$3" "$4"
	printf 'none\n' >"$tmp/run/empty"
	bochs_payload "$tmp/run/payload.img" "" "$tmp/run/empty"
	bochs_snapshot_rc "$tmp" >"$tmp/bochsrc"
	# Bochs exits 1 after a save, as on a power-off or a panic: the
	# log line and the saved configuration tell a save.
	# A child that a TERM to vm/boot.sh stops (scripts/lib/core.sh
	# shstk_start_child); in the foreground it would hold the TERM back
	# until it ended.
	shstk_run_child "$SHSTK_TOP/scripts/tools/tb" timeout -k 5 300 "$BOCHS_BIN" -q -f "$tmp/bochsrc" \
		-save "$tmp/snap" </dev/null >"$tmp/run/emulator.log" 2>&1 || true
	if ! grep -qs "saving the Bochs state to" "$tmp/run/bochs.log" "$tmp/run/emulator.log" ||
		[ ! -f "$tmp/snap/config" ]; then
		shstk_die "making the Bochs snapshot failed: see $tmp/run/console.log and $tmp/run/bochs.log" \
			"(SHSTK_SNAPSHOT=0 boots cold)"
	fi
	# Its paths name where it was made.
	sed -i "s#$tmp/#$2/#g" "$tmp/snap/config"
}

# A run restored from the snapshot its kernel, Bochs and disks make: the
# kernel's words of its command line are the snapshot's, made once and
# kept in the cache under the hash of all it depends on; the words for
# init (shstk.* and the programs' VAR=value settings, upper case) and what
# its guest image has that the snapshot's has not (cpiodiff.py) go on the
# payload disk.
bochs_restore() {
	local kwords dev base key dir run f cpio
	shstk_snapshot_words "$KERNEL_CMDLINE"
	# libata names the disks in the order of the ports: the root
	# filesystem's ata0-slave first.
	dev=/dev/sda
	[ -z "$BOCHS_ROOTFS_DISK" ] || dev=/dev/sdb
	kwords="$SNAPSHOT_KWORDS shstk.snapshot=$dev"
	shstk_snapshot_base base
	key=$({
		echo "$EMU_DESCRIPTION"
		echo "$kwords"
		shstk_file_sha256 "$KERNEL"
		shstk_file_sha256 "$base"
		bochs_snapshot_rc @SNAPSHOT@
		[ -z "$BOCHS_ROOTFS_DISK" ] || stat -c '%s %Y' "$BOCHS_ROOTFS_DISK"
		echo "$BOCHS_PAYLOAD_BYTES $BOCHS_PAYLOAD_MTIME"
	} | sha256sum | cut -c1-16)
	dir=$SHSTK_CACHE/bochs-snapshots/$key
	[ -d "${dir%/*}" ] || mkdir -p "${dir%/*}"
	# Each is 1 GiB of sparse RAM (some 80 MB on disk).
	shstk_snapshot_make "$dir" Bochs snap/config run/console.log bochs_snapshot_save "$kwords" "$base"
	touch "$dir"	# in use: see shstk_snapshot_prune
	# The run's own directory to restore from: the saved state shared,
	# read only, and a configuration whose files are this run's.
	run=$OUT/bochs-restore
	rm -rf "$run"
	mkdir -p "$run"
	for f in "$dir"/snap/*; do
		[ "${f##*/}" = config ] || ln -s "$f" "$run/"
	done
	sed "s#$dir/run/#$OUT/#g" "$dir/snap/config" >"$run/config"
	cpio=$(shstk_snapshot_payload_cpio "$dir" "$base" "$INITRD") || shstk_die "making the snapshot payload of $INITRD failed"
	bochs_payload "$OUT/payload.img" "$SNAPSHOT_IWORDS" "$cpio"
	BOCHS_ARGS=(-q -r "$run")
	EMU_SNAPSHOT=$key
}

emu_prepare() {
	local purpose=run
	[ -z "${GDB_PORT:-}" ] || purpose=gdb
	# The gdbstub build for a run gdb attaches to, the faster one else.
	if [ -z "${SHSTK_EMU_BIN:-}" ] || [ "${SHSTK_EMU_PURPOSE:-}" != "$purpose" ]; then
		shstk_die "no Bochs binary for a $purpose run given (SHSTK_EMU_BIN, SHSTK_EMU_PURPOSE=${SHSTK_EMU_PURPOSE:-}):" \
			"the script that starts a boot builds it (shstk_build_boot${GDB_PORT:+ --gdb})"
	fi
	BOCHS_BIN=$SHSTK_EMU_BIN
	EMU_DESCRIPTION="patched $SHSTK_EMU_DESCRIPTION"
	BOCHS_ROOTFS_DISK=${SHSTK_ROOTFS:-}
	EMU_SNAPSHOT=
	# gdb: the gdbstub runs the CPU loop, where no save happens; and
	# a paused boot is watched from its first instruction.
	if [ -n "${GDB_PORT:-}" ] || ! shstk_snapshot_wanted || [ "${SHSTK_BOCHS_SNAPSHOT:-1}" = 0 ]; then
		bochs_cold
	else
		bochs_restore
	fi
}

emu_command() {
	EMU_CMD=("$BOCHS_BIN" "${BOCHS_ARGS[@]}")
}
