# SPDX-License-Identifier: GPL-2.0
"""The guest's memory as drgn reads it: an independent reading for the gdb
helpers' own (make gdb-check's step 3c, checks/oracle.py).

gdb/shstk walks the maple tree and the page tables itself to list a task's
VMAs and read its memory.  drgn (for_each_vma(), access_remote_vm()) shares
no code with those walks: QEMU writes the guest's memory to an ELF core
(QMP dump-guest-memory, with the kernel's vmcoreinfo note from -device
vmcoreinfo), drgn opens it with vmlinux, and both readings go in the step
log for checks/oracle.py to compare.

No gdb here.  read() needs drgn (the toolbox's python3-drgn: gdb's Python
has it) and the VM layer's QMP client (scripts/vm/qmp.py, on the path
gdb/check_clone3.py sets); vmcoreinfo() is plain Python, for the host
tests.  The kernel's fixed maps drgn is given are the arch's, in
archops.py (ArchOps.direct_maps()).
"""
import os
import struct
import sys
import time

# The VM layer's QMP client: the emulator's control socket is the VM's.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "scripts", "vm"))
import qmp  # noqa: E402

PT_NOTE = 4


def vmcoreinfo(core):
    """{key: value} of the VMCOREINFO note of the ELF core @core (QEMU puts
    the kernel's there), {} if it has none."""
    with open(core, "rb") as f:
        ehdr = f.read(64)
        if ehdr[:4] != b"\x7fELF" or ehdr[4] != 2:
            raise ValueError(f"{core}: not a 64-bit ELF core")
        phoff, = struct.unpack_from("<Q", ehdr, 32)
        phentsize, phnum = struct.unpack_from("<HH", ehdr, 54)
        f.seek(phoff)
        phdrs = f.read(phentsize * phnum)
        for i in range(phnum):
            p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", phdrs, i * phentsize)
            if p_type != PT_NOTE:
                continue
            f.seek(p_offset)
            notes, pos = f.read(p_filesz), 0
            while pos + 12 <= len(notes):
                namesz, descsz, _ = struct.unpack_from("<III", notes, pos)
                name = notes[pos + 12:pos + 12 + namesz].rstrip(b"\0")
                desc_at = pos + 12 + (namesz + 3) // 4 * 4
                desc = notes[desc_at:desc_at + descsz]
                pos = desc_at + (descsz + 3) // 4 * 4
                if name == b"VMCOREINFO":
                    return dict(line.split("=", 1) for line in desc.decode().splitlines()
                                if "=" in line)
    return {}


def number(info, name):
    """A NUMBER(name) of vmcoreinfo, which the kernel prints in hex or decimal."""
    return int(info[f"NUMBER({name})"], 0)


def read_with_drgn(core, vmlinux, mm_address, token, shadow_stack_bit, direct_maps):
    """(["start-end" of each shadow stack VMA], the u64 at @token, why not)
    of the mm_struct at @mm_address, as drgn reads them from @core.  The
    word is None, and why says why, where drgn cannot translate a user
    address (0.0.31 has no riscv64 page table walk).

    A dump QEMU wrote holds physical addresses only: @direct_maps(prog,
    vmcoreinfo) gives the kernel's fixed-offset maps, [(virtual start,
    size, physical start)], that drgn is told of (the arch's ArchOps).
    drgn 0.0.31 walks page tables through those same maps, so without them
    its first walk asks for itself ("recursive address translation"); with
    them, every walk checked here (the maple tree, the user page tables)
    is still drgn's own."""
    import drgn
    from drgn.helpers.linux.mm import access_remote_vm, for_each_vma

    prog = drgn.Program()
    prog.set_core_dump(core)
    prog.load_debug_info([vmlinux])
    for virt, size, phys in direct_maps(prog, vmcoreinfo(core)):
        def read(address, count, offset, physical, delta=virt - phys):
            return prog.read(address - delta, count, True)
        prog.add_memory_segment(virt, size, read, False)
    mm = drgn.Object(prog, "struct mm_struct *", value=mm_address)
    ss = 1 << shadow_stack_bit
    vmas = [f"{int(v.vm_start):#x}-{int(v.vm_end):#x}" for v in for_each_vma(mm)
            if int(v.vm_flags) & ss]
    try:
        word = int.from_bytes(access_remote_vm(mm, token, 8), "little")
    except NotImplementedError as e:
        return vmas, None, f"drgn {drgn.__version__}: {e}"
    return vmas, word, None


class Unreadable(Exception):
    """The dump could not be taken or drgn could not read it: why."""


def read(qmp_path, core, vmlinux, mm_address, token, shadow_stack_bit, direct_maps):
    """Dump the guest over the QMP socket @qmp_path to @core and read it
    with drgn (read_with_drgn()): {"drgn_vmas", "drgn_word", "no_word",
    "dump_seconds"}.  ImportError where gdb's Python has no drgn,
    Unreadable where the dump or the reading failed."""
    import drgn
    t0 = time.monotonic()
    try:
        qmp.dump_guest_memory(qmp_path, core)
        dumped = time.monotonic() - t0
        vmas, word, no_word = read_with_drgn(core, vmlinux, mm_address, token,
                                             shadow_stack_bit, direct_maps)
    except (OSError, qmp.QMPError, drgn.FaultError, drgn.MissingDebugInfoError,
            ValueError, LookupError) as e:
        raise Unreadable(f"{type(e).__name__}: {e}") from None
    return {"drgn_vmas": vmas, "drgn_word": word, "no_word": no_word,
            "dump_seconds": dumped}
