# SPDX-License-Identifier: GPL-2.0
"""checks/evidence.py: a cover letter's evidence comes only from runs of
exactly the series it sends."""
import unittest

from checks import evidence
from tests.scratch import ScratchDirTest

H = "0123456789abcdef"


class EvidenceTest(ScratchDirTest):

    def run_dir(self, name, arch, series_hash, edits=False, emu="qemu"):
        vm = {"arch": arch, "emu": emu, "series_hash": series_hash, "local_edits": edits}
        self.write(f"{name}/vm.json", vm)
        self.write(f"{name}/results.json", {"vm": vm, "passed": 96, "failed": 0, "skipped": 9})
        self.write(f"{name}/gdb/vm.json", vm)
        self.write(f"{name}/gdb/gdb-check.json", {"passed": 31, "failed": 0, "skipped": 0})
        self.write(f"{name}/fuzz/vm0/results.json", {"vm": vm, "failed": 0})
        self.write(f"{name}/fuzz/vm0/guest.out", "# seed 0x1234, 2000 calls, 10 race rounds\n")

    def test_a_run_of_the_series_is_evidence(self):
        self.run_dir("x86_64", "x86_64", H)
        self.run_dir("x86_64-bochs", "x86_64", H, emu="bochs")
        rows = dict(((r[0], r[1]), r[2:]) for r in evidence.rows(self.dir, H))
        self.assertEqual(rows[("x86_64", "qemu")], ("96/0/9", "31/0/0", "seed 0x1234, 2000 calls"))
        self.assertEqual(rows[("x86_64", "bochs")][0], "96/0/9")

    def test_another_series_or_local_edits_are_not(self):
        self.run_dir("arm64", "arm64", "fedcba9876543210")
        self.run_dir("riscv64", "riscv64", H, edits=True)
        self.assertEqual(evidence.rows(self.dir, H), [])
        self.assertEqual(len(evidence.rows(self.dir, "fedcba9876543210")), 1)

    def test_a_failed_fuzz_run_is_shown_failed(self):
        self.run_dir("arm64", "arm64", H)
        self.write("arm64/fuzz/vm0/results.json",
                   {"vm": {"arch": "arm64", "series_hash": H}, "failed": 1})
        self.assertEqual(evidence.rows(self.dir, H)[0][4], "seed 0x1234, 2000 calls: FAILED")

    def test_a_series_tag_picks_its_own_directories(self):
        self.run_dir("x86_64", "x86_64", H)
        self.run_dir("x86_64-v23-1e53c1d0", "x86_64", H)
        self.assertEqual(len(evidence.rows(self.dir, H, "v23-1e53c1d0")), 1)
        self.assertEqual(len(evidence.rows(self.dir, H)), 1)

    def test_part_of_the_suite_is_marked_and_a_fuzz_run_without_the_fuzzer_is_none(self):
        self.run_dir("x86_64", "x86_64", H)
        vm = {"arch": "x86_64", "emu": "qemu", "series_hash": H, "local_edits": False}
        self.write("x86_64/results.json", {"vm": vm, "passed": 27, "failed": 0, "skipped": 6,
                                           "selection": {"tests": "shstk_clone3"}})
        self.write("x86_64/fuzz/vm0/results.json", {
            "vm": vm, "failed": 0,
            "selection": {"tests": "xsave_integrity", "programs_left_out": ["fuzz_clone3"]}})
        row = evidence.rows(self.dir, H)[0]
        self.assertEqual((row[2], row[4]), ("27/0/6 (only TESTS=shstk_clone3)", "-"))


if __name__ == "__main__":
    unittest.main()
