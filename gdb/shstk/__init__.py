# SPDX-License-Identifier: GPL-2.0
"""shstk-lab's gdb helpers, in the manner of the kernel's scripts/gdb/linux:
one small module per concern, structures read by name through gdb.Value.

  decode    pure functions: tokens, VMA flags (no gdb; unit-tested on the host)
  archops   what differs by architecture, one class each
  utils     general gdb helpers: PC, frames, System.map, replay position
  tasks     find a task by pid, the task on a CPU (also from user mode)
  usermem   read a task's user memory by walking its page tables
  vmas      a task's VMAs from its mm's maple tree
  ssp       a task's user shadow stack pointer
  commands  the shstk-* commands and $shstk_* functions
  context   the shstk-context view

The scripted checks:
  stepcheck    the framework: program-filtered stops, returns, the step log
  clone3stops  make gdb-check's stop handlers; clone3run, its run
  coredump     drgn's reading of a dump of the guest (gdb-check's step 3c)
  racecheck    make replay's check of the token race
"""
