# SPDX-License-Identifier: GPL-2.0
"""The checkers' command lines: a wrong one gets a usage message, never a
traceback (checks.gdbsteps, checks.trace, checks.summary)."""
import os
import subprocess
import sys
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*argv):
    return subprocess.run([sys.executable, "-m", *argv], cwd=TOP, capture_output=True,
                          text=True, timeout=60)


class UsageTest(unittest.TestCase):
    def assertUsage(self, r, words):
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("usage:", r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertIn(words, r.stderr)

    def test_gdbsteps(self):
        self.assertUsage(run("checks.gdbsteps", "out/x86_64/gdb", "x86_64"),
                         "GDB_EXIT_STATUS")
        self.assertUsage(run("checks.gdbsteps", "out", "x86_64", "zero"), "invalid int value")
        self.assertUsage(run("checks.gdbsteps", "out", "sparc", "0"), "invalid choice")

    def test_trace(self):
        self.assertUsage(run("checks.trace", "out", "arm64"), "script")
        self.assertUsage(run("checks.trace", "out", "arm64", "s", "log", "kernel"),
                         "invalid choice")

    def test_summary(self):
        self.assertUsage(run("checks.summary", "out/test"), "NAME KIND RC")
        self.assertUsage(run("checks.summary", "out/test", "unit", "unittest"), "multiple of 3")
        self.assertUsage(run("checks.summary", "out/test", "unit", "unittest", "x"),
                         "is not a number")
        self.assertUsage(run("checks.summary", "out/test", "unit", "tap", "0"), "unknown kind")

    def test_trace_sh_argument_order_still_works(self):
        # scripts/trace.sh passes "${PROG:+user}": an empty fifth argument.
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "guest.out"), "w") as f:
                f.write("SHSTK-LAB DONE\n")
            r = run("checks.trace", d, "arm64", "token-validation,errno-provenance", d, "")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        # Each script's missing log is a failure of its own, and the run's
        # own problem (no program ran) counts once.
        self.assertIn("token-validation: no trace:token-validation block", r.stdout)
        self.assertIn("errno-provenance: no trace:errno-provenance block", r.stdout)
        self.assertIn("trace arm64: 0 passed, 3 failed, 0 skipped", r.stdout)


if __name__ == "__main__":
    unittest.main()
