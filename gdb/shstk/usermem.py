# SPDX-License-Identifier: GPL-2.0
"""Read a task's user memory by walking its page tables.

gdb reads memory through the selected CPU's current translation, which is
the wrong address space for any task but the one running there (and, with
PAN, unreadable from the kernel).  Walking mm->pgd and reading the page
through the kernel's linear map works for any task, running or not.
"""
import gdb

from linux import constants

from shstk import decode
from shstk.tasks import arch

ADDR_MASK = {"arm64": 0x0000fffffffff000, "x86_64": 0x000ffffffffff000}
PAGE_SHIFT = 12


def _u64(addr):
    return int(gdb.parse_and_eval(f"*(unsigned long long *){addr:#x}")) & (2**64 - 1)


def phys_to_virt(pa):
    """The kernel linear-map address of physical address @pa."""
    if arch() == "arm64":
        va_bits = getattr(constants, "LX_CONFIG_ARM64_VA_BITS", 48)
        page_offset = (2**64 - (1 << va_bits)) & (2**64 - 1)
        memstart = int(gdb.parse_and_eval("memstart_addr")) & (2**64 - 1)
        return ((pa - memstart) | page_offset) & (2**64 - 1)
    return (pa + int(gdb.parse_and_eval("page_offset_base"))) & (2**64 - 1)


def _tcr():
    return int(gdb.parse_and_eval("(unsigned long)$TCR_EL1"))


def levels():
    """Page table levels of user space: x86 4, or 5 with LA57 in use; arm64
    from TCR_EL1.T0SZ (4 KiB granule: 39 bits 3 levels, 48 4, 52 5)."""
    if arch() == "x86_64":
        try:
            if int(gdb.parse_and_eval("ptrs_per_p4d")) > 1:
                return 5
        except gdb.error:
            pass
        return 4
    va_bits = 64 - (_tcr() & 0x3f)
    return -(-(va_bits - PAGE_SHIFT) // 9)


def _out_addr(desc):
    """The output address in a table or page descriptor."""
    if arch() == "arm64" and _tcr() >> 59 & 1:
        # FEAT_LPA2 (TCR_EL1.DS): OA[51:50] sit in descriptor bits [9:8].
        return (desc & 0x0003fffffffff000) | ((desc >> 8 & 3) << 50)
    return desc & ADDR_MASK[arch()]


def translate(mm, addr):
    """Physical address of user address @addr in @mm, or None if unmapped."""
    a = arch()
    table = int(mm["pgd"])
    n = levels()
    for level, index in enumerate(decode.pt_indexes(addr, n)):
        desc = _u64(table + 8 * index)
        if not desc & 1:
            return None
        shift = PAGE_SHIFT + 9 * (n - 1 - level)
        last = level == n - 1
        # A block (arm64: bit 1 clear) or large page (x86: PS, bit 7) ends
        # the walk early.
        huge = (not desc & 2) if a == "arm64" else bool(desc & 0x80)
        if last or (level > 0 and huge):
            base = _out_addr(desc) & ~((1 << shift) - 1)
            return base | (addr & ((1 << shift) - 1))
        table = phys_to_virt(_out_addr(desc))
    return None


def read_u64(mm, addr):
    """The 8-byte word at user address @addr in @mm, or None if unmapped.
    Both arches are little-endian; an unaligned word may cross a page."""
    raw = read_bytes(mm, addr, 8)
    return None if raw is None else int.from_bytes(raw, "little")


def read_bytes(mm, addr, size):
    """@size bytes at @addr in @mm, or None if any page of them is unmapped.
    Each page is translated on its own: pages next to each other in user
    space rarely are in physical memory (a struct on the stack that crossed
    a page boundary was once read half from the wrong page)."""
    out = b""
    for piece, n in decode.page_pieces(addr, size, 1 << PAGE_SHIFT):
        pa = translate(mm, piece)
        if pa is None:
            return None
        try:
            out += bytes(gdb.selected_inferior().read_memory(phys_to_virt(pa), n))
        except gdb.MemoryError:
            return None
    return out


def task_mm(task):
    mm = task["mm"]
    if int(mm) == 0:
        raise gdb.GdbError(f"task {int(task['pid'])} has no mm (a kernel thread?)")
    return mm

