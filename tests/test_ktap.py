# SPDX-License-Identifier: GPL-2.0
"""checks.ktap: parsing and judging the guest's results channel."""
import unittest

from checks import ktap

GOOD = """SHSTK-LAB GUEST kernel=7.3.4+ arch=aarch64 cpu_shstk=yes
SHSTK-LAB BEGIN shstk_clone3
KTAP version 1
1..3
# running a
ok 1 a
not ok 2 b
ok 3 c # SKIP CPU has no user shadow stack (QEMU TCG does not emulate CET)
# metric: shstk_user_256_size_kb=1024
SHSTK-LAB END shstk_clone3 rc=1
SHSTK-LAB BEGIN clone3
TAP version 13
1..2
ok 1 simple clone3()
ok 2 # SKIP Shadow stack on system without shadow stack
SHSTK-LAB END clone3 rc=0
SHSTK-LAB DONE
"""


class ParseTest(unittest.TestCase):
    def test_programs_points_and_metrics(self):
        info, progs, done = ktap.parse(GOOD)
        self.assertTrue(done)
        self.assertEqual(info["cpu_shstk"], "yes")
        self.assertEqual([p.name for p in progs], ["shstk_clone3", "clone3"])
        ours = progs[0]
        self.assertEqual([(p.number, p.name, p.result) for p in ours.points],
                         [(1, "a", "pass"), (2, "b", "fail"), (3, "c", "skip")])
        self.assertEqual(ours.points[2].reason,
                         "CPU has no user shadow stack (QEMU TCG does not emulate CET)")
        self.assertEqual(ours.metrics, {"shstk_user_256_size_kb": 1024})
        self.assertEqual(ours.verdict, "fail")

    def test_kselftest_skip_name_comes_after_directive(self):
        _, progs, _ = ktap.parse(GOOD)
        skip = progs[1].points[1]
        self.assertEqual(skip.result, "skip")
        self.assertEqual(skip.name, "Shadow stack on system without shadow stack")
        self.assertEqual(progs[1].verdict, "pass")

    def test_kselftest_skip_reason_is_the_message_before(self):
        text = GOOD.replace("ok 2 # SKIP Shadow stack on system without shadow stack",
                            "# Shadow stack supported\n"
                            "ok 2 # SKIP Shadow stack on system without shadow stack")
        skip = ktap.parse(text)[1][1].points[1]
        self.assertEqual(skip.name, "Shadow stack on system without shadow stack")
        self.assertEqual(skip.reason, "Shadow stack supported")
        # With no message just before, the text after "# SKIP" stays the reason.
        self.assertEqual(ktap.parse(GOOD)[1][1].points[1].reason,
                         "Shadow stack on system without shadow stack")
        # A description of its own keeps the reason after "# SKIP".
        self.assertEqual(ktap.parse(GOOD)[1][0].points[2].reason,
                         "CPU has no user shadow stack (QEMU TCG does not emulate CET)")

    def test_a_known_failure_is_shown_and_not_counted_as_one(self):
        text = GOOD.replace("not ok 2 b\n", "ok 2 b # XFAIL a tree without the series, which fixes it: x\n"
                            ).replace("END shstk_clone3 rc=1", "END shstk_clone3 rc=0")
        prog = ktap.parse(text)[1][0]
        self.assertEqual((prog.points[1].result, prog.points[1].reason),
                         ("xfail", "a tree without the series, which fixes it: x"))
        self.assertEqual(prog.verdict, "pass")
        # ... a TODO stays what it was, a pass ...
        text = GOOD.replace("not ok 2 b\n", "not ok 2 b # TODO later\n")
        self.assertEqual(ktap.parse(text)[1][0].points[1].result, "pass")
        # ... and an XFAIL without a reason is a problem.
        text = GOOD.replace("not ok 2 b\n", "ok 2 b # XFAIL\n").replace("rc=1", "rc=0")
        self.assertEqual(ktap.parse(text)[1][0].verdict, "fail")

    def test_missing_plan_fails(self):
        _, progs, _ = ktap.parse("SHSTK-LAB BEGIN x\nok 1 a\nSHSTK-LAB END x rc=0\n")
        self.assertIn("no KTAP plan", progs[0].problems)

    def test_short_count_fails(self):
        _, progs, _ = ktap.parse("SHSTK-LAB BEGIN x\n1..3\nok 1 a\nSHSTK-LAB END x rc=0\n")
        self.assertIn("plan says 3 tests, saw 1", progs[0].problems)

    def test_no_end_marker_fails(self):
        _, progs, done = ktap.parse("SHSTK-LAB BEGIN x\n1..1\nok 1 a\n")
        self.assertFalse(done)
        self.assertEqual(progs[0].verdict, "fail")
        self.assertTrue(any("never finished" in p for p in progs[0].problems))

    def test_crash_after_all_passed_fails(self):
        _, progs, _ = ktap.parse("SHSTK-LAB BEGIN x\n1..1\nok 1 a\nSHSTK-LAB END x rc=139\n")
        self.assertIn("exit status 139", progs[0].problems)

    def test_guest_timeout_is_named(self):
        _, progs, _ = ktap.parse("SHSTK-LAB BEGIN x\n1..1\nSHSTK-LAB END x rc=124\n")
        self.assertTrue(any("timed out" in p for p in progs[0].problems))

    def test_exit_status_only_program(self):
        for rc, result in ((0, "pass"), (4, "skip"), (1, "fail")):
            _, progs, _ = ktap.parse(f"SHSTK-LAB BEGIN x\nhello\nSHSTK-LAB END x rc={rc}\n")
            self.assertEqual(progs[0].points[0].result, result, rc)

    def test_bail_out_is_a_problem_named_by_its_reason(self):
        # riscv/cfi's cfitests gives up before its plan (no CFI-enabled libc).
        _, progs, _ = ktap.parse("SHSTK-LAB BEGIN x\nTAP version 13\n# Starting\n"
                                 "Bail out! Landing pad is not enabled\n"
                                 "SHSTK-LAB END x rc=1\n")
        self.assertEqual(progs[0].problems,
                         ["exit status 1", "Bail out! Landing pad is not enabled"])
        self.assertEqual(progs[0].points, [])
        # After some points, with a plan: the bail-out and the short count.
        _, progs, _ = ktap.parse("SHSTK-LAB BEGIN x\n1..3\nok 1 a\nBail out! no memory\n"
                                 "SHSTK-LAB END x rc=0\n")
        self.assertEqual(progs[0].problems, ["Bail out! no memory", "plan says 3 tests, saw 1"])
        self.assertEqual(progs[0].verdict, "fail")

    def test_x86_selftest_tags(self):
        text = ("SHSTK-LAB BEGIN t\n[RUN]\tx\n[OK]\tShadow stack enabled\n"
                "[FAIL]\tBad ssp\nSHSTK-LAB END t rc=1\n")
        _, progs, _ = ktap.parse(text)
        self.assertEqual([p.result for p in progs[0].points], ["pass", "fail"])
        self.assertEqual(progs[0].verdict, "fail")

    def test_x86_selftest_skip_with_exit_1(self):
        text = "SHSTK-LAB BEGIN t\n[SKIP]\tCould not enable Shadow stack\nSHSTK-LAB END t rc=1\n"
        _, progs, _ = ktap.parse(text)
        self.assertEqual(progs[0].verdict, "skip")
        self.assertEqual(progs[0].points[0].reason, "Could not enable Shadow stack")

    def test_indented_subtest_lines_are_not_top_level(self):
        text = "SHSTK-LAB BEGIN x\n1..1\n    1..2\n    ok 1 s\n    not ok 2 t\nok 1 parent\nSHSTK-LAB END x rc=0\n"
        _, progs, _ = ktap.parse(text)
        self.assertEqual(len(progs[0].points), 1)
        self.assertEqual(progs[0].verdict, "pass")

    def test_a_selection_and_the_programs_it_left_out(self):
        text = ("SHSTK-LAB GUEST kernel=7.3.4+ arch=x86_64 cpu_shstk=yes\n"
                "SHSTK-LAB SELECTION x:a*\nSHSTK-LAB NOT-SELECTED gcs/basic-gcs\n"
                "SHSTK-LAB BEGIN x\n1..2\nok 1 a1\nok 2 b # SKIP not selected by TESTS=\n"
                "SHSTK-LAB END x rc=0\nSHSTK-LAB DONE\n")
        info, progs, done = ktap.parse(text)
        self.assertTrue(done)
        self.assertEqual((info["tests"], info["kernel"]), ("x:a*", "7.3.4+"))
        left, ran = progs
        self.assertEqual((left.name, left.left_out, left.verdict, left.problems, left.points),
                         ("gcs/basic-gcs", True, "skip", [], []))
        self.assertEqual((ran.left_out, ran.verdict), (False, "pass"))
        self.assertEqual([p.name for p in ran.cases_left_out], ["b"])
        # Another skip reason is no selection's.
        _, progs, _ = ktap.parse(text.replace("# SKIP not selected by TESTS=", "# SKIP no CPU"))
        self.assertEqual(progs[1].cases_left_out, [])


if __name__ == "__main__":
    unittest.main()
