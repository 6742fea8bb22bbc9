# SPDX-License-Identifier: GPL-2.0
"""A task's user shadow stack pointer, and where the value came from: live
in a register of the CPU running it, or saved in the task (each
architecture's ArchOps.ssp says where, gdb/shstk/archops.py)."""
from shstk import archops
from shstk.errors import reading
from shstk.tasks import running_cpu


def ssp(task):
    """(value or None, source) of @task's user shadow stack pointer; None
    with the reason where there is none to read."""
    with reading(f"which CPU pid {int(task['pid'])} runs on"):
        cpu = running_cpu(task)
    return archops.ops().ssp(task, cpu)


def live_register():
    """The register this gdbstub shows the live user shadow stack pointer
    in, or None (Bochs, and x86 under QEMU=stock: none)."""
    return archops.ops().live_register()
