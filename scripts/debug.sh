#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make debug: QEMU paused with its gdbstub on a free local port, and an
# interactive gdb-multiarch with vmlinux, the kernel's gdb helpers and
# gdb/shstk loaded, stopped at copy_thread() of the guest program.
#
#   scripts/debug.sh ARCH [EMU] [PROG]
#
# Quitting gdb ends QEMU; nothing is left running.  With stdin closed, gdb
# reaches the copy_thread stop, prints it and quits (a smoke test).
set -euo pipefail
# shellcheck source=lib/entry.sh
. "$(dirname "$0")/lib/entry.sh"

shstk_host_check
shstk_arch_vars "${1:-}"
shstk_toolbox_need gdb
shstk_emu_vars "${2:-}"
OUT=$EMU_OUT/debug
PROG=${3:-}
# Checked before any long step (a kernel build takes minutes).
[ -z "$PROG" ] || shstk_prog_check "$PROG"
shstk_lock_out "$OUT"

if [ -n "$PROG" ]; then
	shstk_build_boot --gdb --prog "$PROG"
	prog=$(readlink -f "$PROG")
else
	shstk_build_boot --gdb gdb
	# The scenario's clone3() calls all pass a token: none would stop.
	shstk_token_vars
	[ -z "$TOKEN_MISSING" ] ||
		shstk_die "$TOKEN_MISSING: the gdb scenario has nothing to stop at; give your own PROG="
	prog=$GUEST_DIR/bin/shstk_gdb
fi
comm=$(basename "$prog" | cut -c1-15)
mkdir -p "$OUT"

# gdb runs in the foreground: the terminal, and a Ctrl-C (which interrupts
# the guest), are gdb's.  A TERM to this script runs the EXIT trap at once
# (bash waits for no foreground child when it has no TERM trap): it stops
# the VM, then gdb, the script's only other child, and waits until it is gone.
trap 'shstk_stop_vm; shstk_stop_own_children' EXIT
shstk_start_paused_vm "$EMU" "$OUT" "$GUEST_IMAGE" "${SHSTK_DEBUG_TIMEOUT:-3600}"
shstk_msg "$EMU paused on 127.0.0.1:$GDB_PORT; console log: $OUT/console.log"
shstk_export_gdb_env "$prog"
rc=0
SHSTK_COMM=$comm shstk_tb gdb-multiarch -q -nx -x "$SHSTK_TOP/gdb/debug.py" || rc=$?
shstk_msg "gdb exited ($rc); stopping $EMU"
exit "$rc"
