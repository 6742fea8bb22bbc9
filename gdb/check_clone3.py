# SPDX-License-Identifier: GPL-2.0
"""make gdb-check: a scripted, checked step-through of clone3() with a user
shadow stack, run by gdb in batch mode against the emulator's gdbstub.

The guest runs guest/shstk_gdb.c, whose clone3() calls spec/scenario.py
describes (the cases, their order, where the kernel stops each and what it
returns).  At every stop one handler (shstk/clone3stops.py) reads the
kernel's and the program's state by name, checks it against the scenario,
and appends one JSON line to the step log; scripts/gdb-check.sh and
checks/gdbsteps.py judge the log.  The run itself is shstk/clone3run.py's,
on the framework make replay's check shares (shstk/stepcheck.py).

Configuration comes from the environment (set by scripts/gdb-check.sh):
see shstk/session.py, SHSTK_EMU and SHSTK_EMU_BREAKPOINTS (scripts/lib/entry.sh shstk_export_gdb_env), and
SHSTK_STEPS, the JSON-lines step log.
Importing this file does nothing; gdb runs it as a script (main()).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from shstk import session  # noqa: E402


def main():
    session.attach()
    # gdb/shstk's readers build on the kernel's scripts (linux.*), which
    # attach() loads: importable only from here on.
    from shstk import clone3run
    clone3run.main()


if __name__ == "__main__":
    main()
