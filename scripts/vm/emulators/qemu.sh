# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The QEMU backend: what QEMU can do, and its command line, per
# architecture; the one place that decides them.  The interface every
# backend in this directory implements (scripts/lib/vm.sh shstk_emu_vars sources
# it after shstk_arch_vars, vm/boot.sh calls the rest):
#
#   emu_declare    sets, for $ARCH (dies on an arch it does not emulate):
#     EMU_SMP             guest CPUs
#     EMU_HOST_THREADS    host threads those CPUs run on
#     EMU_BREAKPOINTS     how gdb must break on user code: "hardware"
#                         (hbreak, by name), or "software-by-address"
#     EMU_SSP_REGISTER    the gdbstub register with the user shadow stack
#                         pointer, or "" where the stub shows none
#     EMU_NO_SHSTK_WHY    why the guest CPU has no user shadow stack here
#                         ("" when it has one): the guest's SKIP reason
#     EMU_XSTATE_FORMAT   x86: the XSAVE format the kernel must choose on
#                         this CPU, "compacted" (XSAVES) or "standard"; ""
#                         elsewhere.  The guest reports the kernel's choice
#                         and checks/report.py compares (vm.json)
#     EMU_KERNEL_IBT      x86: "on" if the kernel must run with indirect
#                         branch tracking on this CPU, "off" if it cannot;
#                         "" elsewhere.  Reported and compared likewise
#     EMU_POWEROFF_EXIT   the emulator's exit status when the guest powers
#                         off (Bochs: 1, the same as on a panic; the console
#                         log decides then)
#     EMU_RECORD_REPLAY   "yes" if it can record a run and replay it
#                         under gdb (SHSTK_RR_MODE, below; scripts/replay.sh)
#     EMU_NO_REVERSE_WHY  why gdb cannot run such a replay backwards here
#                         ("" when it can)
#     EMU_QMP             "yes" if a paused VM (GDB_PORT) also listens for
#                         QMP on $(shstk_qmp_socket OUT) and can dump the
#                         guest's memory as a core drgn opens
#     EMU_RESULTS_DEV     the guest's device for the results channel
#     EMU_ROOTFS_DEV      the guest's device of the bpftrace root filesystem's
#                         disk (guest/init.sh shstk.rootfs=)
#     EMU_CMDLINE         kernel parameters this emulator needs, and
#                         settings for the guest programs (VAR=value) that
#                         suit it; vm/boot.sh puts the run's own after them,
#                         and for the same VAR the later one wins
#     EMU_SOURCE_BUILD    the project's build this run's binary comes from
#                         ("qemu", "bochs": scripts/lib/entry.sh
#                         shstk_emulator_build makes it and passes the binary in
#                         SHSTK_EMU_BIN), "" for the toolbox's emulator
#     EMU_BOOT_IMAGE      "yes" if it loads the kernel's boot image
#                         (config/arches.ini kernel_image) itself, which a
#                         kernel build then makes too; "no" if it boots
#                         the one qemu_kernel_image names beside it
#   emu_prepare    (optional) makes the boot medium, once OUT is set
#   emu_command    fills EMU_CMD (the command line) from KERNEL, INITRD,
#                  KERNEL_CMDLINE, OUT and optionally GDB_PORT,
#                  SHSTK_ROOTFS, and SHSTK_RR_MODE ("record" or "replay")
#                  with SHSTK_RR_DIR (where the recording is) where
#                  EMU_RECORD_REPLAY is yes; it may add to KERNEL_CMDLINE
#                  what this run needs (vm.json records the result),
#                  EMU_DESCRIPTION (what the binary is, for vm.json)
#                  and EMU_SNAPSHOT: the key of the snapshot the run is
#                  restored from ("" or unset for a cold boot; vm.json)
#
# What a boot needs comes from the script that starts it (entry.sh
# shstk_build_boot), never from a build here: SHSTK_EMU_BIN and
# SHSTK_EMU_DESCRIPTION, the project's binary; SHSTK_SNAPSHOT_BASE, the
# guest image a post-boot snapshot boots.
#
# Why these settings:
#  - arm64 "-M virt -cpu max" is the only way to get FEAT_GCS (QEMU >= 10.2).
#  - an arch whose config/arches.ini entry says qemu_from_source = yes runs
#    one of two QEMUs, SHSTK_QEMU (make QEMU=) says which, its qemu_default
#    when unset: "patched", Debian's QEMU 10.2.2 source with patches/qemu/,
#    the project's build for that arch (EMU_SOURCE_BUILD); or "stock", the
#    toolbox's Debian QEMU 11.1.  x86_64 (patched by default): the patches
#    add XSAVES and user-mode CET shadow stacks to TCG ("-cpu max" has all
#    of it) and the user SSP as gdb's pl3_ssp register; stock has no CET,
#    so the guest has no user shadow stack there.  riscv64 (patched by
#    default): patched fixes which PTEs are shadow stack pages (stock
#    makes a thread without shadow stacks spin on a load from one) and a
#    wrong jump after sspopchk in 10.2.2's TCG.  Other arches always
#    run the toolbox's QEMU.  The patched build's source package has no
#    firmware: it takes Debian's (seabios, OpenSBI, qemu-system-data) from
#    the toolbox with -L.  vm.json records which ("emu_build").
#  - two CPUs so the token race in the guest suite really races; QEMU runs
#    them on a host thread each (MTTCG).  One under gdb: with two, a stop
#    on one vCPU can come while the other is hitting a breakpoint too (any
#    fork in the guest passes the scenario's kernel stops), and the stub
#    can then report the first stop a second time on the next resume, the
#    task not having moved.  One vCPU means one stop at a time; the
#    scenario needs no second CPU.
#  - the console goes to a file; test results go to a second channel (a
#    virtio console, /dev/hvc0 in the guest) so kernel messages can never
#    interleave with KTAP.
#  - "-no-reboot" (and "panic=-1" in vm/boot.sh): a panic ends QEMU at once
#    instead of hanging until the timeout; the host finds the panic in
#    console.log.
#  - gdb: QEMU's gdbstub resolves names and takes hardware breakpoints on
#    user addresses; arm64's GCSPR_EL0 is in its system-register feature.
#  - Every run but a recording and its replays, and the first boot of a
#    kernel, is restored from a post-boot snapshot (docs/boot.md): a cold
#    boot of the snapshot's guest image to init's snapshot point, saved by
#    QMP ("migrate" to a file) once init says on the console it is there,
#    and restored with "-incoming file:".  It is made once per kernel image,
#    QEMU build, base guest image and machine (the bpftrace root
#    filesystem's disk or not: two snapshots, as a device cannot be added
#    at a restore; with it, init attaches the run's bpftrace scripts before
#    the snapshot point, so a trace run starts with them attached), kept in
#    the cache under the hash of all of those.  The machine is the same
#    at the restore but for the files of its console, results channel and
#    payload, which are the run's own; the payload, a virtio serial port
#    (shstk.payload), brings init's words of the command line and what the
#    run's guest image has that the snapshot's has not.  The console
#    appends, after the snapshot's boot, so a run's console.log still
#    shows the whole boot.  A gdb run is restored paused (-S), and
#    shstk_start_paused_vm (scripts/lib/vm.sh) lets gdb in once QEMU has
#    loaded the snapshot.  SHSTK_SNAPSHOT=0 boots cold.
#  - record/replay (SHSTK_RR_MODE): QEMU records every nondeterministic
#    input into SHSTK_RR_DIR/replay.bin under -icount, and its replay is
#    the same run again, instruction for instruction, that gdb can run
#    backwards (reverse-stepi, reverse-continue).  QEMU refuses it with
#    more than one CPU.  Reverse execution starts from a snapshot
#    ("init", taken at the start of the recording) that needs a qcow2
#    disk to live in, attached to nothing.  Record and replay must have the
#    same machine: no QMP and no vmcoreinfo device on the replay either;
#    the console and results files may differ (the replay writes them
#    again).  No virtio-serial: with it, a replay that loads a snapshot
#    never ends.

# shellcheck disable=SC2034  # read by scripts/lib, vm/boot.sh and the gdb scripts
emu_declare() {
	qemu_variant
	EMU_SMP=2
	[ -z "${GDB_PORT:-}" ] || EMU_SMP=1
	case "${SHSTK_RR_MODE:-}" in
	"") ;;
	record | replay) EMU_SMP=1 ;;
	*) shstk_die "SHSTK_RR_MODE must be record or replay (is '$SHSTK_RR_MODE')" ;;
	esac
	EMU_HOST_THREADS=2
	EMU_BREAKPOINTS=hardware
	EMU_POWEROFF_EXIT=0
	EMU_RECORD_REPLAY=yes
	EMU_NO_REVERSE_WHY=
	if [ "$QEMU_VARIANT" = patched ]; then
		shstk_arch_set EMU_NO_REVERSE_WHY qemu_patched_reverse
		[ "$EMU_NO_REVERSE_WHY" != yes ] || EMU_NO_REVERSE_WHY=
	fi
	EMU_SOURCE_BUILD=
	[ "$QEMU_VARIANT" != patched ] || EMU_SOURCE_BUILD=qemu
	EMU_BOOT_IMAGE=no
	EMU_QMP=yes
	[ -z "${SHSTK_RR_MODE:-}" ] || EMU_QMP=no
	EMU_RESULTS_DEV=/dev/hvc0
	# A recording's results share the serial line (see emu_command).
	[ -z "${SHSTK_RR_MODE:-}" ] || EMU_RESULTS_DEV=/dev/$KCONSOLE
	# The first virtio-blk disk.
	EMU_ROOTFS_DEV=/dev/vda
	EMU_CMDLINE=
	# What the arch's shadow stacks need of QEMU, from config/arches.ini:
	# the variant that lacks them says why, and then shows no register.
	shstk_arch_set EMU_SSP_REGISTER ssp_register
	shstk_arch_set EMU_NO_SHSTK_WHY "qemu_${QEMU_VARIANT}_no_shstk_why"
	[ -z "$EMU_NO_SHSTK_WHY" ] || EMU_SSP_REGISTER=
	shstk_arch_set EMU_XSTATE_FORMAT "qemu_${QEMU_VARIANT}_xstate_format"
	shstk_arch_set EMU_KERNEL_IBT "qemu_${QEMU_VARIANT}_kernel_ibt"
}

# The image QEMU boots: config/arches.ini's qemu_kernel_image, beside the
# boot image (KERNEL) in its build directory.  On x86 that is vmlinux
# itself, entered through PVH: SeaBIOS still runs, but not the real-mode
# setup or the decompressor, which took most of a boot under TCG.  A KASAN
# kernel boots its boot image: PVH enters instrumented code before KASAN's
# shadow exists, and the first check of it faults (then a triple fault).
#   qemu_kernel VAR
# shellcheck disable=SC2153  # KIMAGE and QEMU_KIMAGE: set by shstk_arch_vars
qemu_kernel() {
	local kimage=$KERNEL dir
	if [ "$QEMU_KIMAGE" != "$KIMAGE" ]; then
		dir=${KERNEL%"/$KIMAGE"}
		[ "$dir" != "$KERNEL" ] ||
			shstk_die "kernel image $KERNEL is not a build directory's $KIMAGE"
		[ -f "$dir/.config" ] ||
			shstk_die "no $dir/.config: cannot tell whether that kernel has KASAN, which decides the image QEMU boots"
		grep -q '^CONFIG_KASAN=y' "$dir/.config" ||
			kimage=$dir/$QEMU_KIMAGE
	fi
	[ -f "$kimage" ] || shstk_die "no $kimage (make kernel ARCH=$ARCH)"
	printf -v "$1" '%s' "$kimage"
}

emu_command() {
	local image replay_append
	qemu_kernel image
	if [ -n "${SHSTK_RR_MODE:-}" ]; then
		# The recording and its replays boot the same command line.
		shstk_arch_fact_to replay_append "$ARCH" qemu_replay_append
		KERNEL_CMDLINE+=${replay_append:+ $replay_append}
	fi
	qemu_select
	EMU_SNAPSHOT=
	if [ -z "${SHSTK_RR_MODE:-}" ] && shstk_snapshot_wanted; then
		qemu_restore "$image"
		[ -n "$QEMU_BOOT_COLD" ] || return 0
	fi
	qemu_base "$image" "$INITRD" "$KERNEL_CMDLINE"
	if [ -n "${SHSTK_RR_MODE:-}" ]; then
		qemu_rr_channel "$OUT"
		qemu_rootfs
		qemu_record_replay
	else
		qemu_channels "$OUT"
		qemu_rootfs
		qemu_gdb_devices
	fi
	qemu_gdb
}

# The machine's builders, each adding one concern to EMU_CMD in the order
# QEMU needs no particular one of; a cold boot, a snapshot's boot and a
# restore call the same ones, so the machine a snapshot is restored into
# is the one it was saved from.

# qemu_base IMAGE INITRD CMDLINE: EMU_CMD, the machine (the arch's from
# config/arches.ini, the emulator's CPUs) booting IMAGE with INITRD and
# CMDLINE, with nothing attached yet.
qemu_base() {
	local machine cpu
	shstk_arch_set machine qemu_machine
	shstk_arch_set cpu qemu_cpu
	EMU_CMD=("${QEMU_BIN[@]}" -M "$machine" -cpu "$cpu" -smp "$EMU_SMP" -m 1G
		-kernel "$1" -initrd "$2" -append "$3"
		-nodefaults -display none -monitor none -no-reboot)
}

# qemu_virtio VAR: the suffix of the arch's virtio devices: "pci" on a PCI
# machine, "device" on virtio-mmio (config/arches.ini virtio).
qemu_virtio() {
	local transport
	shstk_arch_set transport virtio
	case "$transport" in
	pci) printf -v "$1" pci ;;
	mmio) printf -v "$1" device ;;
	*) shstk_die "config/arches.ini: virtio for $ARCH must be pci or mmio" ;;
	esac
}

# qemu_channels DIR: the console, appended to DIR/console.log (a restored
# run's starts with its snapshot's boot), and the results channel, a virtio
# console, to DIR/guest.out.
qemu_channels() {
	local virtio
	qemu_virtio virtio
	# shellcheck disable=SC2054  # commas inside QEMU option values
	EMU_CMD+=(-chardev "file,id=console,path=$1/console.log,append=on" -serial chardev:console
		-device "virtio-serial-$virtio"
		-chardev "file,id=results,path=$1/guest.out"
		-device virtconsole,chardev=results)
}

# qemu_rr_channel DIR: under record/replay the console and the results
# share the serial line, written to both files: a replay that loads a
# snapshot (reverse execution does) with a virtio-serial device never
# ends, on either transport.
qemu_rr_channel() {
	# shellcheck disable=SC2054  # commas inside QEMU option values
	EMU_CMD+=(-chardev "file,id=serial,path=$1/console.log,logfile=$1/guest.out"
		-serial chardev:serial)
}

# qemu_payload_port [FILE]: the port a post-boot snapshot's guest reads
# its payload from (guest/init.sh shstk.snapshot=port:shstk.payload),
# sending FILE, or nothing for the boot a snapshot is saved from (a file
# chardev without input-path: the guest's read waits, where on a null one
# it would end at once).  And the snapshot's memory in mapped-ram form,
# each page at its own offset of the file and a bitmap of the pages
# written, so that a restore reads only those, where the stream form
# handles every page of the 1 GiB one by one (docs/boot.md); the saving
# and the restoring QEMU both need the capability.
qemu_payload_port() {
	local input=${1:+,input-path=$1}
	# shellcheck disable=SC2054  # commas inside QEMU option values
	EMU_CMD+=(-chardev "file,id=payload,path=/dev/null$input"
		-device virtserialport,chardev=payload,name=shstk.payload
		-global migration.mapped-ram=on)
}

# qemu_rootfs: the bpftrace root filesystem's disk image (SHSTK_ROOTFS,
# scripts/lib/build.sh shstk_rootfs_disk), if this run has one, read-only: runs
# side by side share it.
qemu_rootfs() {
	local virtio
	[ -n "${SHSTK_ROOTFS:-}" ] || return 0
	qemu_virtio virtio
	# shellcheck disable=SC2054  # commas inside QEMU option values
	EMU_CMD+=(-drive "file=$SHSTK_ROOTFS,format=raw,if=none,id=rootfs,readonly=on"
		-device "virtio-blk-$virtio,drive=rootfs")
}

# qemu_gdb_devices: for gdb's memory dumps (a run gdb attaches to), the
# device where the kernel (FW_CFG_SYSFS) says where its vmcoreinfo note
# is, which QEMU then puts in the dump (QMP's dump-guest-memory).
qemu_gdb_devices() {
	[ -n "${GDB_PORT:-}" ] || return 0
	EMU_CMD+=(-device vmcoreinfo)
}

# qemu_record_replay: record or replay (SHSTK_RR_MODE) into or from
# SHSTK_RR_DIR under -icount, with the disk reverse execution keeps its
# snapshots on and the arch's options for it (config/arches.ini).
qemu_record_replay() {
	local options
	# shellcheck disable=SC2054  # commas inside QEMU option values
	EMU_CMD+=(-icount "shift=auto,rr=$SHSTK_RR_MODE,rrfile=$SHSTK_RR_DIR/replay.bin,rrsnapshot=init"
		-rtc clock=vm -drive "file=$(rr_snapshots),if=none,id=rr-snapshots,format=qcow2")
	shstk_arch_fact_to options "$ARCH" qemu_replay_options
	read -ra options <<<"$options"
	EMU_CMD+=("${options[@]}")
}

# qemu_gdb: a paused VM for gdb (GDB_PORT): paused at its first
# instruction, or just restored, until gdb continues it; with QMP beside
# the gdbstub, for dump-guest-memory.  Not on a replay: it would not be
# the machine that was recorded.
qemu_gdb() {
	[ -n "${GDB_PORT:-}" ] || return 0
	EMU_CMD+=(-gdb "tcp:127.0.0.1:$GDB_PORT" -S)
	# shellcheck disable=SC2054  # commas inside QEMU option values
	[ -n "${SHSTK_RR_MODE:-}" ] || EMU_CMD+=(-qmp "unix:$(shstk_qmp_socket "$OUT"),server=on,wait=off")
}

# qemu_snapshot_machine IMAGE BASE KWORDS DIR [PAYLOAD]: the machine of a
# post-boot snapshot, booting BASE with KWORDS, its channels in DIR, its
# payload port sending PAYLOAD (a restored run) or nothing (the boot the
# snapshot is saved from).
qemu_snapshot_machine() {
	qemu_base "$1" "$2" "$3"
	qemu_channels "$4"
	qemu_payload_port "${5:-}"
	qemu_rootfs
	qemu_gdb_devices
}

# qemu_snapshot_key IMAGE BASE KWORDS: what a post-boot snapshot depends
# on, hashed: the machine's builders as this shell has them, the QEMU
# binary (the project's by its content, the toolbox's by the toolbox's
# stamp, which also covers the firmware), the kernel and base images, the
# kernel's words, the machine's facts and this run's devices (CPUs, the
# root filesystem's disk, gdb's vmcoreinfo).
qemu_snapshot_key() {
	local key machine cpu transport toolbox
	shstk_toolbox_stamps_to toolbox "$ARCH"
	shstk_arch_set machine qemu_machine
	shstk_arch_set cpu qemu_cpu
	shstk_arch_set transport virtio
	key=$({
		declare -f qemu_base qemu_virtio qemu_channels qemu_payload_port qemu_rootfs \
			qemu_gdb_devices qemu_snapshot_machine
		echo "$EMU_DESCRIPTION"
		echo "$toolbox"
		[ "$QEMU_VARIANT" != patched ] || shstk_file_sha256 "$SHSTK_EMU_BIN"
		shstk_file_sha256 "$1"
		shstk_file_sha256 "$2"
		echo "$3"
		echo "$ARCH $machine $cpu $transport smp=$EMU_SMP gdb=${GDB_PORT:+yes}"
		# The guest reads the disk before the save: the same one after.
		[ -z "${SHSTK_ROOTFS:-}" ] || stat -c 'rootfs %s %Y' "$SHSTK_ROOTFS"
	} | sha256sum)
	echo "${key:0:16}"
}

# A run restored from the post-boot snapshot of the snapshot's guest image
# (SHSTK_SNAPSHOT_BASE) on this kernel, QEMU and machine: made once
# and kept in the cache under the hash of all of those (the bpftrace root
# filesystem or not: two snapshots, as a device cannot be added at a
# restore).  The machine is the same at the restore, but for the files of
# its console, results and payload: its own.  What is this run's comes on
# the payload port: init's words and what its guest image has that the
# snapshot's has not.  QEMU_BOOT_COLD=1 instead when the run is to boot
# cold (below).
qemu_restore() {
	local image=$1 kwords base key dir cpio
	shstk_snapshot_words "$KERNEL_CMDLINE"
	kwords="$SNAPSHOT_KWORDS shstk.snapshot=port:shstk.payload"
	shstk_snapshot_base base
	key=$(qemu_snapshot_key "$image" "$base" "$kwords")
	dir=$SHSTK_CACHE/qemu-snapshots/$key
	[ -d "${dir%/*}" ] || mkdir -p "${dir%/*}"
	# The first boot of a kernel (and machine) is a cold one, a third of
	# what making its snapshot takes (a cold boot and a save), so that a
	# rebuilt kernel's first results come first; the next run makes it.
	QEMU_BOOT_COLD=''
	if [ ! -f "$dir/snapshot" ] && [ ! -e "$dir.booted" ]; then
		touch "$dir.booted"
		shstk_msg "booting cold: the first boot of this kernel here (the next run makes its snapshot ${dir##*/})"
		QEMU_BOOT_COLD=1
		return 0
	fi
	# Each is the guest's memory once booted, some 50 MB.
	shstk_snapshot_make "$dir" QEMU snapshot console.log qemu_snapshot_save "$image" "$base" "$kwords"
	touch "$dir"	# in use: see shstk_snapshot_prune
	cpio=$(shstk_snapshot_payload_cpio "$dir" "$base" "$INITRD") || shstk_die "making the snapshot payload of $INITRD failed"
	{
		printf 'shstk-payload %d\n%s\n' "$(stat -c %s "$cpio")" "$SNAPSHOT_IWORDS"
		cat "$cpio"
	} >"$OUT/payload"
	{
		cat "$dir/console.log"
		echo "shstk-lab: the host restored this boot from the QEMU snapshot $key"
	} >"$OUT/console.log"
	qemu_snapshot_machine "$image" "$base" "$kwords" "$OUT" "$OUT/payload"
	EMU_CMD+=(-incoming "file:$dir/snapshot")
	qemu_gdb
	# shellcheck disable=SC2034  # read by vm/boot.sh
	EMU_SNAPSHOT=$key
}

# qemu_snapshot_save TMP DIR IMAGE BASE KWORDS (shstk_snapshot_make's SAVE):
# boot BASE cold with KWORDS, saved into TMP/snapshot once init is at its
# snapshot point.
qemu_snapshot_save() {
	local tmp=$1 pid saver rc=0 qemu_rc=0 why='' traps
	: >"$tmp/console.log"
	qemu_snapshot_machine "$3" "$4" "$5" "$tmp"
	EMU_CMD+=(-qmp "unix:$tmp/qmp.sock,server=on,wait=off")
	# Both children end with this script, whatever stops it: a wait ends
	# at a trapped TERM, and the trap makes it run the EXIT one, which an
	# INT's exit runs too (vm/boot.sh's INT trap).  Set before they start,
	# and by the job table, not $!: a signal between a start and its
	# "pid=$!" must stop that child too.  The boot's own EXIT and TERM
	# traps come back after: without them, a signal while the run's VM
	# starts would leave it running.
	traps=$(trap -p EXIT TERM)
	trap 'kill -TERM $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
	# A second TERM (each level above passes one on) must not cut the
	# EXIT trap's cleanup short.
	trap 'trap "" TERM INT; exit 143' TERM
	"$SHSTK_TOP/scripts/tools/tb" timeout -k 5 300 "${EMU_CMD[@]}" </dev/null >"$tmp/emulator.log" 2>&1 &
	pid=$!
	shstk_py "$SHSTK_TOP/scripts/vm/qmp.py" snapshot "$tmp/qmp.sock" "$tmp/console.log" "$pid" \
		"$tmp/snapshot" 240 &
	saver=$!
	wait "$saver" || rc=$?
	if [ "$rc" -ne 0 ] && kill -0 "$pid" 2>/dev/null; then
		why="the saver failed while QEMU still ran (this script stopped QEMU)"
		kill -TERM "$pid" 2>/dev/null || true
	fi
	wait "$pid" || qemu_rc=$?
	if [ -n "$traps" ]; then
		eval "$traps"
	else
		trap - EXIT TERM
	fi
	if [ "$rc" -ne 0 ] || [ ! -s "$tmp/snapshot" ]; then
		if [ -z "$why" ]; then
			why="QEMU exited $qemu_rc"
			[ "$qemu_rc" -ne 0 ] || [ -s "$tmp/console.log" ] ||
				why+=" with nothing on the console (a reset before the console came up, as a triple fault early in boot)"
		fi
		shstk_die "making the QEMU snapshot failed: $why; see $tmp/console.log and $tmp/emulator.log" \
			"(SHSTK_SNAPSHOT=0 boots cold)"
	fi
}

# The snapshot disk of a recording or a replay, its own and empty: the
# recording writes its "init" snapshot there, a replay loads it (it must be
# the recording's, so a replay's disk starts as a copy of it) and adds the
# ones gdb's reverse execution takes.  A snapshot left from another run
# would be taken for one of this one.
emu_prepare() {
	[ -n "${SHSTK_RR_MODE:-}" ] || return 0
	mkdir -p "$SHSTK_RR_DIR"
	if [ "$SHSTK_RR_MODE" = record ]; then
		rm -f "$SHSTK_RR_DIR/replay.bin" "$(rr_snapshots)"
		shstk_tb qemu-img create -q -f qcow2 "$(rr_snapshots)" 128M
	else
		[ -f "$SHSTK_RR_DIR/rr-snapshots.qcow2" ] ||
			shstk_die "no $SHSTK_RR_DIR/rr-snapshots.qcow2: the recording's snapshot disk"
		cp "$SHSTK_RR_DIR/rr-snapshots.qcow2" "$(rr_snapshots)"
	fi
}

# The snapshot disk this run uses: the recording's own, beside its log; a
# replay's copy, in its output directory.
rr_snapshots() {
	if [ "$SHSTK_RR_MODE" = record ]; then
		echo "$SHSTK_RR_DIR/rr-snapshots.qcow2"
	else
		echo "$OUT/rr-snapshots.qcow2"
	fi
}

# Which QEMU runs: sets QEMU_VARIANT from SHSTK_QEMU (make QEMU=), by
# default the arch's qemu_default (config/arches.ini), always stock for an
# arch without a project build (qemu_from_source); dies on anything else.
qemu_variant() {
	local from_source
	shstk_arch_set QEMU_VARIANT qemu_default
	QEMU_VARIANT=${SHSTK_QEMU:-$QEMU_VARIANT}
	case "$QEMU_VARIANT" in
	patched | stock) ;;
	*) shstk_die "SHSTK_QEMU (make QEMU=) must be patched or stock (is '$SHSTK_QEMU')" ;;
	esac
	shstk_arch_set from_source qemu_from_source
	[ "$from_source" = yes ] || QEMU_VARIANT=stock
}

# The version of the toolbox's QEMU binary PROG, asked once per toolbox (its
# stamp) and toolbox setting, not at every boot, where asking through tb
# would be a noticeable part of a restored run.
stock_qemu_version() {
	local prog=$1 cache=$SHSTK_CACHE/qemu/stock-$1.version stamp='' key have='' v=''
	shstk_toolbox_stamps_to stamp "$ARCH"
	key="$stamp SHSTK_TOOLBOX=${SHSTK_TOOLBOX:-auto}"
	{ read -r have && read -r v; } 2>/dev/null <"$cache" || true
	if [ "$have" != "$key" ] || [ -z "$v" ]; then
		mkdir -p "${cache%/*}"
		v=$(shstk_tb "$prog" --version | sed -n '1s/.*version //p') || v=
		# Not kept when the binary did not answer: asked again next time.
		[ -n "$v" ] || { echo "unknown version"; return 0; }
		printf '%s\n%s\n' "$key" "$v" >"$cache.$$"
		mv "$cache.$$" "$cache"
	fi
	echo "$v"
}

# Which QEMU: sets QEMU_BIN (the binary and its firmware options) and
# EMU_DESCRIPTION (what the binary is, for the run's record, vm.json), and
# says it.
qemu_select() {
	local prog
	shstk_arch_set prog qemu
	case "$QEMU_VARIANT" in
	stock)
		QEMU_BIN=("$prog")
		EMU_DESCRIPTION="stock $(stock_qemu_version "$prog")"
		;;
	patched)
		[ -n "${SHSTK_EMU_BIN:-}" ] ||
			shstk_die "no patched QEMU binary given (SHSTK_EMU_BIN): the script that starts a boot builds it (shstk_build_boot)"
		[ "${SHSTK_EMU_BIN##*/}" = "$prog" ] ||
			shstk_die "SHSTK_EMU_BIN is $SHSTK_EMU_BIN, not the $prog that $ARCH boots"
		QEMU_BIN=("$SHSTK_EMU_BIN" -L /usr/share/seabios -L /usr/share/qemu)
		EMU_DESCRIPTION="patched $SHSTK_EMU_DESCRIPTION"
		;;
	esac
	shstk_msg "$ARCH QEMU: $EMU_DESCRIPTION"
}

