# SPDX-License-Identifier: GPL-2.0
"""checks.tcgtests: the verdicts of QEMU's bare-metal system tests."""
import contextlib
import io
import os
import tempfile
import unittest

from checks import tcgtests

GOOD = "ok 1 first\nok 2 second\n2 tests, 0 failures\n"


class JudgeTest(unittest.TestCase):
    def test_all_passing(self):
        checks, ok, why = tcgtests.judge("t", GOOD, 0)
        self.assertEqual([(c, n) for c, n, _ in checks], [(True, "t.first"), (True, "t.second")])
        self.assertTrue(ok)
        self.assertIsNone(why)

    def test_a_failed_check_and_its_reason(self):
        text = "ok 1 first\nnot ok 2 second: rsp 604fc0, want 100604fc0\n2 tests, 1 failures\n"
        checks, ok, why = tcgtests.judge("t", text, 3)
        self.assertEqual(checks[1], (False, "t.second", "rsp 604fc0, want 100604fc0"))
        self.assertFalse(ok)
        self.assertIn("1 failures", why)

    def test_no_totals_line_fails(self):
        _, ok, why = tcgtests.judge("t", "ok 1 first\n", 0)
        self.assertFalse(ok)
        self.assertIn("without its totals line", why)

    def test_a_check_line_not_read_fails(self):
        # A line this parser cannot read must not simply vanish.
        _, ok, why = tcgtests.judge("t", "ok 1 first\nok 2 far call\n2 tests, 0 failures\n", 0)
        self.assertFalse(ok)
        self.assertIn("count 2 checks, its output has 1", why)

    def test_totals_that_hide_a_failure_fail(self):
        _, ok, why = tcgtests.judge("t", "not ok 1 first: x\n1 tests, 0 failures\n", 0)
        self.assertFalse(ok)
        self.assertIn("count 0 failures, its output has 1", why)

    def test_an_unexpected_exception_fails_with_its_line(self):
        text = "ok 1 first\nnot ok - unexpected exception 14 (error 2)\n"
        _, ok, why = tcgtests.judge("t", text, 31)
        self.assertFalse(ok)
        self.assertIn("unexpected exception 14", why)

    def test_timeout_fails(self):
        _, ok, why = tcgtests.judge("t", "ok 1 first\n", 124)
        self.assertFalse(ok)
        self.assertIn("time limit", why)

    def test_clean_output_with_a_failing_exit_fails(self):
        _, ok, _ = tcgtests.judge("t", GOOD, 1)
        self.assertFalse(ok)


class MainTest(unittest.TestCase):
    def run_main(self, outputs, results):
        with tempfile.TemporaryDirectory() as d:
            for name, text in outputs.items():
                with open(os.path.join(d, name + ".out"), "w") as f:
                    f.write(text)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = tcgtests.main(["tcgtests", "x86_64", d] + results)
        return rc, out.getvalue()

    def test_points_and_closing_line(self):
        rc, out = self.run_main({"a": GOOD, "b": GOOD}, ["a=0", "b=0"])
        self.assertEqual(rc, 0)
        self.assertIn("1..6\n", out)
        self.assertIn("ok 3 a\n", out)
        self.assertIn("ok 4 b.first\n", out)
        self.assertTrue(out.endswith("tcg-tests x86_64: 6 passed, 0 failed, 0 skipped\n"))

    def test_a_missing_output_is_a_failure(self):
        rc, out = self.run_main({}, ["a=1"])
        self.assertEqual(rc, 1)
        self.assertIn("not ok 1 a\n", out)
        self.assertIn("0 passed, 1 failed", out)


if __name__ == "__main__":
    unittest.main()
