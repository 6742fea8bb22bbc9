# SPDX-License-Identifier: GPL-2.0
"""A task's user shadow stack pointer, and where the value came from.

arm64: a task on a CPU has its live GCSPR_EL0 in that CPU's registers (QEMU
shows it, read-only, as $GCSPR_EL0); for any other task thread.gcspr_el0
holds it, saved at its last context switch (and set by copy_thread for a
new one).  x86: the SSP lives in the CET user state of the task's XSAVE
buffer (compacted format), valid while the task is not running.
"""
import gdb

from shstk import decode
from shstk.tasks import arch, on_thread, running_cpu

XFEATURE_CET_USER = 11
XSAVE_HDR_END = 512 + 64          # legacy area + XSAVE header
XSTATE_FLAG_ALIGNED64 = 1 << 1


def _cet_offset(xcomp_bv):
    """Offset of the CET user state in a compacted XSAVE buffer, computed as
    the kernel does from xstate_sizes[] and xstate_flags[]."""
    off = XSAVE_HDR_END
    for i in range(2, XFEATURE_CET_USER + 1):
        if not xcomp_bv >> i & 1:
            continue
        if int(gdb.parse_and_eval(f"xstate_flags[{i}]")) & XSTATE_FLAG_ALIGNED64:
            off = (off + 63) & ~63
        if i == XFEATURE_CET_USER:
            return off
        off += int(gdb.parse_and_eval(f"xstate_sizes[{i}]"))
    return None


def x86_saved_ssp(task):
    fpu_addr = int(task.address) + task.type.sizeof
    fpu = gdb.Value(fpu_addr).cast(gdb.lookup_type("struct fpu").pointer())
    xsave = fpu["fpstate"]["regs"]["xsave"]
    hdr = xsave["header"]
    xcomp_bv = int(hdr["xcomp_bv"]) & (2**63 - 1)
    if not int(hdr["xfeatures"]) >> XFEATURE_CET_USER & 1:
        return 0      # CET user state in its init state: no shadow stack
    off = _cet_offset(xcomp_bv)
    if off is None:
        return None
    cet = gdb.Value(int(xsave.address) + off).cast(
        gdb.lookup_type("struct cet_user_state").pointer())
    return int(cet["user_ssp"])


def ssp(task):
    """(value, source) of @task's user shadow stack pointer."""
    cpu = running_cpu(task)
    if arch() == "arm64":
        if cpu is not None:
            value = int(on_thread(cpu, lambda: gdb.parse_and_eval("(unsigned long)$GCSPR_EL0")))
            return value, f"live $GCSPR_EL0 of CPU {cpu}"
        return int(task["thread"]["gcspr_el0"]) & (2**64 - 1), \
            "thread.gcspr_el0 (saved at the last context switch)"
    value = x86_saved_ssp(task)
    where = "CET user state in the task's XSAVE buffer"
    if cpu is not None:
        where += f" (stale: the task is running on CPU {cpu}; the live SSP is in an MSR)"
    return value, where




def live_register():
    """The register this gdbstub shows the live user shadow stack pointer
    in, or None (x86 under QEMU or Bochs: none)."""
    names = {r.name for r in gdb.selected_frame().architecture().registers()}
    return decode.live_ssp_register(arch(), names)
