# SPDX-License-Identifier: GPL-2.0
"""make debug: an interactive gdb on the guest, stopped at copy_thread() of
the guest program (SHSTK_COMM), with the shstk-* commands at hand.

Started by scripts/debug.sh, which also starts QEMU paused; quitting gdb ends
the session and the script stops QEMU.
"""
import os
import sys

import gdb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shstk import session  # noqa: E402

session.attach()

comm = os.environ.get("SHSTK_COMM", "shstk_gdb")
gdb.execute(f'break copy_thread if $_streq($shstk_comm(), "{comm}")')
gdb.write(f"""
shstk-lab debug session ({os.environ.get('SHSTK_ARCH', '?')}): the guest runs {comm}
  a breakpoint waits in copy_thread() for {comm}; continuing to it now.
  shstk-clone-args        decode the kernel_clone_args in scope (copy_thread, copy_process)
  shstk-token ADDR [PID]  the word at a user address, decoded as a token
  shstk-vmas [PID]        the task's VMAs, shadow stacks marked
  shstk-ssp [PID]         the task's shadow stack pointer, and where it was read
  $shstk_comm()           the comm of the task on this CPU (for conditions)
  lx-ps, lx-dmesg, $lx_current() ...  the kernel's own helpers
  user labels: shstk_child_entry, shstk_parent_return (the child's first
  instruction and the caller's return from clone3, in guest/shstk_gdb.c)
  quit ends gdb and the VM.
""")
gdb.execute("continue")
