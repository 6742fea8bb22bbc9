# SPDX-License-Identifier: GPL-2.0
"""shstk-lab's gdb helpers, in the manner of the kernel's scripts/gdb/linux:
one small module per concern, structures read by name through gdb.Value.

  decode    pure functions: tokens, VMA flags (no gdb; unit-tested on the host)
  tasks     find a task by pid, the task on a CPU (also from user mode)
  usermem   read a task's user memory by walking its page tables
  vmas      a task's VMAs from its mm's maple tree
  ssp       a task's user shadow stack pointer
  commands  the shstk-* commands and $shstk_* functions
"""
