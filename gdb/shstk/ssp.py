# SPDX-License-Identifier: GPL-2.0
"""A task's user shadow stack pointer, and where the value came from.

arm64: a task on a CPU has its live GCSPR_EL0 in that CPU's registers (QEMU
shows it, read-only, as $GCSPR_EL0); for any other task thread.gcspr_el0
holds it, saved at its last context switch (and set by copy_thread for a
new one).  x86: the SSP lives in the CET user state of the task's XSAVE
buffer, valid while the task is not running.  The buffer is compacted when
the CPU has XSAVES (xcomp_bv bit 63), and only then can it hold the CET
user state, a supervisor component; a CPU without XSAVES (QEMU's TCG)
saves the standard format, without it.
"""
import gdb

from linux import cpus
from shstk import decode
from shstk.errors import reading
from shstk.tasks import arch, on_thread, running_cpu


def _xstate_table(name, i):
    return int(gdb.parse_and_eval(f"{name}[{i}]")) & 0xffffffff


def x86_fpu(task):
    """The task's struct fpu, which x86 keeps right after its task_struct
    (x86_task_fpu()): @task must be the struct, not a pointer to it."""
    if task.type.strip_typedefs().code == gdb.TYPE_CODE_PTR:
        task = task.dereference()
    return gdb.Value(int(task.address) + task.type.sizeof).cast(
        gdb.lookup_type("struct fpu").pointer())


def x86_saved_ssp(task):
    """(SSP or None, where it came from or why there is none)."""
    pid = int(task["pid"])
    with reading(f"the struct fpu of pid {pid} (after its task_struct)"):
        fpu = x86_fpu(task)
        fpstate = fpu["fpstate"]
        fpstate_addr = int(fpstate)
    if fpstate_addr == 0:
        return None, (f"pid {pid} has no FPU state yet (fpu.fpstate is NULL): a task "
                      f"being made gets it in copy_thread() (fpu_clone()); ask again after")
    with reading(f"the XSAVE header of pid {pid} (fpstate {fpstate_addr:#x})"):
        xsave = fpstate["regs"]["xsave"]
        xfeatures = int(xsave["header"]["xfeatures"]) & (2**64 - 1)
        xcomp_bv = int(xsave["header"]["xcomp_bv"]) & (2**64 - 1)
        base = int(xsave.address)
    with reading("the kernel's XSAVE layout (xstate_sizes, xstate_flags, xstate_offsets)"):
        off, how = decode.xsave_offset(
            decode.XFEATURE_CET_USER, xcomp_bv,
            lambda i: _xstate_table("xstate_sizes", i),
            lambda i: _xstate_table("xstate_flags", i) & 2,     # XSTATE_FLAG_ALIGNED64
            lambda i: _xstate_table("xstate_offsets", i))
    if off is None:
        return None, f"no CET user state in pid {pid}'s XSAVE buffer: {how}"
    if not xfeatures >> decode.XFEATURE_CET_USER & 1:
        return 0, (f"CET user state of pid {pid} in its init state (XSAVE {how}): "
                   f"no shadow stack enabled")
    with reading(f"the CET user state of pid {pid} at {base + off:#x}"):
        cet = gdb.Value(base + off).cast(gdb.lookup_type("struct cet_user_state").pointer())
        value = int(cet["user_ssp"]) & (2**64 - 1)
    return value, f"CET user state in pid {pid}'s XSAVE buffer ({how})"


def ssp(task):
    """(value or None, source) of @task's user shadow stack pointer; None
    with the reason where there is none to read."""
    pid = int(task["pid"])
    with reading(f"which CPU pid {pid} runs on"):
        cpu = running_cpu(task)
    if arch() == "arm64":
        if cpu is not None:
            with reading(f"$GCSPR_EL0 of CPU {cpu}"):
                value = int(on_thread(cpu, lambda: gdb.parse_and_eval("(unsigned long)$GCSPR_EL0")))
            return value & (2**64 - 1), f"live $GCSPR_EL0 of CPU {cpu}"
        with reading(f"thread.gcspr_el0 of pid {pid}"):
            value = int(task["thread"]["gcspr_el0"]) & (2**64 - 1)
        return value, "thread.gcspr_el0 (saved at the last context switch)"
    has_register = cpu is not None and live_register() == "pl3_ssp"
    if has_register:
        live = x86_live_ssp(task, cpu)
        if live is not None:
            return live
    value, where = x86_saved_ssp(task)
    if has_register:
        where += f"; current: CPU {cpu} does not hold pid {pid}'s FPU registers"
    elif cpu is not None and value is not None:
        where += f"; stale: pid {pid} is running on CPU {cpu}, its live SSP is in an MSR"
    return value, where


def x86_live_ssp(task, cpu):
    """(value, where) from $pl3_ssp of @cpu, which @task runs on: the live
    SSP at CPL 3; in the kernel IA32_PL3_SSP, where the CPU keeps the user
    SSP.  Linux loads a task's CET user state lazily, so in the kernel the
    MSR is @task's only while the CPU holds its FPU registers (the kernel's
    fpregs_state_valid()); None otherwise, and the XSAVE buffer is current."""
    def read():
        return (int(gdb.parse_and_eval("(unsigned long)$pl3_ssp")) & (2**64 - 1),
                int(gdb.parse_and_eval("$cs")) & 3)
    with reading(f"$pl3_ssp of CPU {cpu}"):
        value, cpl = on_thread(cpu, read)
    if cpl == 3:
        return value, f"$pl3_ssp of CPU {cpu}, the live SSP: the CPU runs user code"
    pid = int(task["pid"])
    with reading(f"whose FPU registers CPU {cpu} holds (fpu_fpregs_owner_ctx)"):
        owner = int(cpus.per_cpu(gdb.parse_and_eval("&fpu_fpregs_owner_ctx"), cpu).dereference())
        fpu = x86_fpu(task)
        mine = owner == int(fpu) and int(fpu["last_cpu"]) == cpu
    if not mine:
        return None
    return value, (f"$pl3_ssp of CPU {cpu}, IA32_PL3_SSP, where the CPU keeps the user SSP "
                   f"while in the kernel (CPU {cpu} holds pid {pid}'s FPU registers)")


def live_register():
    """The register this gdbstub shows the live user shadow stack pointer
    in, or None (Bochs, and x86 under QEMU=stock: none)."""
    names = {r.name for r in gdb.selected_frame().architecture().registers()}
    return decode.live_ssp_register(arch(), names)
