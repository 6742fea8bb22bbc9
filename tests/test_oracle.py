# SPDX-License-Identifier: GPL-2.0
"""checks.oracle: the drgn oracle's verdict, without a VM."""
import os
import tempfile
import unittest

from checks import oracle


VMAS = ["0x7f8eed3e7000-0x7f8eed3e8000", "0x7f8eed3e5000-0x7f8eed3e6000"]
WORD = 0x7f8eed3e8001


class CompareTest(unittest.TestCase):
    def test_agreement(self):
        self.assertEqual(oracle.compare(VMAS, WORD, list(VMAS), WORD), [])

    def test_a_wrong_helper_output_is_caught(self):
        # A walk that lost a VMA, or read the word from the wrong page.
        problems = oracle.compare(VMAS[:1], WORD, VMAS, WORD)
        self.assertEqual(len(problems), 1)
        self.assertIn("shadow stack VMAs", problems[0])
        problems = oracle.compare(VMAS, 0, VMAS, WORD)
        self.assertEqual(problems, [f"token word: the helpers read 0x0, drgn {WORD:#x}"])

    def test_without_the_word_the_vmas_still_count(self):
        # riscv64: drgn 0.0.31 cannot translate a user address.
        self.assertEqual(oracle.compare(VMAS, WORD, VMAS, None), [])
        self.assertEqual(len(oracle.compare(VMAS[1:], WORD, VMAS, None)), 1)

    def test_riscv64_maps(self):
        info = {"NUMBER(KERNEL_LINK_ADDR)": "0xffffffff80000000",
                "NUMBER(va_kernel_pa_offset)": "0xfffffffeffe00000",
                "NUMBER(PAGE_OFFSET)": "0xff60000000000000",
                "NUMBER(phys_ram_base)": "2147483648", "NUMBER(VA_BITS)": "57"}
        (kvirt, _, kphys), (lvirt, _, lphys) = oracle.riscv64_direct_maps(info, 0xffffffff81a00000)
        self.assertEqual(kvirt - kphys, 0xfffffffeffe00000)
        self.assertEqual((lvirt, lphys), (0xff60000000000000, 0x80000000))

    def test_order_matters(self):
        # Both list in address order; a walk out of order is a wrong walk.
        self.assertTrue(oracle.compare(list(reversed(VMAS)), WORD, VMAS, WORD))


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


class VmcoreinfoTest(unittest.TestCase):
    def test_the_note_is_read_and_the_arm64_maps_follow(self):
        desc = (b"OSRELEASE=7.3.4+\nNUMBER(VA_BITS)=52\n"
                b"NUMBER(kimage_voffset)=0xffff80003fe00000\nNUMBER(PHYS_OFFSET)=0x40000000\n")
        with tempfile.NamedTemporaryFile(delete=False) as f:
            f.write(elf_core_with_note(b"VMCOREINFO", desc))
        self.addCleanup(os.unlink, f.name)
        info = oracle.vmcoreinfo(f.name)
        self.assertEqual(info["OSRELEASE"], "7.3.4+")
        maps = oracle.aarch64_direct_maps(info, 0xffff800080000000, 0xffff800080bc0000)
        # The image: swapper_pg_dir's virtual 0xffff800080995000 is physical
        # 0x40b95000; the linear map starts at PAGE_OFFSET = -(1 << 52).
        (kvirt, ksize, kphys), (lvirt, _, lphys) = maps
        self.assertEqual(0xffff800080995000 - (kvirt - kphys), 0x40b95000)
        self.assertEqual((lvirt, lphys), (0xfff0000000000000, 0x40000000))

    def test_no_note_is_an_empty_dict(self):
        with tempfile.NamedTemporaryFile(delete=False) as f:
            f.write(elf_core_with_note(b"CORE", b"\0" * 16))
        self.addCleanup(os.unlink, f.name)
        self.assertEqual(oracle.vmcoreinfo(f.name), {})
