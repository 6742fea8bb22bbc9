# SPDX-License-Identifier: GPL-2.0
"""Tasks: by pid, and the one on a CPU, from kernel or user mode."""
import gdb

from linux import cpus, tasks, utils

from shstk import decode
from shstk.errors import reading

task_type = utils.CachedType("struct task_struct")


def arch():
    """'arm64' or 'x86_64', from the target gdb is attached to."""
    return "arm64" if utils.is_target_arch("aarch64") else "x86_64"


def by_pid(pid):
    """The task_struct of @pid; gdb.GdbError if there is none."""
    with reading("the task list"):
        task = tasks.get_task_by_pid(int(pid))   # a task_struct pointer
    if task is None:
        raise gdb.GdbError(f"no task with pid {pid}")
    with reading(f"the task_struct of pid {pid}"):
        return as_struct(task)


def current_cpu():
    """The CPU gdb's selected thread is, or 0 for a gdbstub that shows no CPU
    threads (Bochs: one CPU)."""
    try:
        return cpus.get_current_cpu()
    except gdb.GdbError:
        return 0


def on_cpu(cpu=-1):
    """The task running on @cpu (the selected one by default).

    The kernel's lx_current() reads SP_EL0 on arm64, which holds the user
    stack pointer while the CPU is in EL0; there the per-CPU __entry_task,
    set at every context switch, names the task instead.
    """
    if cpu == -1:
        cpu = current_cpu()
    if arch() == "arm64":
        # Registers are per gdb thread, one per CPU: read that CPU's.
        sp_el0 = int(on_thread(cpu, lambda: gdb.parse_and_eval("(unsigned long)$SP_EL0")))
        if sp_el0 >> 63:
            return gdb.Value(sp_el0).cast(task_type.get_type().pointer()).dereference()
        ptr = cpus.per_cpu(gdb.parse_and_eval("&__entry_task"), cpu)
        return ptr.dereference().dereference()
    # x86: the kernel's helper returns the per-CPU current_task itself, a
    # pointer; its .address is that per-CPU slot, not the task (the fpu
    # after "the task" was read from the per-CPU area: a NULL fpstate).
    return as_struct(cpus.get_current_task(cpu))


def as_struct(task):
    """@task as a struct task_struct, from a pointer to one or one."""
    if task.type.strip_typedefs().code == gdb.TYPE_CODE_PTR:
        return task.dereference()
    return task


def on_thread(cpu, fn):
    """fn() evaluated with gdb's thread for @cpu selected (QEMU: CPU n is
    thread n + 1), the selection restored afterwards."""
    prev = gdb.selected_thread()
    for t in gdb.selected_inferior().threads():
        if t.num == cpu + 1:
            t.switch()
            break
    else:
        raise gdb.GdbError(f"no gdb thread for CPU {cpu}")
    try:
        return fn()
    finally:
        prev.switch()


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
    decode.cpu_feature_word) on the CPU at boot (the cpuinfo flag
    user_shstk on x86, gcs on arm64)."""
    expr, bit = decode.cpu_feature_word(arch(), feature)
    return bool(int(gdb.parse_and_eval(expr)) >> bit & 1)


def shadow_stack_enabled(task):
    """Whether @task has user shadow stacks enabled (what copy_thread tests
    before taking a clone3() token), or None if this kernel has no field
    for it.  x86: thread.features & ARCH_SHSTK_SHSTK; arm64:
    thread.gcs_el0_mode & PR_SHADOW_STACK_ENABLE (both bit 0)."""
    field = "features" if arch() == "x86_64" else "gcs_el0_mode"
    try:
        return bool(int(task["thread"][field]) & 1)
    except gdb.MemoryError:
        raise
    except gdb.error:
        return None


def kernel_cmdline():
    """The command line the guest kernel was booted with."""
    return gdb.parse_and_eval("saved_command_line").string()


def comm(task):
    with reading("the task's comm"):
        return task["comm"].string()
