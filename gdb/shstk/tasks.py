# SPDX-License-Identifier: GPL-2.0
"""Tasks: by pid, and the one on a CPU, from kernel or user mode."""
import gdb

from linux import cpus, tasks

from shstk import archops, decode
from shstk.errors import reading


def arch():
    """The table's name of the architecture gdb is attached to."""
    return archops.ops().name


def by_pid(pid):
    """The task_struct of @pid; gdb.GdbError if there is none."""
    with reading("the task list"):
        task = tasks.get_task_by_pid(int(pid))   # a task_struct pointer
    if task is None:
        raise gdb.GdbError(f"no task with pid {pid}")
    with reading(f"the task_struct of pid {pid}"):
        return archops.as_struct(task)


def current_cpu():
    """The CPU gdb's selected thread is, or 0 for a gdbstub that shows no CPU
    threads (Bochs: one CPU)."""
    try:
        return cpus.get_current_cpu()
    except gdb.GdbError:
        return 0


def on_cpu(cpu=-1):
    """The task running on @cpu (the selected one by default)."""
    if cpu == -1:
        cpu = current_cpu()
    return archops.ops().task_on_cpu(cpu)


def running_cpu(task):
    """The CPU @task is running on right now, or None."""
    for cpu in range(len(gdb.selected_inferior().threads())):
        try:
            if int(on_cpu(cpu).address) == int(task.address):
                return cpu
        except gdb.error:
            continue
    return None


def cpu_has_shadow_stack(feature=None):
    """Whether the kernel found user shadow stacks (or @feature, see
    decode.cpu_feature_word) on the CPU at boot (config/arches.ini
    cpuinfo_flag)."""
    expr, bit = decode.cpu_feature_word(arch(), feature)
    return bool(int(gdb.parse_and_eval(expr)) >> bit & 1)


def shadow_stack_enabled(task):
    """Whether @task has user shadow stacks enabled (what copy_thread tests
    before taking a clone3() token), or None if this kernel has no field
    for it."""
    return archops.ops().shadow_stack_enabled(task)


def kernel_cmdline():
    """The command line the guest kernel was booted with."""
    return gdb.parse_and_eval("saved_command_line").string()


def comm(task):
    with reading("the task's comm"):
        return task["comm"].string()


class ProgramStops:
    """Tells a stop of one program (by its comm) from any other.  Where a
    user-mode stop cannot read the task on the CPU (riscv:
    ArchOps.address_space), the address space decides: the one the
    program's own stops showed, learnt at the first stop that read its
    comm."""

    def __init__(self, comm_name):
        self.comm_name = comm_name
        self.address_space = None

    def ours(self):
        """True or False; None where it cannot be told: a user-mode stop
        before the program's address space was learnt, or one whose
        address space cannot be read either."""
        try:
            mine = comm(on_cpu()) == self.comm_name
        except (gdb.error, gdb.GdbError):
            here = self._address_space()
            if here is None or self.address_space is None:
                return None
            return here == self.address_space
        if mine and self.address_space is None:
            self.address_space = self._address_space()
        return mine

    @staticmethod
    def _address_space():
        try:
            return archops.ops().address_space()
        except gdb.error:
            return None
