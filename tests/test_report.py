# SPDX-License-Identifier: GPL-2.0
"""checks.report: judging a whole run, and the known-failures list."""
import contextlib
import io
import json
import os
import re
import tempfile
import unittest

from checks import ktap, report

CRASH = "SHSTK-LAB BEGIN t\n1..2\nok 1 a\nSHSTK-LAB END t rc=139\nSHSTK-LAB DONE\n"


class KnownFailuresTest(unittest.TestCase):
    def known(self, text):
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write(text)
        self.addCleanup(os.unlink, f.name)
        return report.known_failures(f.name)

    def test_listed_problems_become_xfail(self):
        known = self.known("# c\narm64 | t | exit status 139 | why\n"
                           "arm64 | t | plan says 2 tests, saw 1 | why\n")
        _, progs, _ = ktap.parse(CRASH)
        report.apply_known("arm64", progs, known)
        self.assertEqual(progs[0].problems, [])
        self.assertEqual(progs[0].verdict, "xfail")
        self.assertEqual(report.counts(progs, []), (1, 0, 2))

    def test_listed_failing_point_counts_as_skipped(self):
        known = self.known("arm64 | t | not ok 2 b | why\narm64 | t | exit status 1 | why\n")
        _, progs, _ = ktap.parse("SHSTK-LAB BEGIN t\n1..2\nok 1 a\nnot ok 2 b\n"
                                 "SHSTK-LAB END t rc=1\n")
        report.apply_known("arm64", progs, known)
        self.assertEqual(progs[0].verdict, "xfail")
        self.assertEqual(report.counts(progs, []), (1, 0, 2))

    def test_other_arch_is_untouched(self):
        known = self.known("x86_64 | t | exit status 139 | why\n")
        _, progs, _ = ktap.parse(CRASH)
        report.apply_known("arm64", progs, known)
        self.assertEqual(progs[0].verdict, "fail")

    def test_emulator_qualified_entry(self):
        known = self.known("arm64/bochs | t | exit status 139 | why\n"
                           "arm64/bochs | t | plan says 2 tests, saw 1 | why\n")
        _, progs, _ = ktap.parse(CRASH)
        report.apply_known("arm64", progs, known, "qemu")
        self.assertEqual(progs[0].verdict, "fail")
        _, progs, _ = ktap.parse(CRASH)
        report.apply_known("arm64", progs, known, "bochs")
        self.assertEqual(progs[0].verdict, "xfail")

    def test_build_qualified_entry(self):
        # riscv64's livelock is stock QEMU's: the project's build passes it,
        # and a listed failure it does not have would be an XPASS there.
        known = self.known("arm64/qemu/stock | t | exit status 139 | why\n"
                           "arm64/qemu/stock | t | plan says 2 tests, saw 1 | why\n")
        for build, verdict in (("stock 11.1.3 (Debian 1:11.1.3+ds-2~bpo13+1)", "xfail"),
                               ("patched qemu 1:10.2.2+ds-1 + 16 patches (abc)", "fail"),
                               ("", "fail")):
            _, progs, _ = ktap.parse(CRASH)
            report.apply_known("arm64", progs, known, "qemu", build)
            self.assertEqual(progs[0].verdict, verdict, build)

    def test_unlisted_problem_still_fails(self):
        known = self.known("arm64 | t | exit status 139 | why\n")
        _, progs, _ = ktap.parse(CRASH)
        report.apply_known("arm64", progs, known)
        self.assertEqual(progs[0].problems, ["plan says 2 tests, saw 1"])
        self.assertEqual(progs[0].verdict, "fail")

    def test_xpass_fails(self):
        known = self.known("arm64 | t | exit status 139 | why\n")
        _, progs, _ = ktap.parse("SHSTK-LAB BEGIN t\n1..1\nok 1 a\nSHSTK-LAB END t rc=0\n")
        report.apply_known("arm64", progs, known)
        self.assertTrue(progs[0].problems[0].startswith("XPASS"))


class JudgeRunTest(unittest.TestCase):
    def test_timeout_and_panic_fail_the_run(self):
        vm = {"arch": "arm64", "emu": "qemu", "exit": 124, "timeout": True, "seconds": 600}
        _, _, problems = report.judge_run(vm, "Kernel panic - not syncing: x\n", CRASH)
        self.assertTrue(any("hung" in p for p in problems))
        self.assertTrue(any("panic" in p for p in problems))

    FINISHED = "SHSTK-LAB BEGIN t\n1..1\nok 1 a\nSHSTK-LAB END t rc=0\nSHSTK-LAB DONE\n"

    def test_the_backends_power_off_status_is_no_failure(self):
        # vm.json says which status a power-off gives (Bochs: 1); report.py
        # knows no emulator by name.
        vm = {"arch": "x86_64", "emu": "any", "exit": 1, "poweroff_exit": 1, "timeout": False,
              "seconds": 11}
        self.assertEqual(report.judge_run(vm, "", self.FINISHED)[2], [])
        vm.update(exit=0)
        self.assertEqual(report.judge_run(vm, "", self.FINISHED)[2],
                         ["emulator exit status 0 (a power-off exits 1)"])
        vm = {"arch": "x86_64", "emu": "bochs", "exit": 1, "timeout": False, "seconds": 11}
        self.assertEqual(report.judge_run(vm, "", self.FINISHED)[2],
                         ["emulator exit status 1 (a power-off exits 0)"])

    def test_an_emulator_crash_is_named_and_its_log_shown(self):
        vm = {"arch": "x86_64", "emu": "bochs", "exit": 139, "poweroff_exit": 1,
              "timeout": False, "seconds": 0.76}
        self.assertEqual(report.judge_run(vm, "", self.FINISHED)[2],
                         ["emulator exit status 139: killed by SIGSEGV (a power-off exits 1)"])
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "vm.json"), "w") as f:
                json.dump(vm, f)
            with open(os.path.join(d, "emulator.log"), "w") as f:
                f.write("".join(f"line {i}\n" for i in range(20)) +
                        "bochs[42]: segfault at 0 ip 1 sp 2 error 4 in libc.so.6\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(report.main(["report", d]), 1)
        self.assertIn("the emulator died: killed by SIGSEGV", out.getvalue())
        self.assertIn("    bochs[42]: segfault at 0", out.getvalue())
        self.assertNotIn("line 12\n", out.getvalue())
        # A timeout is the harness's own kill, reported as a hang, not a crash.
        vm.update(exit=124, timeout=True)
        self.assertIsNone(report.signal_of(vm))

    def test_an_early_reset_is_named(self):
        # QEMU with -no-reboot exits 0 at a triple fault: nothing printed.
        vm = {"exit": 0, "seconds": 0.48, "poweroff_exit": 0}
        _, _, problems = report.judge_run(vm, "", "")
        self.assertIn("neither the kernel nor the guest printed anything", problems[0])
        # An emulator that failed otherwise is not called a reset.
        _, _, problems = report.judge_run({**vm, "exit": 1}, "", "")
        self.assertFalse([p for p in problems if "printed anything" in p], problems)

    def test_unfinished_guest_fails(self):
        vm = {"arch": "arm64", "emu": "qemu", "exit": 0, "timeout": False, "seconds": 3}
        _, _, problems = report.judge_run(vm, "", "SHSTK-LAB BEGIN t\n1..1\nok 1 a\n")
        self.assertIn("the guest never reached the end of its test list", problems)


    def test_a_program_run_twice_fails_the_run(self):
        vm = {"arch": "x86_64", "emu": "qemu", "exit": 0, "timeout": False, "seconds": 3}
        twice = self.FINISHED.replace("SHSTK-LAB DONE\n", "") + self.FINISHED
        _, programs, problems = report.judge_run(vm, "", twice)
        self.assertEqual(len(programs), 2)
        self.assertEqual(problems, ["t ran 2 times: the image's test list names it more than once"])
        self.assertEqual(report.counts(programs, problems), (2, 1, 0))


class MergeTest(unittest.TestCase):
    """make fuzz with several VMs: one results.json for the run."""

    def test_sums_the_runs_and_a_missing_report_is_a_failure(self):
        with tempfile.TemporaryDirectory() as d:
            runs = [os.path.join(d, f"vm{i}") for i in range(3)]
            for run, counts in zip(runs[:2], ((3, 0, 1), (2, 1, 0))):
                os.mkdir(run)
                with open(os.path.join(run, "results.json"), "w") as f:
                    json.dump(dict(zip(("passed", "failed", "skipped"), counts)), f)
            os.mkdir(runs[2])
            with contextlib.redirect_stdout(io.StringIO()):
                failed = report.merge(d, runs)
            with open(os.path.join(d, "results.json")) as f:
                merged = json.load(f)
        self.assertEqual(failed, 2)
        self.assertEqual((merged["passed"], merged["failed"], merged["skipped"]), (5, 2, 1))
        self.assertEqual(len(merged["runs"]), 3)

    def test_no_runs_is_a_failure(self):
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(report.merge(d, []), 1)



class XstateFormatTest(unittest.TestCase):
    """The kernel's XSAVE format against the one the emulator declares."""

    def test_declared_format_matches(self):
        self.assertEqual(report.xstate_problems({"xstate_format": "compacted"},
                                                {"xstate": "0x1a1f,compacted"}), [])

    def test_standard_format_where_xsaves_was_declared_fails(self):
        problems = report.xstate_problems({"xstate_format": "compacted"},
                                          {"xstate": "0x21f,standard"})
        self.assertEqual(len(problems), 1)
        self.assertIn("'standard'", problems[0])

    def test_no_report_where_a_format_was_declared_fails(self):
        self.assertEqual(len(report.xstate_problems({"xstate_format": "standard"},
                                                    {"kernel": "7.3"})), 1)

    def test_nothing_declared_nothing_checked(self):
        self.assertEqual(report.xstate_problems({"xstate_format": ""}, {"kernel": "7.3"}), [])
        self.assertEqual(report.xstate_problems({}, {}), [])


class KernelIbtTest(unittest.TestCase):
    """Kernel indirect branch tracking against what the emulator declares."""

    def test_on_where_declared_on(self):
        self.assertEqual(report.kernel_ibt_problems({"kernel_ibt": "on"},
                                                    {"kernel_ibt": "on"}), [])

    def test_no_report_where_on_was_declared_fails(self):
        problems = report.kernel_ibt_problems({"kernel_ibt": "on"}, {"kernel": "7.3"})
        self.assertEqual(len(problems), 1)
        self.assertIn("is off", problems[0])

    def test_failed_selftest_fails_whatever_was_declared(self):
        for want in ("on", "off"):
            problems = report.kernel_ibt_problems({"kernel_ibt": want},
                                                  {"kernel_ibt": "failed"})
            self.assertEqual(len(problems), 1)
            self.assertIn("selftest failed", problems[0])

    def test_on_where_the_cpu_has_none_fails(self):
        self.assertEqual(len(report.kernel_ibt_problems({"kernel_ibt": "off"},
                                                        {"kernel_ibt": "on"})), 1)

    def test_nothing_declared_nothing_checked(self):
        self.assertEqual(report.kernel_ibt_problems({"kernel_ibt": ""},
                                                    {"kernel_ibt": "failed"}), [])
        self.assertEqual(report.kernel_ibt_problems({}, {}), [])


# A run TESTS= chose part of: ours with two of its three cases, the selftest
# left out, and the fuzz program left out too.
CHOSEN = """SHSTK-LAB GUEST kernel=7.3.4+ arch=x86_64 cpu_shstk=yes
SHSTK-LAB SELECTION ours:token_*
SHSTK-LAB BEGIN ours
KTAP version 1
1..3
ok 1 token_ok
not ok 2 token_reused
ok 3 size_e2big # SKIP not selected by TESTS=
SHSTK-LAB END ours rc=1
SHSTK-LAB NOT-SELECTED clone3
SHSTK-LAB NOT-SELECTED fuzz
SHSTK-LAB DONE
"""
VM = {"arch": "x86_64", "emu": "qemu", "exit": 0, "poweroff_exit": 0, "timeout": False,
      "seconds": 2}


class SelectionTest(unittest.TestCase):
    """A run with TESTS=: what was left out is said, and counted as skipped;
    what ran is judged as ever."""

    def judged(self, text=CHOSEN, known=None):
        info, programs, problems = report.judge_run(VM, "", text)
        report.apply_known("x86_64", programs, known or {})
        return info, programs, problems

    def test_left_out_programs_are_one_skip_each_and_failures_still_fail(self):
        info, programs, problems = self.judged()
        self.assertEqual(problems, [])
        self.assertEqual(info["tests"], "ours:token_*")
        self.assertEqual([(p.name, p.verdict) for p in programs],
                         [("ours", "fail"), ("clone3", "skip"), ("fuzz", "skip")])
        # ours: 1 pass, 1 fail, 1 case left out; two programs left out.
        self.assertEqual(report.counts(programs, problems), (1, 1, 3))

    def test_the_whole_suite_counts_as_before(self):
        whole = CHOSEN.replace("SHSTK-LAB SELECTION ours:token_*\n", "").replace(
            " # SKIP not selected by TESTS=", "").replace(
            "SHSTK-LAB NOT-SELECTED clone3\nSHSTK-LAB NOT-SELECTED fuzz\n", "")
        info, programs, problems = self.judged(whole)
        self.assertEqual(problems, [])
        self.assertEqual(report.counts(programs, problems), (2, 1, 0))
        self.assertEqual(report.selection_line(info, programs), "")

    def test_the_report_says_it_is_not_the_whole_suite(self):
        info, programs, _ = self.judged()
        self.assertEqual(report.selection_line(info, programs),
                         "not the whole suite: TESTS= chose ours:token_*, and left out "
                         "2 of 3 programs (clone3, fuzz); 1 of 3 cases of ours")
        rows = report.table("x86_64", "qemu", programs, []).splitlines()
        self.assertTrue(any(re.search(r"clone3 +\(program\) +SKIP  \(not selected by TESTS=\)", r)
                            for r in rows), rows)
        self.assertTrue(any(re.search(r"ours +\(1 cases\) +SKIP  \(not selected by TESTS=\)", r)
                            for r in rows), rows)
        self.assertFalse([r for r in rows if "size_e2big" in r])

    def test_ktap_json_and_the_last_line(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "vm.json"), "w") as f:
                json.dump(VM, f)
            with open(os.path.join(d, "guest.out"), "w") as f:
                f.write(CHOSEN.replace("not ok 2", "ok 2").replace("rc=1", "rc=0"))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(report.main(["report", d]), 0)
            with open(os.path.join(d, "results.ktap")) as f:
                ktap_text = f.read()
            with open(os.path.join(d, "results.json")) as f:
                result = json.load(f)
        self.assertIn("\nok 2 clone3 # SKIP not selected by TESTS=\n", ktap_text)
        self.assertIn("\nok 3 fuzz # SKIP not selected by TESTS=\n", ktap_text)
        self.assertEqual(result["selection"], {"tests": "ours:token_*",
                                               "programs_left_out": ["clone3", "fuzz"],
                                               "cases_left_out": {"ours": ["size_e2big"]}})
        self.assertEqual((result["passed"], result["failed"], result["skipped"]), (2, 0, 3))
        last = out.getvalue().splitlines()[-1]
        self.assertRegex(last, r"^x86_64/qemu: 2 passed, 0 failed, 3 skipped \(.*chosen by TESTS=")
        self.assertIn("x86_64/qemu: not the whole suite: TESTS= chose", out.getvalue())

    def test_no_xpass_for_what_did_not_run(self):
        known = {("x86_64", "clone3", "exit status 1"): "why",
                 ("x86_64", "ours", "not ok 3 size_e2big"): "why"}
        _, programs, _ = self.judged(CHOSEN.replace("not ok 2", "ok 2").replace("rc=1", "rc=0"),
                                     known)
        self.assertEqual([p.problems for p in programs], [[], [], []])
        # The whole program, run whole, still shows a listed failure gone.
        _, programs, _ = self.judged(
            CHOSEN.replace("not ok 2", "ok 2").replace("rc=1", "rc=0")
            .replace(" # SKIP not selected by TESTS=", ""), known)
        self.assertTrue(programs[0].problems[0].startswith("XPASS"))

    def test_a_listed_failure_of_a_chosen_case_is_still_known(self):
        known = {("x86_64", "ours", "not ok 2 token_reused"): "why",
                 ("x86_64", "ours", "exit status 1"): "why"}
        _, programs, _ = self.judged(known=known)
        self.assertEqual(programs[0].verdict, "xfail")
        # Another failure of it is not covered.
        _, programs, _ = self.judged(CHOSEN.replace("ok 1 token_ok", "not ok 1 token_ok"), known)
        self.assertEqual(programs[0].verdict, "fail")

    def test_the_guest_must_run_what_was_chosen_and_nothing_else(self):
        def problems(text):
            return report.judge_run(VM, "", text)[2]
        self.assertEqual(problems(CHOSEN.replace("SELECTION ours:token_*", "SELECTION ours")),
                         ["TESTS= chose all of ours, but it left out 1 cases"])
        self.assertEqual(problems(CHOSEN.replace("SELECTION ours:token_*",
                                                 "SELECTION ours:token_*,clone3")),
                         ["TESTS= chose clone3, but the guest left it out"])
        self.assertEqual(problems(CHOSEN.replace("SELECTION ours:token_*", "SELECTION fuzz")),
                         ["ours ran, but TESTS= did not choose it",
                          "TESTS= chose fuzz, but the guest left it out"])
        self.assertEqual(problems(CHOSEN.replace(" # SKIP not selected by TESTS=", "")),
                         ["TESTS= chose some cases of ours, but it ran every case"])
        self.assertEqual(problems(CHOSEN.replace("SELECTION ours:token_*",
                                                 "SELECTION ours:token_*,gone")),
                         ["TESTS= chose gone, which the guest does not have"])
        self.assertEqual(problems(CHOSEN.replace("SHSTK-LAB SELECTION ours:token_*\n", "")),
                         ["the guest left out clone3, but no TESTS= chose what runs",
                          "the guest left out fuzz, but no TESTS= chose what runs"])
        nothing = ("SHSTK-LAB SELECTION x\nSHSTK-LAB NOT-SELECTED clone3\nSHSTK-LAB DONE\n")
        self.assertIn("TESTS= left every program out", problems(nothing))


if __name__ == "__main__":
    unittest.main()
