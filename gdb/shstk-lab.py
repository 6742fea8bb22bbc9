# SPDX-License-Identifier: GPL-2.0
"""Load shstk-lab's gdb helpers: `source gdb/shstk-lab.py` after the kernel's
vmlinux-gdb.py (whose lx-* commands and linux.* modules these build on)."""
import importlib.util
import os
import sys

import gdb

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))      # config/ (the arch table)
# The kernel's scripts/gdb (its linux package) must be loaded first.
if importlib.util.find_spec("linux") is None:
    raise gdb.GdbError("load the kernel's vmlinux-gdb.py first (make debug does)")

from shstk import commands, context  # noqa: E402

commands.register()
context.register()
