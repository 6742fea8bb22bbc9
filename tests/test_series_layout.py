# SPDX-License-Identifier: GPL-2.0
"""scripts/build/series.py: how make SERIES= reads another version of the
series (a folder, an mbox, an overlay of the project's for its version)."""
import os
import subprocess
import sys
import unittest

from tests.scratch import ScratchDirTest
from tests.test_harness import TOP

sys.path.insert(0, os.path.join(TOP, "scripts", "build"))
import series  # noqa: E402

V23 = os.path.join(os.path.dirname(TOP), "shared", "upstream", "v23")


def mail(subject, body="text\n"):
    return (f"From: A <a@example.org>\nSubject: {subject}\n\n{body}"
            "---\ndiff --git a/f b/f\n").encode()


class SeriesLayoutTest(ScratchDirTest):

    def layout(self, source, overlays=None):
        out = os.path.join(self.dir, "out")
        run = subprocess.run([sys.executable, os.path.join(TOP, "scripts", "build", "series.py"),
                              source, out, overlays or os.path.join(self.dir, "none")],
                             capture_output=True, text=True)
        names = []
        if run.returncode == 0:
            with open(os.path.join(out, "series")) as f:
                names = [ln.strip() for ln in f if not ln.startswith("#")]
        return run, names

    def test_numbering(self):
        self.assertEqual(series.numbering("[PATCH v23 4/8] fork: x"), (23, 4, 8))
        self.assertEqual(series.numbering("Re: [PATCH RFT v5 04/07] y"), (5, 4, 7))
        self.assertEqual(series.numbering("[PATCH] riscv: z"), (None, None, None))

    def test_mbox_is_split_ordered_by_number_and_cover_dropped(self):
        box = b"".join(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + mail(s) + b"\n" for s in (
            "[PATCH v2 2/2] second", "[PATCH v2 0/2] cover", "[PATCH v2 1/2] first"))
        run, names = self.layout(self.write("s.mbox", box))
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(names, ["0001-first.patch", "0002-second.patch"])
        self.assertIn("v2: 2 patches as posted", run.stdout)

    def test_an_overlay_replaces_and_adds(self):
        self.write("posted/1.mbox", mail("[PATCH v7 1/3] one"))
        self.write("posted/2.mbox", mail("[PATCH v7 2/3] two"))
        self.write("ov/v7/2-two-rebased.patch", mail("[PATCH v7 2/3] two, rebased"))
        self.write("ov/v7/fix.patch", mail("[PATCH] a fix"))
        self.write("ov/v7/series", b"# comment\n@1\n2-two-rebased.patch\nfix.patch\n")
        run, names = self.layout(os.path.join(self.dir, "posted"), os.path.join(self.dir, "ov"))
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(names, ["0001-one.patch", "0002-two-rebased.patch", "0003-a-fix.patch"])
        for words in ("1 of 3 patches as posted", "2 more from ov/v7/series",
                      "in place of 2/3", "not in the series: 3/3"):
            self.assertIn(words, run.stdout)

    def test_an_overlay_naming_a_missing_patch_fails(self):
        self.write("posted/1.mbox", mail("[PATCH v7 1/2] one"))
        self.write("ov/v7/series", b"@1\n@2\n")
        run, _ = self.layout(os.path.join(self.dir, "posted"), os.path.join(self.dir, "ov"))
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("the series has no patch 2", run.stderr)

    def test_a_folder_without_patches_fails(self):
        self.write("empty/README", b"nothing\n")
        run, _ = self.layout(os.path.join(self.dir, "empty"))
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("holds no patches", run.stderr)

    @unittest.skipUnless(os.path.isdir(V23), f"no {V23} (../shared beside the clone)")
    def test_v23_with_the_projects_overlay(self):
        run, names = self.layout(V23, os.path.join(TOP, "patches"))
        self.assertEqual(run.returncode, 0, run.stderr)
        with open(os.path.join(TOP, "patches", "v23", "series")) as f:
            listed = [ln for ln in (line.split("#")[0].strip() for line in f) if ln]
        self.assertEqual(len(names), len(listed))
        # The posted 1/8 in its place, the project's rebased 4/8 in 4/8's.
        at = {entry: names[i] for i, entry in enumerate(listed)}
        self.assertEqual(at["@1"][5:], "arm64-gcs-Return-a-success-value-from-gcs_alloc_thre.patch")
        self.assertEqual(at["0004-fork-Add-shadow-stack-support-to-clone3.patch"][5:],
                         "fork-Add-shadow-stack-support-to-clone3.patch")
        self.assertNotIn("@4", at)
        self.assertIn(f"{len(listed)} patches in all", run.stdout)
        self.assertIn("v23: 6 of 8 patches as posted", run.stdout)
        self.assertIn("in place of 4/8; not in the series: 8/8", run.stdout)


if __name__ == "__main__":
    unittest.main()
