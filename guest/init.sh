#!/bin/busybox sh
# shellcheck shell=dash
# SPDX-License-Identifier: GPL-2.0
#
# Not "set -e": the init must go on to the next program and to power-off
# whatever one of them does.
#
# /init of the shstk-lab guest.  Runs every program in /tests/list and
# writes their output, framed by markers, to the results channel (a virtio
# console or a second serial port, named by shstk.out= on the command line),
# apart from the kernel's console.  Then powers off.  The host reads the
# channel and the console log and decides; nothing here judges.

/bin/busybox mkdir -p /proc /sys /dev /tmp /run
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s /bin
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

out=/dev/console
read -r cmdline </proc/cmdline
for arg in $cmdline; do
	case "$arg" in
	shstk.out=*) out=${arg#shstk.out=} ;;
	shstk.why=*) SHSTK_LAB_NO_SHSTK_WHY=$(echo "${arg#shstk.why=}" | tr _ ' ')
		export SHSTK_LAB_NO_SHSTK_WHY ;;
	esac
done

say() { echo "shstk-lab: $*" >/dev/console; }
emit() { echo "$*" >>"$out"; }

flags=$(grep -m1 -E '^(flags|Features)' /proc/cpuinfo)
case "$flags" in
*user_shstk* | *" gcs"*) shstk=yes ;;
*) shstk=no ;;
esac
say "kernel $(uname -r), cpu shadow stack: $shstk"
emit "SHSTK-LAB GUEST kernel=$(uname -r) arch=$(uname -m) cpu_shstk=$shstk"

while read -r name prog timeout; do
	case "$name" in '' | '#'*) continue ;; esac
	say "running $name"
	emit "SHSTK-LAB BEGIN $name"
	# Run from the program's directory: some selftests exec helpers beside them.
	(cd "$(dirname "$prog")" && timeout "$timeout" "$prog") >>"$out" 2>&1
	rc=$?
	emit "SHSTK-LAB END $name rc=$rc"
	say "$name exited $rc"
done </tests/list

emit "SHSTK-LAB DONE"
sync
poweroff -f
