# SPDX-License-Identifier: GPL-2.0
"""checks.oracle: the drgn oracle's verdict, without a VM."""
import unittest

from checks import oracle
from spec import scenario


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

    def test_order_matters(self):
        # Both list in address order; a walk out of order is a wrong walk.
        self.assertTrue(oracle.compare(list(reversed(VMAS)), WORD, VMAS, WORD))


class JudgeTest(unittest.TestCase):
    """The step 3c gdb-check logs, with both readings and the verdict
    "pending", judged here; every other step as it is."""

    STEP = {"step": scenario.STEP_ORACLE, "case": "valid", "verdict": oracle.PENDING,
            "helper_vmas": VMAS, "drgn_vmas": VMAS, "helper_word": hex(WORD),
            "drgn_word": hex(WORD), "token_word": hex(WORD)}

    def test_agreement_passes(self):
        judged = oracle.judge(dict(self.STEP))
        self.assertEqual((judged["verdict"], judged["problems"]), ("pass", []))

    def test_disagreement_fails_with_the_problems(self):
        judged = oracle.judge(dict(self.STEP, drgn_vmas=VMAS[:1], drgn_word="0x0"))
        self.assertEqual(judged["verdict"], "fail")
        self.assertEqual(len(judged["problems"]), 2)
        # The helpers read nothing where drgn read a word.
        judged = oracle.judge(dict(self.STEP, helper_word=None))
        self.assertIn("the helpers read nothing (unmapped)", judged["problems"][0])

    def test_a_word_drgn_could_not_read(self):
        judged = oracle.judge(dict(self.STEP, drgn_word=None, token_word="not read"))
        self.assertEqual(judged["verdict"], "pass")

    def test_other_steps_and_verdicts_pass_through(self):
        for step in ({"step": scenario.STEP_BEFORE, "verdict": oracle.PENDING},
                     dict(self.STEP, verdict="skip"), dict(self.STEP, verdict="fail")):
            self.assertIs(oracle.judge(step), step)


class GdbStepsTest(unittest.TestCase):
    """make gdb-check's closing line counts step 3c by checks/oracle.py's
    verdict."""

    def closing_line(self, oracle_step):
        from tests.test_gdb_decode import run_gdbsteps, step_log
        steps = [dict(s, **oracle_step) if s.get("step") == scenario.STEP_ORACLE else s
                 for s in step_log(True)]
        rc, lines = run_gdbsteps(steps, "arm64")
        return rc, lines[-1]

    def test_agreement_is_a_pass_and_disagreement_a_failure(self):
        step = {k: v for k, v in JudgeTest.STEP.items() if k not in ("step", "case")}
        self.assertEqual(self.closing_line(step),
                         (0, "gdb-check arm64: 31 passed, 0 failed, 0 skipped"))
        self.assertEqual(self.closing_line(dict(step, drgn_vmas=VMAS[:1])),
                         (1, "gdb-check arm64: 30 passed, 1 failed, 0 skipped"))
