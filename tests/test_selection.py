# SPDX-License-Identifier: GPL-2.0
"""spec/selection.py: what TESTS= chooses of a suite, and its errors; the
guest's side of it (guest/lib/case.h, guest/init.sh) held to the same
words."""
import contextlib
import io
import os
import re
import unittest

from spec import selection
from spec.selection import Program, SelectionError
from tests.test_harness import TOP, run

# A suite like the real one: two programs with cases, selftests without,
# one program of another arch only.
PROGS = [
    Program("ours", ("x86_64", "arm64"), ("run",), "guest:ours.c",
            ["token_ok", "token_reused", "size_e2big"]),
    Program("clone3", ("x86_64", "arm64"), ("run",), "kselftest:clone3/clone3"),
    Program("insns", ("x86_64",), ("run",), "guest:insns.c", ["rdssp", "wrss_token"]),
    Program("gcs/basic", ("arm64",), ("run",), "kselftest:arm64/gcs/basic"),
    Program("fuzz", ("x86_64", "arm64"), ("fuzz",), "guest:fuzz.c"),
]


def resolve(text, arch="x86_64", suite="run"):
    return selection.resolve(text, arch, suite, PROGS)


class ResolveTest(unittest.TestCase):
    def test_programs_by_name_and_glob_whole(self):
        chosen, _ = resolve("clone3")
        self.assertEqual(chosen, {"clone3": None})
        chosen, _ = resolve("*s*")
        self.assertEqual(chosen, {"ours": None, "insns": None})

    def test_comma_or_space_separated_in_the_suites_order(self):
        for text in ("insns,ours", "insns ours", " insns , ours\n"):
            chosen, _ = resolve(text)
            self.assertEqual(list(chosen), ["ours", "insns"], text)

    def test_cases_by_program_and_glob(self):
        chosen, _ = resolve("ours:token_*")
        self.assertEqual(chosen, {"ours": ["token_*"]})
        self.assertEqual(selection.guest_word(chosen), "ours:token_*")

    def test_a_bare_word_that_names_no_program_names_cases(self):
        chosen, _ = resolve("*token*")
        self.assertEqual(chosen, {"ours": ["*token*"], "insns": ["*token*"]})
        self.assertEqual(selection.guest_word(chosen), "ours:*token*,insns:*token*")

    def test_a_program_whole_wins_over_its_cases(self):
        chosen, _ = resolve("ours:token_ok,ours,ours:size_*")
        self.assertEqual(chosen, {"ours": None})

    def test_every_case_chosen_is_the_whole_program(self):
        chosen, _ = resolve("ours:token_*,ours:size_e2big")
        self.assertEqual(chosen, {"ours": None})

    def test_globs_of_one_program_add_up_once_each(self):
        chosen, _ = resolve("ours:token_ok ours:size_* ours:token_ok")
        self.assertEqual(chosen, {"ours": ["token_ok", "size_*"]})

    def test_what_is_left_out_is_said(self):
        _, notes = resolve("ours:token_*")
        self.assertEqual(notes, ["TESTS=ours:token_*: runs ours (2 of 3 cases); "
                                 "leaves out clone3, insns"])

    def test_a_word_of_another_arch_is_a_note_and_may_choose_nothing(self):
        chosen, notes = resolve("gcs/*", "x86_64")
        self.assertEqual(chosen, {})
        self.assertEqual(notes, ["TESTS=: 'gcs/*' is not in x86_64's run suite (only on arm64)"])
        chosen, notes = resolve("insns,clone3", "arm64")
        self.assertEqual(chosen, {"clone3": None})
        self.assertIn("'insns' is not in arm64's run suite (only on x86_64)", notes[0])

    def test_the_suite_counts(self):
        chosen, _ = resolve("fuzz", suite="fuzz")
        self.assertEqual(chosen, {"fuzz": None})
        with self.assertRaises(SelectionError):
            resolve("fuzz")


class ErrorTest(unittest.TestCase):
    def error(self, text, arch="x86_64"):
        with self.assertRaises(SelectionError) as e:
            resolve(text, arch)
        return str(e.exception)

    def test_a_word_that_matches_nothing_is_named_with_the_names_there_are(self):
        msg = self.error("clone3,ourz")
        first, *rest = msg.splitlines()
        self.assertEqual(first, "TESTS=: 'ourz' matches no program of the run suite on any "
                                "arch, and no case of one")
        self.assertIn("  programs of the run suite on x86_64: ours clone3 insns", rest)
        self.assertIn("  cases of ours (ours:CASE, or CASE alone): token_ok token_reused "
                      "size_e2big", rest)
        self.assertIn("  cases of insns (insns:CASE, or CASE alone): rdssp wrss_token", rest)
        self.assertIn("  on other arches only: gcs/basic", rest)
        # The fuzz suite's program is not a name of the run suite.
        self.assertNotIn("fuzz", msg)

    def test_a_case_glob_that_matches_no_case(self):
        self.assertEqual(self.error("ours:nothing*").splitlines()[0],
                         "TESTS=: 'ours:nothing*': no case of ours matches 'nothing*'")

    def test_cases_of_a_program_without_any(self):
        self.assertIn("clone3 has no cases TESTS= can choose", self.error("clone3:x"))

    def test_malformed_words(self):
        for word in ("a:b:c", ":x", "x:", "ours:tok[en]", "a=b", "x\\y"):
            with self.subTest(word=word):
                msg = self.error(word)
                self.assertIn(f"'{word}'", msg)

    def test_empty(self):
        self.assertIn("TESTS= is empty", self.error(" , "))


class GuestWordTest(unittest.TestCase):
    def test_round_trip(self):
        for chosen in ({"ours": None}, {"ours": ["a*", "b"], "gcs/basic": None},
                       {"insns": ["?x*"]}):
            self.assertEqual(selection.parse_guest_word(selection.guest_word(chosen)), chosen)
        self.assertEqual(selection.parse_guest_word(""), {})


class MainTest(unittest.TestCase):
    """The first line scripts/lib/entry.sh reads: some WORD, whole or none."""

    def main(self, *args):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = selection.main(["selection", *args])
        return rc, out.getvalue().splitlines()

    def test_kinds(self):
        rc, lines = self.main("x86_64", "run", "shstk_clone3:*token*")
        self.assertEqual((rc, lines[0]), (0, "some shstk_clone3:*token*"))
        rc, lines = self.main("x86_64", "run", "*")
        self.assertEqual((rc, lines[0]), (0, "whole"))
        rc, lines = self.main("arm64", "run", "cet_insns")
        self.assertEqual((rc, lines[0]), (0, "none"))
        rc, lines = self.main("x86_64", "run", "shstk_clon3")
        self.assertEqual(rc, 1)
        self.assertIn("'shstk_clon3'", lines[0])


class RealSuiteTest(unittest.TestCase):
    """The real guest/tests.list and sources."""

    def test_shstk_clone3_has_its_cases(self):
        progs = {p.name: p for p in selection.programs()}
        with open(os.path.join(TOP, "guest", "shstk_clone3.c")) as f:
            n = len(re.findall(r"^CASE\(", f.read(), re.M))
        self.assertGreater(n, 20)
        self.assertEqual(len(progs["shstk_clone3"].cases), n)
        self.assertIn("race_same_token_one_wins", progs["shstk_clone3"].cases)
        self.assertIsNone(progs["clone3"].cases)

    def test_the_guest_gives_the_reason_the_checks_know(self):
        with open(os.path.join(TOP, "guest", "lib", "case.h")) as f:
            m = re.search(r'#define CASE_NOT_SELECTED\s+"([^"]*)"', f.read())
        self.assertEqual(m.group(1), selection.NOT_SELECTED)

    def test_the_cases_programs_take_minus_t(self):
        # The programs TESTS= can choose cases of are the ones main()
        # hands its command line to case_options().
        for p in selection.programs():
            if p.cases:
                with open(os.path.join(TOP, "guest", p.source[len("guest:"):])) as f:
                    text = f.read()
                self.assertIn("case_options(argc, argv);", text, p.name)
                self.assertIn("if (!case_selected(c)) {", text, p.name)

    def test_init_reads_the_word_and_reports_what_it_left_out(self):
        with open(os.path.join(TOP, "guest", "init.sh")) as f:
            init = f.read()
        self.assertIn("shstk.tests=*) tests=${arg#shstk.tests=} ;;", init)
        self.assertIn('emit "SHSTK-LAB SELECTION $tests"', init)
        self.assertIn('emit "SHSTK-LAB NOT-SELECTED $name"', init)


class EntryPointTest(unittest.TestCase):
    """A bad TESTS= stops the entry point at once, before any build."""

    def test_a_bad_name_stops_make_run_before_anything(self):
        r = run("scripts/run.sh", "run", "x86_64", env={"SHSTK_TESTS": "shstk_clon3"},
                timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("error: TESTS=: 'shstk_clon3' matches no program", r.stderr)
        self.assertIn("programs of the run suite on x86_64: shstk_clone3", r.stderr)
        self.assertNotIn("[build/", r.stderr)

    def test_fuzz_too(self):
        r = run("scripts/fuzz.sh", "arm64", env={"SHSTK_TESTS": "nosuch"}, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("'nosuch' matches no program of the fuzz suite", r.stderr)
        self.assertNotIn("[build/", r.stderr)

    def test_where_tests_is_refused(self):
        for cmd, words in ((("scripts/run.sh", "smoke", "x86_64"), "make smoke runs its one"),
                           (("scripts/run.sh", "run", "x86_64", "qemu", "/bin/true"),
                            "PROG= runs your program instead"),
                           (("scripts/trace.sh", "x86_64"), "make trace runs shstk_gdb alone"),
                           (("scripts/test.sh", "x86_64"), "make test runs the whole suite")):
            with self.subTest(cmd=cmd):
                r = run(*cmd, env={"SHSTK_TESTS": "shstk_clone3"}, timeout=30)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(words, r.stderr)
        r = run("make", "--no-print-directory", "gdb-check", "ARCH=x86_64", "TESTS=clone3",
                timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("TESTS= goes with make run and make fuzz: make gdb-check", r.stderr)

    def test_make_hands_tests_to_run_and_fuzz_only(self):
        for target, arch in (("run", "x86_64"), ("fuzz", "arm64")):
            with self.subTest(target=target):
                r = run("make", "--no-print-directory", target, f"ARCH={arch}",
                        "TESTS=nosuch", timeout=30)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(f"[{target}.sh] error: TESTS=: 'nosuch' matches no program",
                              r.stderr)

if __name__ == "__main__":
    unittest.main()
