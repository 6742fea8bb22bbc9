# SPDX-License-Identifier: GPL-2.0
"""checks.compare: the same cases, the same verdicts, under two emulators."""
import io
import json
import os
import tempfile
import unittest

from checks import compare, summary


def run(emu, points, verdict="pass"):
    return {"arch": "x86_64", "emu": emu, "vm": {"emu_build": emu + " 1.0"},
            "programs": [{"name": "shstk_clone3", "verdict": verdict,
                          "points": [{"number": n, "name": name, "result": result, "reason": reason}
                                     for n, (name, result, reason) in enumerate(points, 1)]}]}


class CompareTest(unittest.TestCase):
    def compare(self, a, b):
        d = tempfile.mkdtemp()
        paths = []
        for name, data in (("a.json", a), ("b.json", b)):
            path = os.path.join(d, name)
            if data is not None:
                with open(path, "w") as f:
                    json.dump(data, f)
            paths.append(path)
        out = io.StringIO()
        differences = compare.compare(*paths, out=out)
        # What make test counts from the step's log.
        return differences, summary.count_ktap(out.getvalue()), out.getvalue()

    def test_same_verdicts_pass(self):
        pts = [("a", "pass", ""), ("b", "skip", "no uffd")]
        diff, counts, _ = self.compare(run("qemu", pts), run("bochs", pts))
        self.assertEqual(diff, 0)
        self.assertEqual(counts, (3, 0, 0))

    def test_a_different_result_fails(self):
        diff, counts, out = self.compare(run("qemu", [("a", "pass", ""), ("b", "skip", "x")]),
                                         run("bochs", [("a", "fail", ""), ("b", "skip", "x")]))
        self.assertEqual(diff, 1)
        self.assertEqual(counts, (2, 1, 0))
        self.assertIn("# qemu pass, bochs fail\nnot ok 2 shstk_clone3 a", out)

    def test_a_different_skip_reason_fails(self):
        diff, _, _ = self.compare(run("qemu", [("a", "skip", "no CET")]),
                                  run("bochs", [("a", "skip", "no uffd")]))
        self.assertEqual(diff, 1)

    def test_a_case_only_one_run_has_fails(self):
        diff, _, out = self.compare(run("qemu", [("a", "pass", ""), ("b", "pass", "")]),
                                    run("bochs", [("a", "pass", "")]))
        self.assertEqual(diff, 1)
        self.assertIn("bochs missing", out)

    def test_a_program_verdict_difference_fails(self):
        pts = [("a", "pass", "")]
        diff, _, _ = self.compare(run("qemu", pts), run("bochs", pts, verdict="fail"))
        self.assertEqual(diff, 1)

    def test_a_repeated_case_name_is_compared_by_occurrence(self):
        diff, _, out = self.compare(run("qemu", [("t", "skip", "x"), ("t", "pass", "")]),
                                    run("bochs", [("t", "pass", ""), ("t", "pass", "")]))
        self.assertEqual(diff, 1)
        self.assertIn("not ok 2 shstk_clone3 t\n", out)

    def test_nothing_to_compare_fails(self):
        diff, counts, _ = self.compare(run("qemu", []), run("bochs", []))
        self.assertEqual(diff, 1)
        self.assertEqual(counts, (1, 1, 0))

    def test_a_hash_in_a_name_keeps_the_count(self):
        pts = [("a # TODO b", "fail", "")]
        diff, counts, _ = self.compare(run("qemu", pts), run("bochs", [("a # TODO b", "pass", "")]))
        self.assertEqual(diff, 1)
        self.assertEqual(counts[1], 1)

    def test_a_missing_run_fails(self):
        diff, counts, _ = self.compare(run("qemu", []), None)
        self.assertEqual(diff, 1)
        self.assertEqual(counts, (0, 1, 0))


if __name__ == "__main__":
    unittest.main()
