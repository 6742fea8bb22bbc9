# SPDX-License-Identifier: GPL-2.0
"""checks/budgets.py and config/test-budgets: every step of make test has a
budget, and a step over its budget is a failure of the check."""
import os
import subprocess
import sys
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOP)

from checks import budgets  # noqa: E402
from config import arches  # noqa: E402


def make_test_steps():
    """The step names scripts/test.sh gives a full run (x86 under QEMU and
    Bochs, the other arches under QEMU)."""
    names = ["toolbox", "series", "unit", "lint"]
    for a in arches.names():
        names.append(f"kernel-{a}")
        tags = [a, f"{a}-bochs"] if a == "x86_64" else [a]
        for tag in tags:
            # The project's own builds: QEMU where the table says so, Bochs.
            if tag != a or arches.get(a).qemu_from_source == "yes":
                names.append(f"emulator-{tag}")
            names += [f"{s}-{tag}" for s in ("smoke", "run", "gdb-check", "trace", "replay", "fuzz")]
        if a == "x86_64":
            names.append(f"compare-{a}")
    return names + ["harness"]


def run(steps_text, budgets_text):
    with tempfile.TemporaryDirectory() as d:
        s, b = os.path.join(d, "steps.tsv"), os.path.join(d, "budgets")
        with open(s, "w") as f:
            f.write(steps_text)
        with open(b, "w") as f:
            f.write(budgets_text)
        r = subprocess.run([sys.executable, "-m", "checks.budgets", "--budgets", b, s],
                           cwd=TOP, capture_output=True, text=True)
        return r.returncode, r.stdout


class BudgetsTest(unittest.TestCase):
    def test_every_step_of_make_test_has_a_budget(self):
        with open(budgets.BUDGETS) as f:
            rules, total = budgets.parse_budgets(f.read())
        self.assertIsNotNone(total)
        for name in make_test_steps():
            with self.subTest(step=name):
                self.assertIsNotNone(budgets.budget_of(name, rules))

    def test_the_first_matching_pattern_decides(self):
        rules, _ = budgets.parse_budgets("smoke-*-bochs 20\nsmoke-* 10\ntotal 100\n")
        self.assertEqual(budgets.budget_of("smoke-x86_64-bochs", rules), 20)
        self.assertEqual(budgets.budget_of("smoke-arm64", rules), 10)
        self.assertIsNone(budgets.budget_of("run-arm64", rules))

    def test_within_budget_passes(self):
        rc, out = run("unit\t20.0\nsmoke-arm64\t6.5\n", "unit 30\nsmoke-* 10\ntotal 60\n")
        self.assertEqual(rc, 0, out)
        self.assertIn("2 of 2 steps within", out)

    def test_a_step_over_its_budget_fails(self):
        rc, out = run("unit\t31.0\nsmoke-arm64\t6.5\n", "unit 30\nsmoke-* 10\ntotal 60\n")
        self.assertEqual(rc, 1)
        self.assertIn("over: unit", out)

    def test_the_total_over_its_budget_fails(self):
        rc, out = run("unit\t29.0\nsmoke-arm64\t9.5\n", "unit 30\nsmoke-* 10\ntotal 35\n")
        self.assertEqual(rc, 1)
        self.assertIn("over: total", out)

    def test_the_total_is_the_wall_time_when_given(self):
        # Two lanes: the steps' sum (38.5 s) is over, the wall (30 s) is not.
        rc, out = run("unit\t29.0\nsmoke-arm64\t9.5\ntotal\t30.0\n",
                      "unit 30\nsmoke-* 10\ntotal 35\n")
        self.assertEqual(rc, 0, out)
        self.assertIn("2 of 2 steps within", out)
        rc, out = run("unit\t29.0\nsmoke-arm64\t9.5\ntotal\t36.0\n",
                      "unit 30\nsmoke-* 10\ntotal 35\n")
        self.assertEqual(rc, 1)
        self.assertIn("over: total", out)

    def test_a_step_without_a_budget_fails(self):
        rc, out = run("unit\t1.0\nnew-step\t1.0\n", "unit 30\ntotal 60\n")
        self.assertEqual(rc, 1)
        self.assertIn("NO BUDGET", out)

    def test_a_bad_line_is_an_error(self):
        rc, _ = run("unit\t1.0\n", "unit thirty\n")
        self.assertEqual(rc, 2)


if __name__ == "__main__":
    unittest.main()
