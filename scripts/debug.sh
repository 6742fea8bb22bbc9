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
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

arch_vars "${1:-}"
emu_vars "${2:-}"
OUT=$EMU_OUT/debug
PROG=${3:-}

"$SHSTK_TOP/scripts/build-kernel.sh" "$ARCH"
if [ -n "$PROG" ]; then
	image=$(SHSTK_BASELINE='' "$SHSTK_TOP/scripts/build-guest.sh" "$ARCH" --prog "$PROG")
	prog=$(readlink -f "$PROG")
else
	image=$(SHSTK_BASELINE='' "$SHSTK_TOP/scripts/build-guest.sh" "$ARCH" gdb)
	prog=$SHSTK_CACHE/guest/$ARCH/bin/shstk_gdb
fi
comm=$(basename "$prog" | cut -c1-15)
mkdir -p "$OUT"

trap stop_vm EXIT
start_paused_vm "$EMU" "$OUT" "$image" "${SHSTK_DEBUG_TIMEOUT:-3600}"
msg "$EMU paused on 127.0.0.1:$GDB_PORT; console log: $OUT/console.log"
export_gdb_env "$prog"
rc=0
SHSTK_COMM=$comm tb gdb-multiarch -q -nx -x "$SHSTK_TOP/gdb/debug.py" || rc=$?
msg "gdb exited ($rc); stopping $EMU"
exit "$rc"
