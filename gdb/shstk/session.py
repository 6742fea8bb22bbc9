# SPDX-License-Identifier: GPL-2.0
"""Set up a gdb session on a shstk-lab guest: the kernel's symbols and
helpers, ours, the guest program's symbols, and the connection to QEMU.

Both gdb/check_clone3.py (batch) and gdb/debug.py (interactive) start here.
Paths come from the environment, set by scripts/gdb-check.sh and
scripts/debug.sh: SHSTK_VMLINUX, SHSTK_GDB_SCRIPTS (vmlinux-gdb.py),
SHSTK_PROG (the guest program), SHSTK_PORT.
"""
import os
import sys

import gdb

GDB_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def attach():
    env = os.environ
    gdb.execute("set pagination off")
    gdb.execute("set confirm off")
    gdb.execute("set python print-stack full")
    # The kernel's vmlinux-gdb.py is sourced below: gdb's own attempt to
    # auto-load it would only print a page of "declined" warnings.
    gdb.execute("set auto-load python-scripts off")
    gdb.execute(f"file {env['SHSTK_VMLINUX']}")
    # vmlinux-gdb.py finds its modules beside __file__, which is the caller's
    # when it is sourced from Python: put them on the path first.
    sys.path.insert(0, os.path.join(os.path.dirname(env["SHSTK_GDB_SCRIPTS"]), "scripts", "gdb"))
    gdb.execute(f"source {env['SHSTK_GDB_SCRIPTS']}")
    gdb.execute(f"source {GDB_DIR}/shstk-lab.py")
    if env.get("SHSTK_PROG"):
        gdb.execute(f"add-symbol-file {env['SHSTK_PROG']}")
    # The guest programs name their sources relative to the repository
    # (scripts/build/guest.sh), whichever directory gdb runs in.
    gdb.execute(f"directory {os.path.dirname(GDB_DIR)}")
    gdb.execute(f"target remote 127.0.0.1:{env['SHSTK_PORT']}")


def run_unattended(commands):
    """Run gdb @commands one by one as if typed, each echoed after a
    "(gdb)" prompt, an error shown and the next one run (make debug and
    make replay with stdin not a terminal)."""
    for command in commands:
        gdb.write(f"(gdb) {command}\n")
        try:
            gdb.execute(command)
        except (gdb.GdbError, gdb.error) as e:
            gdb.write(f"{e}\n")
