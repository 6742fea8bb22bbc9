#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make gdb-check: boot the guest paused under QEMU's gdbstub, run
# gdb/check_clone3.py in batch gdb to step through one clone3() with a user
# shadow stack and the refused ones, then judge the step log.
#
#   scripts/gdb-check.sh ARCH [EMU]
#
# Leaves out/<arch>/gdb/: gdb-steps.jsonl, gdb.log, console.log, guest.out.
set -euo pipefail
# shellcheck source=lib/entry.sh
. "$(dirname "$0")/lib/entry.sh"

shstk_host_check
shstk_arch_vars "${1:-}"
shstk_toolbox_need gdb
shstk_emu_vars "${2:-}"
OUT=$EMU_OUT/gdb
GDB_TIMEOUT=${SHSTK_GDB_TIMEOUT:-120}

shstk_lock_out "$OUT"
mkdir -p "$OUT"
rm -f "$OUT/gdb-steps.jsonl" "$OUT/gdb.log" "$OUT/gdb-check.json" "$OUT/vm.json"
shstk_build_boot --gdb gdb
shstk_token_vars
[ -z "$TOKEN_MISSING" ] || shstk_skip_step gdb-check "$TOKEN_MISSING"
prog=$GUEST_DIR/bin/shstk_gdb

trap shstk_stop_vm EXIT
shstk_exit_on_signals

t0=$EPOCHREALTIME
shstk_start_paused_vm "$EMU" "$OUT" "$GUEST_IMAGE" "$((GDB_TIMEOUT + 30))"
shstk_msg "gdb attached to $EMU on 127.0.0.1:$GDB_PORT; step log $OUT/gdb-steps.jsonl"
shstk_export_gdb_env "$prog"
rc=0
# gdb as a child to stop on TERM or INT (scripts/lib/core.sh): in the foreground, bash
# would run no trap until gdb ended by itself.  The tb script, not the
# function, so that the child signalled is tb itself (see vm/boot.sh).
SHSTK_STEPS=$OUT/gdb-steps.jsonl shstk_run_child "$SHSTK_TOP/scripts/tools/tb" timeout -k 5 "$GDB_TIMEOUT" gdb-multiarch -q -batch -nx \
	-x "$SHSTK_TOP/gdb/check_clone3.py" >"$OUT/gdb.log" 2>&1 || rc=$?
grep '^\[gdb-check\]' "$OUT/gdb.log" >&2 || true
if [ "$rc" -eq 0 ]; then
	# gdb detached: the guest finishes and powers off by itself.
	wait "$VM_PID" || true
	VM_PID=
else
	[ "$rc" -ne 124 ] || shstk_msg "gdb timed out after $GDB_TIMEOUT s: a breakpoint never hit?"
	shstk_msg "gdb failed (exit $rc); stopping the VM (see $OUT/gdb.log)"
	shstk_stop_vm
fi
shstk_msg "gdb-check $ARCH: $(shstk_elapsed "$t0") s"
# The verdict is the exit status: a failed check is no error of the script.
PYTHONPATH=$SHSTK_TOP shstk_py -m checks.gdbsteps "$OUT" "$ARCH" "$rc" || exit
