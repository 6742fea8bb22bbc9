# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2153  # SHSTK_* and the arch variables: from core.sh, sourced first
#
# The VM layer's helpers (after core.sh): loading an emulator backend
# (scripts/vm/emulators/), a VM paused for gdb, and the post-boot
# snapshots every backend shares.  The VM layer boots, stops and snapshots
# what it is given (entry.sh shstk_build_boot makes it) and builds nothing.
# Sourced, never run.

# The emulator (after shstk_arch_vars): EMU, a backend in scripts/vm/emulators/
# (default qemu), checked and loaded with what it declares for this arch
# (emu_declare: see vm/emulators/qemu.sh), and EMU_OUT, the directory its logs
# go to (out/<arch> for the default emulator, out/<arch>-<emu> for another,
# so one never overwrites the other's).
SHSTK_DEFAULT_EMU=qemu

# The emulator backends there are, the default first.
#   shstk_emulators
shstk_emulators() {
	local f
	echo "$SHSTK_DEFAULT_EMU"
	for f in "$SHSTK_TOP"/scripts/vm/emulators/*.sh; do
		f=$(basename "$f" .sh)
		[ "$f" = "$SHSTK_DEFAULT_EMU" ] || echo "$f"
	done
}

# EMU must name a backend in scripts/vm/emulators/; dies naming the ones
# there are.   shstk_emu_check EMU
shstk_emu_check() {
	if [[ ! $1 =~ ^[a-z0-9_-]+$ ]] || [ ! -f "$SHSTK_TOP/scripts/vm/emulators/$1.sh" ]; then
		shstk_die "unknown EMU '$1' (use $(shstk_emulators | paste -sd' ' | sed 's/ / or /g'))"
	fi
}

# The backends that emulate ARCH (their emu_declare accepts it).
#   shstk_emulators_for ARCH
shstk_emulators_for() {
	local e
	for e in $(shstk_emulators); do
		(shstk_arch_vars "$1" && shstk_emu_vars "$e") >/dev/null 2>&1 && echo "$e"
	done
}
#   shstk_emu_vars [EMU]
# shellcheck disable=SC2034  # used by the scripts that source this file
shstk_emu_vars() {
	EMU=${1:-$SHSTK_DEFAULT_EMU}
	shstk_emu_check "$EMU"
	# A backend's optional functions must not outlive it in a shell that
	# sources several (make test).
	unset -f emu_prepare
	# shellcheck source=../vm/emulators/qemu.sh
	. "$SHSTK_TOP/scripts/vm/emulators/$EMU.sh"
	emu_declare
	EMU_OUT=$ARCH_OUT
	[ "$EMU" = "$SHSTK_DEFAULT_EMU" ] || EMU_OUT=$ARCH_OUT-$EMU
}

# A free TCP port on the loopback interface, for gdbstubs.
#   shstk_free_port
shstk_free_port() {
	shstk_py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The guest booted paused under the emulator's gdbstub on a free port, for
# gdb: sets VM_PID and GDB_PORT.  Callers trap EXIT to shstk_stop_vm first.
#   shstk_start_paused_vm EMU OUTDIR IMAGE TIMEOUT
shstk_start_paused_vm() {
	local emu=$1
	shift
	VM_QMP=
	if [ "$EMU_QMP" = yes ]; then
		VM_QMP=$(shstk_qmp_socket "$1")
		rm -f "$VM_QMP"
	fi
	GDB_PORT=$(shstk_free_port)
	GDB_PORT=$GDB_PORT "$SHSTK_TOP/scripts/vm/boot.sh" "$ARCH" "$emu" "$KBUILD_DIR/$KIMAGE" "$2" \
		"$1" "$3" >"$1/boot.log" 2>&1 &
	VM_PID=$!
	shstk_wait_listen "$GDB_PORT" 60 || shstk_die "the $emu gdbstub never listened on port $GDB_PORT (see $1/emulator.log)"
	# A VM restored from a snapshot listens before it has loaded it.
	[ -z "$VM_QMP" ] || shstk_py "$SHSTK_TOP/scripts/vm/qmp.py" wait-loaded "$VM_QMP" 60 ||
		shstk_die "the $emu VM did not get ready for gdb (see $1/emulator.log)"
}

# Whether a process of the process group PGID still runs (a zombie does
# not count).  pgrep -g selects by the group's id, not by a pattern.
_shstk_group_alive() {
	local p
	for p in $(pgrep -g "$1" 2>/dev/null); do
		! _shstk_pid_alive "$p" || return 0
	done
	return 1
}

# Stop what PID started in the process group it leads (GNU timeout makes
# one for itself and its command): TERM, and KILL to what is left after 2
# s.  Before PID leads a group of its own, PID alone gets the signals.
# With --reaped (PID was waited for, so its number may be another's by
# now) only a group that still has a process is signalled: a live member
# keeps the group's id from being reused.
#   shstk_stop_group [--reaped] PID
shstk_stop_group() {
	local reaped=''
	[ "$1" != --reaped ] || { reaped=1; shift; }
	if [ -n "$reaped" ]; then
		_shstk_group_alive "$1" || return 0
		kill -TERM -- "-$1" 2>/dev/null || true
		shstk_poll_until_gone 2 _shstk_group_alive "$1" || kill -KILL -- "-$1" 2>/dev/null || true
		return 0
	fi
	kill -TERM -- "-$1" 2>/dev/null || kill -TERM "$1" 2>/dev/null || true
	shstk_poll_until_gone 2 _shstk_group_alive "$1" && ! _shstk_pid_alive "$1" && return 0
	kill -KILL -- "-$1" 2>/dev/null || kill -KILL "$1" 2>/dev/null || true
}

#   shstk_stop_vm
shstk_stop_vm() {
	if [ -n "${VM_PID:-}" ]; then
		kill -TERM "$VM_PID" 2>/dev/null || true
		shstk_wait_pid_gone "$VM_PID"
	fi
	VM_PID=
}

# Post-boot snapshots (docs/boot.md), the parts every backend shares.  A
# restored run boots nothing: its kernel's words of the command line are
# the snapshot's, and what is its own comes after the restore (guest/init.sh
# shstk.snapshot=).  Each backend says which of its runs it restores
# (core.sh shstk_snapshot_wanted).


# shstk_snapshot_words CMDLINE: SNAPSHOT_KWORDS, the kernel's words (the
# snapshot's), and SNAPSHOT_IWORDS, init's (shstk.* and the programs'
# VAR=value settings, upper case), which the payload carries.  The words
# init acts on before the snapshot point are the snapshot's: the bpftrace
# scripts it attaches there, the command name they trace and the disk they
# come from (guest/init.sh).
shstk_snapshot_words() {
	local word
	SNAPSHOT_KWORDS='' SNAPSHOT_IWORDS=''
	for word in $1; do
		case "$word" in
		shstk.trace=* | shstk.trace_comm=* | shstk.rootfs=*) SNAPSHOT_KWORDS+=" $word" ;;
		shstk.* | [A-Z]*=*) SNAPSHOT_IWORDS+=" $word" ;;
		*) SNAPSHOT_KWORDS+=" $word" ;;
		esac
	done
	SNAPSHOT_KWORDS=${SNAPSHOT_KWORDS# } SNAPSHOT_IWORDS=${SNAPSHOT_IWORDS# }
}

# shstk_file_sha256 FILE: what "sha256sum <FILE" prints, kept in FILE.sha256
# with FILE's size, mtime and inode, and worked out again only when one of
# those changes, because a snapshot's key hashes the kernel, tens of megabytes,
# at every restored run.
shstk_file_sha256() {
	local id have sum
	id=$(stat -c '%s %.9Y %i' "$1") || return 1
	if { read -r have && read -r sum; } 2>/dev/null <"$1.sha256" && [ "$have" = "$id" ]; then
		echo "$sum"
		return 0
	fi
	sum=$(sha256sum <"$1") || return 1
	# Where it cannot be kept it is only not kept.
	{ printf '%s\n%s\n' "$id" "$sum" >"$1.sha256.$$" && mv -f "$1.sha256.$$" "$1.sha256"; } 2>/dev/null ||
		rm -f "$1.sha256.$$"
	echo "$sum"
}

# The guest image a post-boot snapshot boots: the one the entry script
# built with this run's image and passed down (entry.sh shstk_build_boot).
#   shstk_snapshot_base VAR
shstk_snapshot_base() {
	[ -n "${SHSTK_SNAPSHOT_BASE:-}" ] ||
		shstk_die "no snapshot base image (SHSTK_SNAPSHOT_BASE): the script that starts a boot builds it (shstk_build_boot)"
	[ -f "$SHSTK_SNAPSHOT_BASE" ] || shstk_die "no snapshot base image $SHSTK_SNAPSHOT_BASE"
	printf -v "$1" '%s' "$SHSTK_SNAPSHOT_BASE"
}

# shstk_snapshot_payload_cpio DIR BASE INITRD: the archive of what INITRD has
# that BASE (the snapshot's image) has not, kept beside the snapshot DIR
# by INITRD's hash, so that a run whose image is unchanged does not make it
# again.
shstk_snapshot_payload_cpio() {
	local cpio
	cpio=$(shstk_file_sha256 "$3") || return 1
	cpio=$1/payloads/${cpio:0:16}.cpio
	if [ ! -f "$cpio" ]; then
		mkdir -p "$1/payloads"
		shstk_py "$SHSTK_TOP/scripts/vm/cpiodiff.py" "$2" "$3" "$cpio.$$" ||
			shstk_die "making the snapshot payload from $3 failed"
		mv "$cpio.$$" "$cpio"
	fi
	touch "$cpio"	# in use: see shstk_snapshot_prune
	echo "$cpio"
}

# shstk_snapshot_prune DIR: a snapshot directory's siblings and payloads that no
# run has used for a week go, with what failed attempts left, and all but
# the 16 used last (each is 40-80 MB, and every kernel build makes new
# ones; a run marks its snapshot used by touching it).
shstk_snapshot_prune() {
	local old
	find "${1%/*}" -mindepth 1 -maxdepth 1 -mtime +7 -exec rm -rf {} + || true
	find "${1%/*}" -mindepth 3 -maxdepth 3 -path '*/payloads/*' -mtime +7 -delete || true
	# shellcheck disable=SC2012  # the names are hashes: no odd characters
	old=$(ls -1dt "${1%/*}"/*/ 2>/dev/null | tail -n +17)
	[ -z "$old" ] || xargs rm -rf <<<"$old"
}

# shstk_snapshot_make DIR WHAT DONE CONSOLE SAVE ARGS...: make WHAT's snapshot
# DIR once, under a lock (two lanes of make test, or make fuzz's two VMs,
# may want it at once), made aside and moved in whole, so a DIR/DONE is
# always a complete snapshot.  SAVE TMP DIR ARGS... boots and saves into
# TMP (it dies if it cannot); then the boot's console, TMP/CONSOLE, must
# be clean.
shstk_snapshot_make() {
	local dir=$1 what=$2 done=$3 console=$4 save=$5 tmp=$1.new.$$ lock t0
	shift 5
	# Made already: a snapshot is moved in whole, so one there is complete.
	[ ! -f "$dir/$done" ] || return 0
	exec {lock}>"$dir.lock"
	flock "$lock"
	if [ ! -f "$dir/$done" ]; then
		t0=$EPOCHREALTIME
		shstk_msg "making the $what snapshot ${dir##*/} (a cold boot, saved once booted)"
		rm -rf "$tmp"
		mkdir -p "$tmp"
		"$save" "$tmp" "$dir" "$@"
		shstk_snapshot_check_boot "$tmp/$console"
		rm -rf "$dir"
		mv "$tmp" "$dir"
		shstk_msg "made the $what snapshot ${dir##*/} in $(shstk_elapsed "$t0") s"
		shstk_snapshot_prune "$dir"
	fi
	exec {lock}>&-
}

# shstk_snapshot_check_boot LOG: the snapshot's boot must be clean, since the
# runs restored from it are judged on their own part of the console.
shstk_snapshot_check_boot() {
	local found
	found=$(cd "$SHSTK_TOP" && shstk_py -m spec.console "$1") ||
		shstk_die "the snapshot's boot is not clean ($1):" "$found"
}

# Where a paused VM's backend listens for QMP (EMU_QMP): shstk_qmp_socket OUTDIR
shstk_qmp_socket() { echo "$1/qmp.sock"; }

# Wait until something listens on 127.0.0.1:PORT (read from /proc/net/tcp,
# without connecting: a gdbstub takes one client).
#   shstk_wait_listen PORT SECONDS
shstk_wait_listen() {
	shstk_py - "$1" "$2" <<'PY'
import sys, time
port, deadline = int(sys.argv[1]), time.time() + float(sys.argv[2])
while time.time() < deadline:
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == "0A" and int(local.split(":")[1], 16) == port:
                sys.exit(0)
    time.sleep(0.1)
sys.exit(1)
PY
}
