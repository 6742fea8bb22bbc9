# SPDX-License-Identifier: GPL-2.0
"""gdb/shstk/coredump.py's plain Python (the vmcoreinfo note of a dump) and
the kernel's fixed maps drgn is given (ArchOps.direct_maps()), without a VM
or drgn."""
import os
import tempfile
import unittest

from tests import gdbmock

gdbmock.install()

from config import arches  # noqa: E402
from shstk import archops, coredump  # noqa: E402


class Symbol:
    def __init__(self, address):
        self.address = address


class Program:
    """What direct_maps() asks of a drgn program: symbols and variables."""

    def __init__(self, symbols=(), variables=()):
        self.symbols = dict(symbols)
        self.variables = dict(variables)

    def symbol(self, name):
        return Symbol(self.symbols[name])

    def __getitem__(self, name):
        return self.variables[name]


def direct_maps(arch, prog, info):
    return archops.CLASSES[arch](arches.get(arch)).direct_maps(prog, info)


class MapsTest(unittest.TestCase):
    def test_riscv64_maps(self):
        info = {"NUMBER(KERNEL_LINK_ADDR)": "0xffffffff80000000",
                "NUMBER(va_kernel_pa_offset)": "0xfffffffeffe00000",
                "NUMBER(PAGE_OFFSET)": "0xff60000000000000",
                "NUMBER(phys_ram_base)": "2147483648", "NUMBER(VA_BITS)": "57"}
        (kvirt, _, kphys), (lvirt, _, lphys) = direct_maps(
            "riscv64", Program({"_end": 0xffffffff81a00000}), info)
        self.assertEqual(kvirt - kphys, 0xfffffffeffe00000)
        self.assertEqual((lvirt, lphys), (0xff60000000000000, 0x80000000))


def elf_core_with_note(name, desc):
    """A minimal 64-bit ELF core holding one note, as QEMU's dump starts."""
    import struct
    namez = name + b"\0"
    note = struct.pack("<III", len(namez), len(desc), 0) + namez.ljust((len(namez) + 3) // 4 * 4, b"\0") \
        + desc.ljust((len(desc) + 3) // 4 * 4, b"\0")
    ehdr = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    ehdr += struct.pack("<HHIQQQIHHHHHH", 4, 183, 1, 0, 64, 0, 0, 64, 56, 1, 0, 0, 0)
    phdr = struct.pack("<IIQQQQQQ", 4, 0, 64 + 56, 0, 0, len(note), len(note), 0)
    return ehdr + phdr + note


    def test_x86_64_maps_all_ram_from_page_offset_base(self):
        maps = direct_maps("x86_64", Program(variables={"page_offset_base": 0xff11000000000000}), {})
        self.assertEqual(maps, [(0xff11000000000000, 1 << 46, 0)])


class VmcoreinfoTest(unittest.TestCase):
    def test_the_note_is_read_and_the_arm64_maps_follow(self):
        desc = (b"OSRELEASE=7.3.4+\nNUMBER(VA_BITS)=52\n"
                b"NUMBER(kimage_voffset)=0xffff80003fe00000\nNUMBER(PHYS_OFFSET)=0x40000000\n")
        with tempfile.NamedTemporaryFile(delete=False) as f:
            f.write(elf_core_with_note(b"VMCOREINFO", desc))
        self.addCleanup(os.unlink, f.name)
        info = coredump.vmcoreinfo(f.name)
        self.assertEqual(info["OSRELEASE"], "7.3.4+")
        maps = direct_maps("arm64", Program({"_text": 0xffff800080000000,
                                             "_end": 0xffff800080bc0000}), info)
        # The image: swapper_pg_dir's virtual 0xffff800080995000 is physical
        # 0x40b95000; the linear map starts at PAGE_OFFSET = -(1 << 52).
        (kvirt, ksize, kphys), (lvirt, _, lphys) = maps
        self.assertEqual(0xffff800080995000 - (kvirt - kphys), 0x40b95000)
        self.assertEqual((lvirt, lphys), (0xfff0000000000000, 0x40000000))

    def test_no_note_is_an_empty_dict(self):
        with tempfile.NamedTemporaryFile(delete=False) as f:
            f.write(elf_core_with_note(b"CORE", b"\0" * 16))
        self.addCleanup(os.unlink, f.name)
        self.assertEqual(coredump.vmcoreinfo(f.name), {})


if __name__ == "__main__":
    unittest.main()
