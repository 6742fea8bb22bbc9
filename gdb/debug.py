# SPDX-License-Identifier: GPL-2.0
"""make debug: an interactive gdb on the guest, stopped at copy_thread() of
the guest program (SHSTK_COMM), with the shstk-* commands at hand.

Started by scripts/debug.sh, which also starts the emulator paused; quitting
gdb ends the session and the script stops the emulator.  At the stop it says
what this emulator and CPU can show (shadow stacks, the live shadow stack
pointer) and how to get the rest.  With stdin not a terminal (a smoke test)
it then runs each helper once, and gdb quits at the end of its input.
"""
import os
import sys

import gdb

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from spec import scenario  # noqa: E402
from shstk import session  # noqa: E402

# Where a CPU with shadow stacks can be had when this one has none (x86 under
# QEMU=stock): the make variable to set (the emulators' own declarations say
# what they provide; this is the pointer a user needs at the stop).
WITH_SHADOW_STACKS = {
    "x86_64": "QEMU=patched (the project's QEMU, with CET in TCG; EMU=bochs has CET too)",
}
HELPERS = ("shstk-clone-args", "shstk-vmas", "shstk-ssp", "shstk-context")

BANNER = """
shstk-lab debug session ({arch}): the guest runs {comm}
  a breakpoint waits in copy_thread() for {comm}; continuing to it now.
  shstk-clone-args        decode the kernel_clone_args in scope (copy_thread, copy_process),
                          and what clone3() will do with the token
  shstk-token ADDR [PID]  the word at a user address, decoded as a token
  shstk-vmas [PID]        the task's VMAs, shadow stacks marked
  shstk-ssp [PID]         the task's shadow stack pointer, and where it was read
  shstk-context [on|off]  the task, its SSP and shadow stack words, the clone3 token;
                          shown at every stop (shstk-context off hides it)
  $shstk_comm()           the comm of the task on this CPU (for conditions)
  lx-ps, lx-dmesg, $lx_current() ...  the kernel's own helpers
  user labels: shstk_child_entry, shstk_parent_return (the child's first
  instruction and the caller's return from clone3, in guest/shstk_gdb.c)
  quit ends gdb and the VM.
"""


def what_this_shows():
    """Lines saying what this emulator and CPU let the session show, read
    from the running kernel and the gdbstub."""
    from shstk import archops, ssp, tasks   # after session.attach(): they need linux.*
    arch = tasks.arch()
    lines = []
    try:
        cpu_on = tasks.cpu_has_shadow_stack()
    except gdb.error as e:
        cpu_on = None
        lines.append(f"  cannot read the kernel's CPU features ({e})")
    try:
        declared_on, why = scenario.declared_shadow_stack(tasks.kernel_cmdline())
    except gdb.error as e:
        declared_on, why = cpu_on, None
        lines.append(f"  cannot read the kernel command line ({e})")
    if cpu_on or (cpu_on is None and declared_on):
        lines.append("  user shadow stacks: this CPU has them; every path of clone3()'s token "
                     "can be stepped through")
    else:
        lines.append(f"  user shadow stacks: this CPU has none ({why or 'not in its features'}): "
                     f"every token is refused in copy_thread(), before it is looked at, so no "
                     f"token is checked or consumed here")
        if arch in WITH_SHADOW_STACKS:
            lines.append(f"  to step through the token checks: make debug ARCH={arch} "
                         f"{WITH_SHADOW_STACKS[arch]}")
    try:
        reg = ssp.live_register()
    except gdb.error:
        reg = None
    if reg:
        lines.append(f"  live shadow stack pointer: ${reg} (shstk-ssp reads it for a running task)")
    else:
        lines.append(f"  live shadow stack pointer: this gdbstub shows no register for it; "
                     f"shstk-ssp reads the one saved in the task ({archops.ops().SAVED_SSP}), "
                     f"current only while the task is not running")
    return lines + archops.ops().notes()


def one_stop_per_call(bp):
    """A new breakpoint stops once per call (archops.keep_described_locations),
    and the session says which location it left out."""
    from shstk import archops
    try:
        dropped = archops.keep_described_locations(bp)
    except RuntimeError as e:           # gdb.error is one
        gdb.write(f"shstk: breakpoint {bp.number}: locations not checked ({e})\n")
        return
    for addr in dropped:
        gdb.write(f"shstk: breakpoint {bp.number}: location {addr:#x} disabled: it has no "
                  f"debug info (ftrace NOPs before the function), the call stops at the "
                  f"described one\n")


def main():
    session.attach()
    gdb.events.breakpoint_created.connect(one_stop_per_call)
    comm = os.environ.get("SHSTK_COMM", "shstk_gdb")
    gdb.execute("shstk-context on")
    gdb.execute(f'break copy_thread if $_streq($shstk_comm(), "{comm}")')
    gdb.write(BANNER.format(arch=os.environ.get("SHSTK_ARCH", "?"), comm=comm))
    gdb.execute("continue")
    gdb.write("\nWhat this emulator and CPU can show:\n" + "\n".join(what_this_shows()) + "\n\n")
    if not sys.stdin.isatty():
        # No one at the keyboard: show each helper once at this stop.
        session.run_unattended(HELPERS)


if __name__ == "__main__":
    main()
