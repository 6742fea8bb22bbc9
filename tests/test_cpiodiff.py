# SPDX-License-Identifier: GPL-2.0
"""scripts/vm/cpiodiff.py: the payload of a Bochs run restored from a
snapshot has what the run's image has and the snapshot's has not."""
import gzip
import io
import os
import subprocess
import sys
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts", "build"))
sys.path.insert(0, os.path.join(TOP, "scripts", "vm"))

import cpiodiff      # noqa: E402
import mkinitramfs   # noqa: E402


def archive(d, spec):
    """A raw newc archive from mkinitramfs lines, files named relative to d."""
    lines = [line.replace("@", d + "/") for line in spec]
    out = io.BytesIO()
    mkinitramfs.build(lines, out)
    return out.getvalue()


def names(data):
    return [name for name, _, _ in cpiodiff.entries(data)]


class CpioDiff(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        for name, text in (("busybox", "bb"), ("init", "init"), ("prog", "p1"), ("prog2", "p2")):
            with open(os.path.join(self.d, name), "w") as f:
                f.write(text)
        self.base = archive(self.d, ["dir /bin 0755 0 0", "file /bin/busybox @busybox 0755 0 0",
                                     "file /init @init 0755 0 0", "nod /dev/console 0600 0 0 c 5 1"])

    def tearDown(self):
        self.tmp.cleanup()

    def test_only_what_differs(self):
        image = archive(self.d, ["dir /bin 0755 0 0", "file /bin/busybox @busybox 0755 0 0",
                                 "file /init @init 0755 0 0", "nod /dev/console 0600 0 0 c 5 1",
                                 "dir /tests 0755 0 0", "file /tests/prog @prog 0755 0 0"])
        out = cpiodiff.diff(self.base, image)
        self.assertEqual(names(out), ["tests", "tests/prog"])
        self.assertEqual([body for _, _, body in cpiodiff.entries(out)], [b"", b"p1"])

    def test_changed_content_or_mode_goes(self):
        image = archive(self.d, ["file /bin/busybox @prog 0755 0 0", "file /init @init 0700 0 0",
                                 "nod /dev/console 0600 0 0 c 5 2"])
        self.assertEqual(names(cpiodiff.diff(self.base, image)), ["bin/busybox", "init", "dev/console"])

    def test_nothing_new_is_an_empty_archive(self):
        out = cpiodiff.diff(self.base, self.base)
        self.assertEqual(names(out), [])
        self.assertTrue(out.startswith(b"070701"))

    def test_bad_archive_is_refused(self):
        with self.assertRaises(ValueError):
            list(cpiodiff.entries(b"not cpio" * 20))
        with self.assertRaises(ValueError):
            list(cpiodiff.entries(self.base[:-200]))

    def test_command_line(self):
        base, image, out = (os.path.join(self.d, n) for n in ("base.gz", "image.gz", "out.cpio"))
        with gzip.open(base, "wb") as f:
            f.write(self.base)
        with gzip.open(image, "wb") as f:
            f.write(archive(self.d, ["file /tests/prog2 @prog2 0755 0 0"]))
        subprocess.run([sys.executable, os.path.join(TOP, "scripts", "vm", "cpiodiff.py"),
                        base, image, out], check=True)
        with open(out, "rb") as f:
            self.assertEqual(names(f.read()), ["tests/prog2"])
        r = subprocess.run([sys.executable, os.path.join(TOP, "scripts", "vm", "cpiodiff.py"),
                            out, image, out], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("cpiodiff:", r.stderr)


if __name__ == "__main__":
    unittest.main()
