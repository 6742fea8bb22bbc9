# SPDX-License-Identifier: GPL-2.0
"""Read a task's user memory by walking its page tables.

gdb reads memory through the selected CPU's current translation, which is
the wrong address space for any task but the one running there (and, with
PAN, unreadable from the kernel).  Walking mm->pgd and reading the page
through the kernel's linear map works for any task, running or not.
"""
import gdb

from shstk import archops, decode
from shstk.archops import PAGE_SHIFT


def _u64(addr):
    return int(gdb.parse_and_eval(f"*(unsigned long long *){addr:#x}")) & (2**64 - 1)


def phys_to_virt(pa):
    """The kernel linear-map address of physical address @pa."""
    return archops.ops().phys_to_virt(pa)


def translate(mm, addr):
    """Physical address of user address @addr in @mm, or None if unmapped."""
    ops = archops.ops()
    table = int(mm["pgd"])
    n = ops.pt_levels()
    for level, index in enumerate(decode.pt_indexes(addr, n)):
        desc = _u64(table + 8 * index)
        if not desc & 1:
            return None
        shift = PAGE_SHIFT + 9 * (n - 1 - level)
        # A block or large page above the last level ends the walk early.
        if level == n - 1 or (level > 0 and ops.pt_is_block(desc)):
            base = ops.pt_out_addr(desc) & ~((1 << shift) - 1)
            return base | (addr & ((1 << shift) - 1))
        table = ops.phys_to_virt(ops.pt_out_addr(desc))
    return None


def read_u64(mm, addr):
    """The 8-byte word at user address @addr in @mm, or None if unmapped.
    Every arch here is little-endian; an unaligned word may cross a page."""
    raw = read_bytes(mm, addr, 8)
    return None if raw is None else int.from_bytes(raw, "little")


def read_bytes(mm, addr, size):
    """@size bytes at @addr in @mm, or None if any page of them is unmapped.
    Each page is translated on its own: pages next to each other in user
    space rarely are in physical memory, so a struct on the stack that
    crosses a page boundary would otherwise be read half from the wrong
    page."""
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

