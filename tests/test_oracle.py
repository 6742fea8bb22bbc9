# SPDX-License-Identifier: GPL-2.0
"""checks.oracle and gdb/shstk/qmp.py: the drgn oracle's verdict and its
QMP client, without a VM."""
import json
import os
import subprocess
import socket
import sys
import tempfile
import threading
import unittest

from checks import oracle

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gdb"))
from shstk import qmp  # noqa: E402

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

class FakeQEMU(threading.Thread):
    """A QMP server answering with @replies to each command, in turn."""

    def __init__(self, path, replies):
        super().__init__(daemon=True)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(1)
        self.replies = list(replies)
        self.commands = []

    def run(self):
        conn, _ = self.server.accept()
        f = conn.makefile("rwb")
        f.write(b'{"QMP": {"version": {}, "capabilities": []}}\n')
        f.flush()
        for reply in self.replies:
            line = f.readline()
            if not line:
                break
            self.commands.append(json.loads(line))
            for obj in reply:
                f.write(json.dumps(obj).encode() + b"\n")
            f.flush()
        conn.close()
        self.server.close()


class QMPTest(unittest.TestCase):
    def serve(self, replies):
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: os.path.exists(d) and __import__("shutil").rmtree(d))
        path = os.path.join(d, "qmp.sock")
        server = FakeQEMU(path, replies)
        server.start()
        return path, server

    def test_dump_skips_events_and_sends_the_path(self):
        path, server = self.serve([[{"return": {}}],
                                   [{"event": "STOP"}, {"event": "DUMP_COMPLETED"},
                                    {"return": {}}]])
        qmp.dump_guest_memory(path, "/tmp/vmcore", timeout=10)
        server.join(10)
        self.assertEqual(server.commands[0], {"execute": "qmp_capabilities"})
        self.assertEqual(server.commands[1]["execute"], "dump-guest-memory")
        self.assertEqual(server.commands[1]["arguments"],
                         {"paging": False, "protocol": "file:/tmp/vmcore"})

    def test_an_error_is_raised_with_qemus_words(self):
        path, _ = self.serve([[{"return": {}}],
                              [{"error": {"class": "GenericError", "desc": "no space"}}]])
        with self.assertRaisesRegex(qmp.QMPError, "dump-guest-memory: no space"):
            qmp.dump_guest_memory(path, "/tmp/vmcore", timeout=10)

    def test_a_closed_socket_is_an_error_not_a_hang(self):
        path, _ = self.serve([[{"return": {}}]])
        with self.assertRaisesRegex(qmp.QMPError, "closed"):
            qmp.dump_guest_memory(path, "/tmp/vmcore", timeout=10)

    def test_save_waits_for_the_migration_then_quits(self):
        path, server = self.serve([[{"return": {}}], [{"return": {}}],
                                   [{"return": {"status": "active"}}],
                                   [{"event": "MIGRATION"}, {"return": {"status": "completed"}}],
                                   [{"return": {}}]])
        qmp.save_to_file(path, "/tmp/snap", timeout=10, poll=0)
        server.join(10)
        names = [c["execute"] for c in server.commands]
        self.assertEqual(names, ["qmp_capabilities", "migrate", "query-migrate", "query-migrate",
                                 "quit"])
        self.assertEqual(server.commands[1]["arguments"], {"uri": "file:/tmp/snap"})

    def test_a_failed_migration_is_an_error_with_its_reason(self):
        path, _ = self.serve([[{"return": {}}], [{"return": {}}],
                              [{"return": {"status": "failed", "error-desc": "disk full"}}]])
        with self.assertRaisesRegex(qmp.QMPError, "migrate: failed: disk full"):
            qmp.save_to_file(path, "/tmp/snap", timeout=10, poll=0)

    def test_the_snapshot_point_is_waited_for_while_qemu_lives(self):
        with tempfile.TemporaryDirectory() as d:
            console = os.path.join(d, "console.log")
            with open(console, "w") as f:
                f.write("[    1.0] booting\r\n" + qmp.SNAPSHOT_POINT + "\r\n")
            qmp.wait_for_line(console, qmp.SNAPSHOT_POINT, os.getpid(), timeout=5)
            with open(console, "w") as f:
                f.write("[    1.0] Kernel panic - not syncing: x\n")
            dead = subprocess.Popen(["true"])
            dead.wait()
            with self.assertRaisesRegex(qmp.QMPError, "QEMU ended before"):
                qmp.wait_for_line(console, qmp.SNAPSHOT_POINT, dead.pid, timeout=5)
            with self.assertRaisesRegex(qmp.QMPError, "in 0 s"):
                qmp.wait_for_line(console, qmp.SNAPSHOT_POINT, os.getpid(), timeout=0)


if __name__ == "__main__":
    unittest.main()
