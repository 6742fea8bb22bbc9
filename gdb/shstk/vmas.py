# SPDX-License-Identifier: GPL-2.0
"""A task's VMAs, in address order, from its mm's maple tree (7.x layout).

The kernel's scripts can look one index up (linux.mapletree.mtree_load);
listing needs an in-order walk: every slot of a node covers the range up to
its pivot, the last one up to the node's maximum.
"""
import gdb

from linux import mapletree, utils, xarray

from shstk import archops, decode

vma_ptr_type = utils.CachedType("struct vm_area_struct")


def shadow_stack_bit():
    """VMA_SHADOW_STACK_BIT as the kernel was built with it."""
    try:
        return int(gdb.parse_and_eval("(int)VMA_SHADOW_STACK_BIT"))
    except gdb.error:
        return archops.ops().vm_shadow_stack_bit


def _walk(enode, lo, hi, out):
    node = mapletree.mte_to_node(enode)
    tp = int(mapletree.mte_node_type(enode))
    pivots = mapletree.ma_pivots(node, tp)
    slots = mapletree.ma_slots(node, tp)
    npiv = mapletree.mt_pivots(tp)
    start = lo
    for i in range(npiv + 1):
        piv = int(pivots[i]) if i < npiv else hi
        last = i == npiv or (i > 0 and piv == 0) or piv >= hi
        end = hi if (i > 0 and piv == 0) else min(piv, hi)
        entry = slots[i]
        if int(entry.cast(utils.get_ulong_type())):
            if mapletree.ma_is_leaf(tp):
                if not xarray.xa_is_zero(entry):
                    out.append(entry)
            else:
                _walk(entry, start, end, out)
        if last:
            break
        start = end + 1


def vmas(task):
    """[(start, end, flags, vma)] of @task's mm, lowest address first."""
    mm = task["mm"]
    if int(mm) == 0:
        return []
    root = mm["mm_mt"]["ma_root"]
    entries = []
    if xarray.xa_is_node(root):
        _walk(root, 0, 2**64 - 1, entries)
    elif int(root.cast(utils.get_ulong_type())):
        entries.append(root)
    out = []
    for e in entries:
        vma = e.cast(vma_ptr_type.get_type().pointer()).dereference()
        out.append((int(vma["vm_start"]), int(vma["vm_end"]), int(vma["vm_flags"]), vma))
    return out


def find(task, addr):
    """The (start, end, flags, vma) containing @addr, or None."""
    for v in vmas(task):
        if v[0] <= addr < v[1]:
            return v
    return None


def describe(v):
    """A VMA as the commands show it.  "ss" among the names is the bare flag
    (as smaps's VmFlags shows it); "shadow_stack" is decode's rule of what
    clone3() accepts a token in (the flag and writable), the one every
    verdict uses."""
    start, end, flags, _ = v
    bit, arch = shadow_stack_bit(), archops.ops().name
    return {"start": start, "end": end, "size": end - start, "flags": flags,
            "perms": decode.perms(flags), "names": decode.vma_flags(flags, arch, bit),
            "shadow_stack": decode.is_shadow_stack(flags, arch, bit)}
