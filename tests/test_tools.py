# SPDX-License-Identifier: GPL-2.0
"""The host-side helpers that need no VM: elfcheck, mkinitramfs, summary, the
Bochs root filesystem disk."""
import fcntl
import gzip
import io
import os
import signal
import struct
import subprocess
import sys
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts", "build"))

import elfcheck      # noqa: E402
import mkinitramfs   # noqa: E402
from checks import summary  # noqa: E402


def fake_elf(machine, interp=False, etype=2):
    """A minimal 64-bit little-endian ELF with one program header."""
    ehdr = bytearray(64)
    ehdr[0:4] = b"\x7fELF"
    ehdr[4], ehdr[5] = 2, 1
    struct.pack_into("<HH", ehdr, 16, etype, machine)
    struct.pack_into("<Q", ehdr, 32, 64)          # e_phoff
    struct.pack_into("<HH", ehdr, 54, 56, 1)      # e_phentsize, e_phnum
    phdr = bytearray(56)
    struct.pack_into("<I", phdr, 0, 3 if interp else 1)
    return bytes(ehdr + phdr)


class ElfcheckTest(unittest.TestCase):
    def check(self, data, arch):
        with tempfile.NamedTemporaryFile() as f:
            f.write(data)
            f.flush()
            return elfcheck.check(f.name, arch)

    def test_static_for_the_right_arch(self):
        self.assertIsNone(self.check(fake_elf(183), "arm64"))
        self.assertIsNone(self.check(fake_elf(62), "x86_64"))

    def test_wrong_arch(self):
        self.assertIn("built for x86_64, not arm64", self.check(fake_elf(62), "arm64"))

    def test_dynamic(self):
        self.assertIn("dynamically linked", self.check(fake_elf(62, interp=True), "x86_64"))

    def test_not_elf(self):
        self.assertEqual(self.check(b"#!/bin/sh\n", "x86_64"), "not an ELF file")

    def test_missing_file_exits_nonzero(self):
        r = subprocess.run([sys.executable, os.path.join(TOP, "scripts/build/elfcheck.py"),
                            "/nonexistent/prog", "x86_64"], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("cannot read", r.stderr)


class MkinitramfsTest(unittest.TestCase):
    def test_newc_entries_round_trip(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "hello")
            with open(src, "wb") as f:
                f.write(b"hello world\n")
            spec = ["dir /bin 0755 0 0", f"file /bin/hello {src} 0755 0 0",
                    "slink /bin/sh busybox 0777 0 0", "nod /dev/console 0600 0 0 c 5 1"]
            buf = io.BytesIO()
            mkinitramfs.build(spec, buf)
            data = buf.getvalue()
        entries, off = [], 0
        while True:
            hdr = data[off:off + 110]
            self.assertEqual(hdr[:6], b"070701")
            f = [int(hdr[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
            mode, size, namesize = f[1], f[6], f[11]
            name = data[off + 110:off + 110 + namesize - 1].decode()
            off += 110 + namesize
            off += -off % 4
            body = data[off:off + size]
            off += size + (-size % 4)
            if name == "TRAILER!!!":
                break
            entries.append((name, oct(mode), body, (f[9], f[10])))
        self.assertEqual([e[0] for e in entries], ["bin", "bin/hello", "bin/sh", "dev/console"])
        self.assertEqual(entries[1][2], b"hello world\n")
        self.assertEqual(entries[1][1], oct(0o100755))
        self.assertEqual(entries[2][2], b"busybox")
        self.assertEqual(entries[3][3], (5, 1))

    def test_output_is_reproducible(self):
        with tempfile.TemporaryDirectory() as d:
            spec = os.path.join(d, "list")
            with open(spec, "w") as f:
                f.write("dir /tests 0755 0 0\n")
            outs = []
            for n in range(2):
                out = os.path.join(d, f"out{n}.cpio.gz")
                subprocess.run([sys.executable, os.path.join(TOP, "scripts/build/mkinitramfs.py"),
                                spec, out], check=True)
                with open(out, "rb") as f:
                    outs.append(f.read())
            self.assertEqual(outs[0], outs[1])
            self.assertTrue(gzip.decompress(outs[0]).startswith(b"070701"))

    def test_unchanged_inputs_keep_the_image_changed_ones_rebuild_it(self):
        with tempfile.TemporaryDirectory() as d:
            spec, prog, out = (os.path.join(d, n) for n in ("list", "prog", "o.cpio.gz"))
            with open(spec, "w") as f:
                f.write(f"file /prog {prog} 0755 0 0\n")

            def make(content):
                with open(prog, "w") as f:
                    f.write(content)
                subprocess.run([sys.executable, os.path.join(TOP, "scripts/build/mkinitramfs.py"),
                                spec, out], check=True)
                with open(out, "rb") as f:
                    return os.stat(out).st_ino, gzip.decompress(f.read())

            ino, first = make("one")
            # Rewritten with the same content (guest.sh rewrites its files
            # at every build): the image is not made again.
            self.assertEqual(make("one"), (ino, first))
            # A file that changed, at the same path: made again, with it.
            _, second = make("two")
            self.assertIn(b"two", second)
            self.assertNotIn(b"one", second)

    def test_several_images_in_one_run(self):
        with tempfile.TemporaryDirectory() as d:
            args = []
            for n in ("a", "b"):
                spec = os.path.join(d, f"{n}.list")
                with open(spec, "w") as f:
                    f.write(f"dir /{n} 0755 0 0\n")
                args += [spec, os.path.join(d, f"{n}.cpio.gz")]
            mk = [sys.executable, os.path.join(TOP, "scripts/build/mkinitramfs.py")]
            subprocess.run(mk + args, check=True)
            for n in ("a", "b"):
                with open(os.path.join(d, f"{n}.cpio.gz"), "rb") as f:
                    self.assertIn(f"{n}\0".encode(), gzip.decompress(f.read()))
            # A list without its output is refused, whole.
            r = subprocess.run(mk + args[:3], capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("usage", r.stderr)

    def test_bad_line_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            spec = os.path.join(d, "list")
            with open(spec, "w") as f:
                f.write("file /x /nonexistent 0755 0 0\n")
            r = subprocess.run([sys.executable, os.path.join(TOP, "scripts/build/mkinitramfs.py"),
                                spec, os.path.join(d, "o.gz")], capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("line 1", r.stderr)


class SummaryTest(unittest.TestCase):
    def test_unittest_counts(self):
        text = "...\nRan 12 tests in 0.1s\n\nFAILED (failures=2, errors=1, skipped=3)\n"
        self.assertEqual(summary.count_unittest(text), (6, 3, 3))

    def test_ktap_counts(self):
        text = "KTAP version 1\n1..3\nok 1 a\nnot ok 2 b\nok 3 c # SKIP why\n"
        self.assertEqual(summary.count_ktap(text), (1, 1, 1))

    def test_failure_lines(self):
        text = ("x86_64  valid  1 entry   PASS  fine\n"
                "x86_64  valid  2 alloc   FAIL  returns token + 16\n"
                "ok 1 a\nnot ok 2 b\nok 3 c # SKIP no shstk\n"
                "gdb-check x86_64: 1 passed, 0 failed, 0 skipped\n"
                "[gdb-check.sh] gdb timed out after 120 s\n")
        self.assertEqual(summary.failure_lines(text), [
            "x86_64  valid  2 alloc   FAIL  returns token + 16", "not ok 2 b",
            "[gdb-check.sh] gdb timed out after 120 s"])
        many = "\n".join(f"not ok {i} x" for i in range(10))
        self.assertEqual(summary.failure_lines(many, 2), ["not ok 0 x", "not ok 1 x", "... and 8 more"])

    def test_failed_step_named_before_the_total(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "good.log"), "w") as f:
                f.write("ok 1 a\n")
            with open(os.path.join(d, "bad.log"), "w") as f:
                f.write("ok 1 a\nnot ok 2 the token was not consumed\n")
            r = subprocess.run([sys.executable, "-m", "checks.summary", d, "good", "ktap", "0",
                                "bad", "ktap", "1"], cwd=TOP, capture_output=True, text=True)
        lines = r.stdout.splitlines()
        self.assertEqual(r.returncode, 1)
        self.assertEqual(lines[-1], "2 passed, 1 failed, 0 skipped")
        self.assertTrue(lines[-3].startswith("bad failed ("))
        self.assertEqual(lines[-2], "  not ok 2 the token was not consumed")


    def test_skip_reasons_of_each_log_format(self):
        text = ("x86_64  qemu  shstk_clone3 token_race SKIP  (CPU has no user shadow stack)\n"
                "x86_64  qemu  clone3       (program)  XFAIL  (not ok 3 x: known)\n"
                "ok 4 c # SKIP CPU has no user shadow stack\n"
                "x86_64  valid  3a  PASS  fine\n")
        self.assertEqual(summary.skip_reasons(text), [(2, "CPU has no user shadow stack"),
                                                      (1, "not ok 3 x: known")])

    def test_skips_shown_with_their_reasons(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "gdb.log"), "w") as f:
                f.write("x86_64  valid  3a  SKIP  before  # SKIP QEMU TCG does not emulate CET\n"
                        "x86_64  valid  3b  SKIP  after  # SKIP QEMU TCG does not emulate CET\n"
                        "x86_64  valid  5   SKIP  live  # SKIP no SSP register\n"
                        "gdb-check x86_64: 19 passed, 0 failed, 3 skipped\n")
            with open(os.path.join(d, "run.log"), "w") as f:
                f.write("x86_64  qemu  shstk_clone3 token_race SKIP  (CPU has no user shadow stack)\n"
                        "x86_64  qemu  shstk_clone3 basic      PASS\n")
            with open(os.path.join(d, "quiet.log"), "w") as f:
                f.write("trace x86_64: 1 passed, 0 failed, 2 skipped\n")
            r = subprocess.run([sys.executable, "-m", "checks.summary", d, "gdb", "gdbsteps", "0",
                                "quiet", "gdbsteps", "0", "run", "results:" + d, "0"],
                               cwd=TOP, capture_output=True, text=True)
        lines = r.stdout.splitlines()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(lines[-1], "20 passed, 0 failed, 5 skipped")
        at = lines.index("gdb skipped 3:")
        self.assertEqual([x.split(None, 1) for x in lines[at + 1:at + 3]],
                         [["2", "QEMU TCG does not emulate CET"], ["1", "no SSP register"]])
        self.assertIn("quiet skipped 2:", lines)
        self.assertIn("its log gives no reason", lines[lines.index("quiet skipped 2:") + 1])
        self.assertNotIn("run skipped", "\n".join(lines))     # no results.json: nothing counted


class RootfsDiskTest(unittest.TestCase):
    """scripts/lib/build.sh shstk_rootfs_disk: the bpftrace root filesystem's disk image."""

    def disk(self, d):
        script = 'set -euo pipefail; . scripts/lib/core.sh; . scripts/lib/build.sh; shstk_rootfs_disk "$2"'
        return subprocess.run(["bash", "-c", script, "bash", d, os.path.join(d, "rootfs")],
                              cwd=TOP, capture_output=True, text=True, timeout=120)

    def test_made_once_remade_when_the_tree_changes(self):
        with tempfile.TemporaryDirectory() as d:
            root = os.path.join(d, "rootfs")
            os.makedirs(os.path.join(root, "usr", "bin"))
            with open(os.path.join(root, ".shstk-rootfs"), "w") as f:
                f.write("bpftrace\n")
            r = self.disk(d)
            if r.returncode != 0 and "toolbox" in r.stderr:
                self.skipTest("no toolbox for mkfs.erofs: " + r.stderr.strip().splitlines()[-1])
            self.assertEqual(r.returncode, 0, r.stderr)
            img = r.stdout.strip()
            self.assertEqual(img, root + ".erofs")
            size = os.path.getsize(img)
            self.assertEqual(size % (16 * 63 * 512), 0, "not whole cylinders")
            with open(img, "rb") as f:
                f.seek(1024)
                self.assertEqual(f.read(4), b"\xe2\xe1\xf5\xe0", "no EROFS superblock magic")
            # Up to date: kept as it is.
            mtime = os.stat(img).st_mtime_ns
            self.assertEqual(self.disk(d).returncode, 0)
            self.assertEqual(os.stat(img).st_mtime_ns, mtime)
            # A rebuilt tree (a newer stamp) makes a new image.
            later = mtime / 1e9 + 10
            os.utime(os.path.join(root, ".shstk-rootfs"), (later, later))
            r = self.disk(d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("making the root filesystem disk image", r.stderr)
            self.assertNotEqual(os.stat(img).st_mtime_ns, mtime)



class RootfsBuildLockTest(unittest.TestCase):
    """scripts/build/rootfs.sh: a build that finds another one under way waits
    for it and takes its result, rather than building in the same place."""

    def test_waits_for_the_other_build(self):
        with tempfile.TemporaryDirectory() as d:
            root = os.path.join(d, "rootfs", "x86_64")
            os.makedirs(root)
            with open(root + ".build-lock", "w") as held:
                fcntl.flock(held, fcntl.LOCK_EX)
                p = subprocess.Popen([os.path.join(TOP, "scripts/build/rootfs.sh"), "x86_64"], cwd=TOP,
                                     env={**os.environ, "SHSTK_CACHE": d}, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
                try:
                    with self.assertRaises(subprocess.TimeoutExpired):
                        p.wait(timeout=1)
                    # The other build ends: its stamp, then its lock.
                    with open(os.path.join(root, ".shstk-rootfs"), "w") as f:
                        f.write("bpftrace\n")
                finally:
                    fcntl.flock(held, fcntl.LOCK_UN)
                out, err = p.communicate(timeout=30)
            self.assertEqual(p.returncode, 0, err)
            self.assertIn("waiting for another build", err)
            self.assertNotIn("debootstrap", err)
            self.assertEqual(out.strip(), root)


class KernelBuildLockTest(unittest.TestCase):
    """scripts/build/kernel.sh: a build that finds another one of the same
    tree under way waits for it (make run beside make test), before it
    touches the tree at all."""

    def test_waits_for_the_other_build(self):
        with tempfile.TemporaryDirectory() as d:
            build = os.path.join(d, "build", "x86_64")
            os.makedirs(build)
            env = {k: v for k, v in os.environ.items() if k != "SHSTK_CHECKED_BUILDS"}
            env.update(SHSTK_CACHE=d, SHSTK_KCONFIG_VARIANT="", SHSTK_BASELINE="")
            with open(os.path.join(build, ".shstk-build.lock"), "w") as held, \
                    tempfile.TemporaryFile("w+") as err:
                fcntl.flock(held, fcntl.LOCK_EX)
                # A session of its own: whatever it started goes with it.
                p = subprocess.Popen([os.path.join(TOP, "scripts/build/kernel.sh"), "x86_64"],
                                     cwd=TOP, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                     start_new_session=True)
                try:
                    with self.assertRaises(subprocess.TimeoutExpired):
                        p.wait(timeout=2)
                finally:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(timeout=15)
                err.seek(0)
                log = err.read()
            self.assertIn("waiting for another build of the x86_64 kernel", log)
            self.assertNotIn("kernel source", log)
            self.assertFalse(os.path.exists(os.path.join(d, "src")))


if __name__ == "__main__":
    unittest.main()
