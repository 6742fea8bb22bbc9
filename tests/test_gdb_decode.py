# SPDX-License-Identifier: GPL-2.0
"""gdb/shstk/decode.py (no gdb needed) and checks.gdbsteps."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gdb"))

from shstk import decode  # noqa: E402
from checks import gdbsteps  # noqa: E402
from spec import scenario  # noqa: E402


class TokenTest(unittest.TestCase):
    def test_expected_tokens(self):
        self.assertEqual(decode.expected_token("x86_64", 0x7f0000000ff8), 0x7f0000001001)
        self.assertEqual(decode.expected_token("arm64", 0xffff8c962ff8), 0xffff8c962001)
        self.assertEqual(decode.expected_token("riscv64", 0x3ff7a3fff8), 0x3ff7a40000)
        with self.assertRaisesRegex(ValueError, "mips"):
            decode.expected_token("mips", 0x1000)

    def test_verdicts(self):
        a = 0xffffab20aff8
        self.assertEqual(decode.token_verdict("arm64", a, 0xffffab20a001), (True, "valid token"))
        self.assertFalse(decode.token_verdict("arm64", a + 1, 0)[0])
        self.assertIn("misaligned", decode.token_verdict("arm64", a + 1, 0)[1])
        self.assertIn("consumed", decode.token_verdict("arm64", a, 0)[1])
        # A word gdb cannot read is a page not present, not an EFAULT: that
        # depends on the VMA (decode.clone3_verdict).
        self.assertIn("page not present", decode.token_verdict("arm64", a, None)[1])
        # the x86 token of the same slot is not an arm64 token
        ok, why = decode.token_verdict("arm64", a, decode.expected_token("x86_64", a))
        self.assertFalse(ok)
        self.assertIn("expected 0xffffab20a001", why)


class VmaFlagsTest(unittest.TestCase):
    def test_shadow_stack_flags(self):
        # as read from a 7.3.4 arm64 guest: rw-p, mayread/write/exec, ss
        flags = 0x4000100073
        self.assertEqual(decode.vma_flags(flags, "arm64"),
                         ["read", "write", "mayread", "maywrite", "mayexec", "ss"])
        self.assertTrue(decode.is_shadow_stack(flags, "arm64"))
        self.assertEqual(decode.perms(flags), "rw-p")
        # the same bit means nothing special on x86, where ss is bit 37
        self.assertFalse(decode.is_shadow_stack(flags, "x86_64"))
        self.assertTrue(decode.is_shadow_stack((1 << 37) | 2, "x86_64"))

    def test_not_writable_is_not_usable(self):
        self.assertFalse(decode.is_shadow_stack(1 << 38, "arm64"))

    def test_page_table_indexes(self):
        self.assertEqual(decode.pt_indexes(0xffffab20aff8), [0x1ff, 0x1fe, 0x159, 0x00a])
        self.assertEqual(decode.pt_indexes(0x400000, levels=5), [0, 0, 0, 2, 0])


class PagePiecesTest(unittest.TestCase):
    """usermem.read_bytes() translates each page of a read on its own."""

    def test_inside_one_page(self):
        self.assertEqual(decode.page_pieces(0x7000_0010, 96), [(0x7000_0010, 96)])

    def test_clone_args_across_a_boundary(self):
        # struct clone_args (96 bytes) 64 bytes below a page end: the token
        # field (offset 88) is on the second page.
        self.assertEqual(decode.page_pieces(0x7000_0fc0, 96),
                         [(0x7000_0fc0, 64), (0x7000_1000, 32)])

    def test_ends_on_a_boundary_and_spans_pages(self):
        self.assertEqual(decode.page_pieces(0x1000 - 8, 8), [(0xff8, 8)])
        self.assertEqual(decode.page_pieces(0xff8, 0x1010),
                         [(0xff8, 8), (0x1000, 0x1000), (0x2000, 8)])
        self.assertEqual(decode.page_pieces(0x1000, 0), [])


def step_log(shstk_on, why="QEMU TCG does not emulate CET", child="pass"):
    """A complete step log as gdb/check_clone3.py writes it."""
    steps = [{"step": scenario.STEP_SCENARIO, "case": "valid", "verdict": "pass",
              "shadow_stack_enabled": shstk_on, "reason": None if shstk_on else why}]
    for case in scenario.CASE_NAMES:
        for step in scenario.gdb_steps(case, shstk_on):
            verdict = child if step == scenario.STEP_CHILD else "pass"
            steps.append({"step": step, "case": case, "verdict": verdict,
                          "reason": "no SSP register" if verdict == "skip" else None})
    for case, step in scenario.not_exercised(shstk_on):
        steps.append({"step": step, "case": case, "verdict": "skip", "reason": why})
    return steps + [{"step": "verdict", "verdict": "pass"}]


def run_gdbsteps(steps, arch):
    """checks/gdbsteps.py's command on STEPS, with a guest that passed:
    (its exit status, its output's lines)."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "gdb-steps.jsonl"), "w") as f:
            f.write("".join(json.dumps(s) + "\n" for s in steps))
        with open(os.path.join(d, "guest.out"), "w") as f:
            f.write("SHSTK-LAB BEGIN shstk_gdb\nKTAP version 1\n1..1\nok 1 a\n"
                    "SHSTK-LAB END shstk_gdb rc=0\nSHSTK-LAB DONE\n")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = gdbsteps.main(["gdbsteps", d, arch, "0"])
    return rc, out.getvalue().splitlines()


class GdbStepsTest(unittest.TestCase):
    def judge(self, steps):
        return gdbsteps.judge(steps, 0, "", "SHSTK-LAB BEGIN shstk_gdb\nKTAP version 1\n1..1\n"
                              "ok 1 a\nSHSTK-LAB END shstk_gdb rc=0\nSHSTK-LAB DONE\n")

    def test_complete_logs_pass(self):
        for on in (True, False):
            self.assertEqual(self.judge(step_log(on))[1], [], on)
        # Bochs: no SSP register for step 5.
        self.assertEqual(self.judge(step_log(True, child="skip"))[1], [])
        # ... and no QMP for the drgn oracle: a skip it may make, with its reason.
        steps = step_log(True)
        for s in steps:
            if s.get("step") == scenario.STEP_ORACLE:
                s.update(verdict="skip", reason="bochs has no QMP")
        self.assertEqual(self.judge(steps)[1], [])

    def test_not_exercised_steps_are_skips_with_their_reason(self):
        skipped = [s for s in step_log(False) if s["verdict"] == "skip"]
        self.assertEqual({(s["case"], s["step"]) for s in skipped},
                         {("valid", scenario.STEP_BEFORE), ("valid", scenario.STEP_ORACLE),
                          ("valid", scenario.STEP_AFTER),
                          ("valid", scenario.STEP_NEWTASK), ("valid", scenario.STEP_CHILD),
                          ("valid", scenario.STEP_RETURNS), ("no_token", scenario.STEP_REFUSAL),
                          ("reused", scenario.STEP_REFUSAL)})
        # ... and they must be in the log, as skips: missing, they fail.
        steps = [s for s in step_log(False) if s["verdict"] != "skip"]
        problems = self.judge(steps)[1]
        self.assertIn("missing step '6 refusal' for case no_token", problems)

    def test_a_skip_where_the_step_must_run_fails(self):
        steps = step_log(True)
        for s in steps:
            if s["step"] == scenario.STEP_AFTER:
                s.update(verdict="skip", reason="felt like it")
        self.assertIn("step '3b token check: after' for case valid skipped, but it must run here",
                      self.judge(steps)[1])
        steps = step_log(True, child="skip")
        for s in steps:
            s["reason"] = None if s["verdict"] == "skip" else s.get("reason")
        self.assertTrue(any("without a reason" in p for p in self.judge(steps)[1]))

    def test_refusal_return_does_not_stand_in_for_the_refusal(self):
        # "6 refusal: clone3 returns" must not satisfy the "6 refusal" prefix.
        steps = [s for s in step_log(True)
                 if not (s["step"] == scenario.STEP_REFUSAL and s["case"] == "no_token")]
        self.assertIn("missing step '6 refusal' for case no_token", self.judge(steps)[1])

    def test_counts_in_the_closing_line(self):
        rc, lines = run_gdbsteps(step_log(False), "x86_64")
        self.assertEqual(rc, 0, "\n".join(lines))
        self.assertEqual(lines[-1], "gdb-check x86_64: 24 passed, 0 failed, 8 skipped")
        self.assertTrue(any(line.endswith("# SKIP QEMU TCG does not emulate CET") for line in lines))

    def test_missing_steps_fail(self):
        steps = [{"step": "0 scenario", "case": "valid", "verdict": "pass",
                  "shadow_stack_enabled": True}]
        on, problems = gdbsteps.judge(steps, 0, "", "")
        self.assertTrue(on)
        self.assertTrue(any("3a token check" in p for p in problems))
        self.assertTrue(any("no verdict" in p for p in problems))

    def test_timeout_is_named(self):
        _, problems = gdbsteps.judge([], 124, "", "")
        self.assertIn("gdb timed out (a breakpoint never hit)", problems)


if __name__ == "__main__":
    unittest.main()
