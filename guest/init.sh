#!/bin/busybox sh
# shellcheck shell=dash
# SPDX-License-Identifier: GPL-2.0
#
# Not "set -e": the init must go on to the next program and to power-off
# whatever one of them does.
#
# /init of the shstk-lab guest.  Runs every program in /tests/list (or the
# ones shstk.tests= chooses, below) and writes their output, framed by
# markers, to the results channel (a virtio console or a second serial
# port, named by shstk.out= on the command line), apart from the kernel's
# console.  Then powers off.  The host reads the channel and the console
# log and decides; nothing here judges.

/bin/busybox mkdir -p /proc /sys /dev /tmp /run
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s /bin
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
read -r cmdline </proc/cmdline

# What this machine is, asked before the snapshot point (below): a run
# restored from there is the same machine, and every fork after the
# restore delays its first program (tens of milliseconds each under TCG).
# The arch's /proc/cpuinfo line and word for user shadow stacks, from
# config/arches.ini (scripts/build/guest.sh writes them here); a word ends at
# a space or, in riscv's isa string, at an underscore.
# shellcheck source=/dev/null  # written by scripts/build/guest.sh
. /tests/arch.env
flags=$(grep -m1 "^${SHSTK_CPUINFO_FIELD}[[:space:]]*:" /proc/cpuinfo)
case " ${flags#*:} " in
*[_\ ]"$SHSTK_CPUINFO_FLAG"[_\ ]*) shstk=yes ;;
*) shstk=no ;;
esac
# x86, from the ring buffer (the console's loglevel hides these lines), in
# one pass, since each fork costs under TCG: the FPU state format the kernel
# chose ("compacted" only with XSAVES), and whether it runs with indirect
# branch tracking, which it says once its boot selftest has passed; a
# failed selftest on any CPU wins.
xstate='' ibt=''
klines=$(dmesg 2>/dev/null | grep -e 'x86/fpu: Enabled xstate features' \
	-e 'Indirect Branch Tracking enabled' -e 'IBT selftest: Failed' || true)
while IFS= read -r line; do
	case $line in
	*'x86/fpu: Enabled xstate features'*)
		[ -z "$xstate" ] || continue
		# "... features 0x1a1f, context size is 1008 bytes, using
		# 'compacted' format.": taken apart in the shell.
		features=${line#*features }
		features=${features%%,*}
		format=${line#*"using '"}
		format=${format%%"'"*}
		xstate=" xstate=$features,$format"
		;;
	*'IBT selftest: Failed'*) ibt=" kernel_ibt=failed" ;;
	*'Indirect Branch Tracking enabled'*) [ -n "$ibt" ] || ibt=" kernel_ibt=on" ;;
	esac
done <<EOF
$klines
EOF
uts=$(uname -rm)
release=${uts% *}

# The words of the command line this init acts on: the kernel's, and
# after a restore (below) the payload's, which add to them.
out=/dev/console
trace=
comm=
rootfs=
snapshot=
tests=
words() {
	# A word may hold globs (shstk.tests=): never file names.
	set -f
	for arg in $1; do
		case "$arg" in
		shstk.out=*) out=${arg#shstk.out=} ;;
		shstk.tests=*) tests=${arg#shstk.tests=} ;;
		shstk.snapshot=*) snapshot=${arg#shstk.snapshot=} ;;
		shstk.trace=*) trace=${arg#shstk.trace=} ;;
		shstk.trace_comm=*) comm=${arg#shstk.trace_comm=} ;;
		shstk.rootfs=*) rootfs=${arg#shstk.rootfs=} ;;
		shstk.why=*)
			why=${arg#shstk.why=}
			# shellcheck disable=SC3060  # busybox's ash has it; tr would fork
			export SHSTK_LAB_NO_SHSTK_WHY="${why//_/ }"
			;;
		esac
	done
	set +f
}
words "$cmdline"

say() { echo "shstk-lab: $*" >/dev/console; }
emit() { echo "$*" >>"$out"; }
# wait_for CMD...: CMD until it succeeds, ten times a second for up to ten
# seconds: disks and ports are probed asynchronously.
wait_for() {
	local i=0
	until "$@"; do
		[ "$i" -lt 100 ] || return 1
		i=$((i + 1))
		sleep 0.1
	done
}

# bpftrace lives in a Debian root filesystem, read-only: an EROFS disk, the
# device shstk.rootfs= names.  It runs chrooted there, with the kernel's
# filesystems and /trace bound in.
mount_rootfs() {
	mkdir -p /rootfs
	case "$rootfs" in
	/dev/*) ;;
	*)
		say "no root filesystem for bpftrace (shstk.rootfs='$rootfs')"
		return 1
		;;
	esac
	wait_for test -b "$rootfs"
	mount -t erofs -o ro "$rootfs" /rootfs
}

# The bpftrace root filesystem, mounted once for all the scripts.
trace_root() {
	mount_rootfs || return 1
	mount -t proc proc /rootfs/proc
	mount -t sysfs sysfs /rootfs/sys
	mount -t devtmpfs devtmpfs /rootfs/dev
	mount -t tmpfs tmpfs /rootfs/tmp
	mount -t tracefs tracefs /rootfs/sys/kernel/tracing
	mount -t debugfs debugfs /rootfs/sys/kernel/debug
	mount --bind /trace /rootfs/mnt/trace
}

# trace_start SCRIPT COMM: one bpftrace, its pid in /tmp/trace.SCRIPT.pid.
trace_start() {
	say "starting bpftrace $1 for $2"
	chroot /rootfs /usr/bin/bpftrace "/mnt/trace/$1.bt" "$2" >"/tmp/trace.$1.log" 2>&1 &
	echo $! >"/tmp/trace.$1.pid"
}

# trace_where SCRIPT: where each thread of a bpftrace that has not attached
# yet is, in the kernel, on the console.  Taken on the way, after 90 and
# 180 s, well past a normal first attach, so that the console says where a
# stuck one waits before the host's timeout ends the run.
trace_where() {
	pid=$(cat "/tmp/trace.$1.pid")
	for task in /proc/"$pid"/task/*; do
		[ -r "$task/stat" ] || continue
		read -r stat <"$task/stat"
		# "tid (comm) state ...": comm may hold spaces, the state follows ") ".
		state=${stat#*") "}
		say "bpftrace $1 not attached: task ${task##*/} state ${state%% *}" \
			"wchan $(cat "$task/wchan" 2>/dev/null)"
		sed 's/^/shstk-lab:   /' "$task/stack" >/dev/console 2>/dev/null
	done
	say "bpftrace $1 so far: $(tail -n 2 "/tmp/trace.$1.log" | tr '\n' ' ')"
}

# trace_ready SCRIPT: wait for its BEGIN probe, which runs once every probe
# is attached.
trace_ready() {
	i=0
	while ! grep -q "^TRACE READY" "/tmp/trace.$1.log"; do
		kill -0 "$(cat "/tmp/trace.$1.pid")" 2>/dev/null || return 1
		i=$((i + 1))
		case "$i" in 900 | 1800) trace_where "$1" ;; esac
		[ "$i" -lt 1800 ] || return 1
		sleep 0.1
	done
	say "bpftrace $1 attached after $((i / 10)) s"
}

# trace_stop SCRIPT [RC]: stop it (RC: it never started) and emit its log.
trace_stop() {
	rc=${2:-}
	if [ -z "$rc" ]; then
		kill -INT "$(cat "/tmp/trace.$1.pid")" 2>/dev/null
		wait "$(cat "/tmp/trace.$1.pid")"
		rc=$?
	fi
	emit "SHSTK-LAB BEGIN trace:$1"
	cat "/tmp/trace.$1.log" >>"$out" 2>/dev/null
	emit "SHSTK-LAB END trace:$1 rc=$rc"
}

# shstk.trace=A,B,...: every script attached at once, each with a log of
# its own, tracing the command shstk.trace_comm= names (the first program
# the host's list runs).  Before the snapshot point, so that a run restored
# from there starts with them attached: bpftrace's start-up under TCG is
# longer than the rest of a trace run.  The ones that did not start are
# reported with the programs' results.
traces=$(echo "$trace" | tr , ' ')
broken=
if [ -n "$traces" ]; then
	[ -n "$comm" ] || say "shstk.trace needs shstk.trace_comm=, the command to trace"
	if [ -n "$comm" ] && trace_root; then
		for t in $traces; do
			trace_start "$t" "$comm"
		done
	fi
	started=
	for t in $traces; do
		if [ -f "/tmp/trace.$t.pid" ] && trace_ready "$t"; then
			started="$started $t"
		else
			say "bpftrace $t did not start"
			[ ! -f "/tmp/trace.$t.pid" ] || kill "$(cat "/tmp/trace.$t.pid")" 2>/dev/null
			broken="$broken $t"
		fi
	done
	traces=$started
fi

# shstk.snapshot=SOURCE: the emulator saves this boot here, and every run
# restored from it goes on from here with a payload of its own from
# SOURCE: the words of its command line for this init (/proc/cmdline is
# the snapshot's), and what its guest image has that this one has not (a
# cpio archive), unpacked over this one.  From then on the run is a cold
# boot's.  SOURCE is
#   /dev/NAME   a disk (Bochs): a first 4 KiB block "shstk-payload BYTES",
#               then the words, then the archive at 4 KiB; Bochs saves at
#               snapshot_point's magic instruction and resumes after it;
#   port:NAME   a virtio serial port (QEMU): "shstk-payload BYTES", the
#               words, then the archive; the host saves once the line
#               "shstk-lab: snapshot point" is on the console, and the read
#               waits for the restored run's host to send it.
# payload_source: src=, the device the payload comes from, once it is
# there (a virtio serial port: the one of that name).
payload_source() {
	case "$snapshot" in
	port:*)
		for p in /sys/class/virtio-ports/*; do
			[ "$(cat "$p/name" 2>/dev/null)" != "${snapshot#port:}" ] || { src=/dev/${p##*/}; return 0; }
		done
		return 1
		;;
	*) [ -b "$snapshot" ] && src=$snapshot ;;
	esac
}
# payload_unpack: the archive on stdin over this image, or the run ends: it
# would go on with the snapshot's programs.  One process, cpio, and nothing
# left to remove, because every process after a restore is slow: the
# restored guest's code is translated afresh.
payload_unpack() {
	cd / || return
	if ! cpio -i -d -u 2>/tmp/payload.err; then
		echo "shstk-lab: the payload from $snapshot does not unpack: $(cat /tmp/payload.err)" >/dev/kmsg
		poweroff -f
	fi
}
if [ -n "$snapshot" ]; then
	# The source must be there before the save.
	src=
	wait_for payload_source
	echo "shstk-lab: snapshot point" >/dev/console
	/bin/snapshot_point /dev/console
	magic=
	case "$snapshot" in
	port:*)
		# read takes a byte at a time from a device that cannot seek:
		# the archive is left whole for cpio, which reads it up to its
		# trailer and no further.
		[ -z "$src" ] || {
			read -r magic bytes && read -r cmdline &&
				[ "$magic" = shstk-payload ] && payload_unpack
		} <"$src"
		;;
	*)
		# Direct I/O: the kernel cached what it read of the disk before
		# the save (its partition table), and the payload is new.
		dd if="$snapshot" of=/tmp/payload.head iflag=direct bs=4096 count=1 2>/dev/null
		{ read -r magic bytes; read -r cmdline; } </tmp/payload.head
		# In 1 MiB requests, because each request costs the emulated disk an
		# interrupt and the guest a command; into a file, because under
		# Bochs dd to a file and cpio from it are several times quicker
		# than a pipeline of the two (docs/boot.md).  The disk's zeros
		# after the archive's trailer are not cpio's concern.
		if [ "$magic" = shstk-payload ]; then
			dd if="$snapshot" of=/tmp/payload.cpio iflag=direct,skip_bytes bs=1048576 \
				skip=4096 count=$(((bytes + 1048575) / 1048576)) 2>/dev/null
			payload_unpack </tmp/payload.cpio
		fi
		;;
	esac
	if [ "$magic" != shstk-payload ]; then
		# The kernel's log is written out at once; the console's tty
		# would lose the line to the power-off.
		echo "shstk-lab: no payload from $snapshot after the restore" >/dev/kmsg
		poweroff -f
	fi
	words "$cmdline"
	# What the kernel hands init as its environment: NAME=value words.
	set -f
	for arg in $cmdline; do
		case "${arg%%=*}" in
		"$arg" | '' | [0-9]* | *[!A-Za-z0-9_]*) ;;
		*) export "${arg?}" ;;
		esac
	done
	set +f
fi

say "kernel $release, cpu shadow stack: $shstk${xstate:+, FPU state:$xstate}${ibt:+, kernel IBT: ${ibt#*=}}"
emit "SHSTK-LAB GUEST kernel=$release arch=${uts##* } cpu_shstk=$shstk$xstate$ibt"
for t in $broken; do
	trace_stop "$t" 255
done

# shstk.tests=NAME[:GLOB],...: the programs the host's TESTS= chose
# (scripts/lib/entry.sh shstk_tests_select), by name, each whole or with
# globs of the cases to run in it.  chosen NAME: whether it chose the
# program NAME; args, the -t options for its cases (empty: every case).
# Without shstk.tests= every program is chosen.
chosen() {
	local item found=''
	args=
	[ -n "$tests" ] || return 0
	set -f
	IFS=,
	for item in $tests; do
		case "$item" in
		"$1") found=whole ;;
		"$1":*)
			[ -n "$found" ] || found=cases
			args="$args -t ${item#"$1":}"
			;;
		esac
	done
	unset IFS
	set +f
	[ "$found" != whole ] || args=
	[ -n "$found" ]
}

[ -z "$tests" ] || emit "SHSTK-LAB SELECTION $tests"
while read -r name prog timeout; do
	case "$name" in '' | '#'*) continue ;; esac
	if ! chosen "$name"; then
		emit "SHSTK-LAB NOT-SELECTED $name"
		continue
	fi
	say "running $name${args:+ with$args}"
	emit "SHSTK-LAB BEGIN $name"
	# Run from the program's directory (its path is absolute): some
	# selftests exec helpers beside them.  The -t globs reach it as they
	# are, a word each.
	# shellcheck disable=SC2086
	(cd "${prog%/*}/" && set -f && timeout "$timeout" "$prog" $args) >>"$out" 2>&1
	rc=$?
	emit "SHSTK-LAB END $name rc=$rc"
	say "$name exited $rc"
done </tests/list

for t in $traces; do
	trace_stop "$t"
done
# On a kernel with kmemleak, scan now and put any report on the console,
# where the host looks for it.
if [ -w /sys/kernel/debug/kmemleak ]; then
	echo scan >/sys/kernel/debug/kmemleak
	cat /sys/kernel/debug/kmemleak >/tmp/kmemleak
	cat /tmp/kmemleak >/dev/console
	# Said either way, so a clean verdict shows the scan ran.
	say "kmemleak scan: $(grep -c 'unreferenced object' /tmp/kmemleak) unreferenced objects"
fi
emit "SHSTK-LAB DONE"
sync
poweroff -f
