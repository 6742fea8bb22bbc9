#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make replay: record one round of the clone3() token race
# (guest/token_race.c) under QEMU's record/replay, then replay it under gdb,
# which can run it backwards: from where the losing racer gets EINVAL back
# into the winner's token check (shstk_validate_clone(), or v23's
# arch_shstk_validate_clone()), where the token word goes from the token
# to 0.
#
#   scripts/replay.sh ARCH [EMU]          record, then an interactive gdb on
#                                         the replay (gdb/replay.py)
#   scripts/replay.sh --check ARCH [EMU]  record; replay twice, logging every
#                                         stop of the race (they must be the
#                                         same); replay a third time, from the
#                                         winner's child backwards to the
#                                         consumption (gdb/check_replay.py);
#                                         judged by checks/replay.py
#
# Leaves out/<arch>/replay/: record/ (replay.bin, snapshots.qcow2 and the
# recorded run's console.log, guest.out, vm.json), and one directory per
# replay (stops-1/, stops-2/, reverse/, or gdb/ for the interactive one)
# with gdb's log, its step log and the replayed console.
set -euo pipefail
# shellcheck source=lib/entry.sh
. "$(dirname "$0")/lib/entry.sh"
shstk_host_check
check=
if [ "${1:-}" = --check ]; then
	check=yes
	shift
fi
shstk_arch_vars "${1:-}"
shstk_toolbox_need gdb
shstk_emu_vars "${2:-}"
# This shell's emulator facts are for a VM outside record/replay; the
# replays have no QMP (vm/emulators/qemu.sh).
EMU_QMP=no
# Nothing to replay here: make test asks every emulator and every tree, and
# for it (--check) that is a skip that says why; for a user, an error.
#   cannot_replay WHY
cannot_replay() {
	[ -n "$check" ] || shstk_die "$1"
	shstk_skip_step replay "$1"
}
[ "$EMU_RECORD_REPLAY" = yes ] || cannot_replay "$EMU cannot record and replay a run (QEMU can)"
[ -z "$EMU_NO_SHSTK_WHY" ] ||
	cannot_replay "$ARCH under $EMU has no user shadow stacks ($EMU_NO_SHSTK_WHY): no token to race on"
OUT=$EMU_OUT/replay
shstk_lock_out "$OUT"
RR=$OUT/record
TIMEOUT=${SHSTK_REPLAY_TIMEOUT:-300}
GDB_TIMEOUT=${SHSTK_GDB_TIMEOUT:-180}
# The project's QEMU is built here, before anything is timed.
shstk_build_boot --gdb replay
shstk_token_vars
[ -z "$TOKEN_MISSING" ] || cannot_replay "$TOKEN_MISSING"
prog=$GUEST_DIR/bin/token_race
rm -rf "$OUT"
mkdir -p "$RR"
trap shstk_stop_vm EXIT
shstk_exit_on_signals

t0=$EPOCHREALTIME
rc=0
SHSTK_RR_MODE=record SHSTK_RR_DIR=$RR shstk_run_child "$SHSTK_TOP/scripts/vm/boot.sh" "$ARCH" "$EMU" \
	"$KBUILD_DIR/$KIMAGE" "$GUEST_IMAGE" "$RR" "$TIMEOUT" >"$RR/boot.log" 2>&1 || rc=$?
shstk_msg "recorded in $(shstk_elapsed "$t0") s (emulator exit $rc): $RR/replay.bin, $(du -k "$RR/replay.bin" 2>/dev/null | cut -f1) KiB"
[ -s "$RR/replay.bin" ] || shstk_die "the recording left no $RR/replay.bin (see $RR/emulator.log)"

# Replay the recording paused under the gdbstub (a replay is the recorded
# machine, so the same kernel and image) and run gdb with SCRIPT on it, in
# batch unless interactive.   replay_under_gdb DIR SCRIPT [batch]
replay_under_gdb() {
	local dir=$1 script=$2 batch=${3:-} rc=0 t1=$EPOCHREALTIME
	mkdir -p "$dir"
	# Interactive: as long as make debug's session.
	SHSTK_RR_MODE=replay SHSTK_RR_DIR=$RR shstk_start_paused_vm "$EMU" "$dir" "$GUEST_IMAGE" \
		"$([ -n "$batch" ] && echo "$((GDB_TIMEOUT + 30))" || echo "${SHSTK_DEBUG_TIMEOUT:-3600}")"
	shstk_export_gdb_env "$prog"
	export SHSTK_NO_REVERSE_WHY=$EMU_NO_REVERSE_WHY
	if [ -n "$batch" ]; then
		SHSTK_STEPS=$dir/steps.jsonl shstk_run_child "$SHSTK_TOP/scripts/tools/tb" timeout -k 5 "$GDB_TIMEOUT" \
			gdb-multiarch -q -batch -nx -x "$script" >"$dir/gdb.log" 2>&1 || rc=$?
		grep '^\[replay\]' "$dir/gdb.log" >&2 || true
		[ "$rc" -ne 124 ] || shstk_msg "gdb timed out after $GDB_TIMEOUT s"
	else
		SHSTK_STEPS=$dir/steps.jsonl shstk_tb gdb-multiarch -q -nx -x "$script" || rc=$?
	fi
	shstk_stop_vm
	echo "$rc" >"$dir/gdb.rc"
	shstk_msg "$(basename "$dir"): gdb exit $rc in $(shstk_elapsed "$t1") s"
}

if [ -z "$check" ]; then
	[ -z "$EMU_NO_REVERSE_WHY" ] || shstk_warn "gdb cannot run this replay backwards: $EMU_NO_REVERSE_WHY"
	shstk_msg "gdb on the replay of $RR; quitting gdb ends it"
	# gdb in the foreground owns the terminal and its Ctrl-C (which
	# pauses the guest), as in make debug: no INT or TERM trap of ours
	# while it runs; a TERM to this script stops the VM, then gdb.
	trap - TERM
	shstk_trap_int -
	trap 'shstk_stop_vm; shstk_stop_own_children' EXIT
	replay_under_gdb "$OUT/gdb" "$SHSTK_TOP/gdb/replay.py"
	exit 0
fi
SHSTK_REPLAY_MODE=stops replay_under_gdb "$OUT/stops-1" "$SHSTK_TOP/gdb/check_replay.py" batch
SHSTK_REPLAY_MODE=stops replay_under_gdb "$OUT/stops-2" "$SHSTK_TOP/gdb/check_replay.py" batch
if [ -z "$EMU_NO_REVERSE_WHY" ]; then
	SHSTK_REPLAY_MODE=reverse replay_under_gdb "$OUT/reverse" "$SHSTK_TOP/gdb/check_replay.py" batch
else
	# Not run, and why: checks/replay.py reports it as a skip.
	mkdir -p "$OUT/reverse"
	echo "$EMU_NO_REVERSE_WHY" >"$OUT/reverse/not-run"
	shstk_msg "reverse: not run: $EMU_NO_REVERSE_WHY"
fi
shstk_msg "replay $ARCH: $(shstk_elapsed "$t0") s"
# The verdict is the exit status: a failed check is no error of the script.
PYTHONPATH=$SHSTK_TOP shstk_py -m checks.replay "$OUT" "$ARCH" || exit
