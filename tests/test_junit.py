# SPDX-License-Identifier: GPL-2.0
"""checks/junit.py: JUnit XML that CI systems read, with the counts that
checks/ counted."""
import contextlib
import io
import json
import os
import tempfile
import unittest
import xml.etree.ElementTree as ET

from checks import junit, report

GUEST = """SHSTK-LAB GUEST kernel=7.3.4 arch=aarch64 cpu_shstk=yes
SHSTK-LAB BEGIN shstk_clone3
KTAP version 1
1..3
ok 1 valid token
not ok 2 reused token
ok 3 x86 only # SKIP not on this arch
SHSTK-LAB END shstk_clone3 rc=1
SHSTK-LAB BEGIN crashy
KTAP version 1
1..2
ok 1 first
SHSTK-LAB END crashy rc=139
SHSTK-LAB DONE
"""


def check_schema(test, root):
    """The shape CI readers (Jenkins, GitLab) expect of JUnit XML."""
    test.assertEqual(root.tag, "testsuites")
    for s in root:
        test.assertEqual(s.tag, "testsuite")
        for attr in ("name", "tests", "failures", "errors", "skipped"):
            test.assertIn(attr, s.attrib)
        test.assertTrue(all(c.tag in ("testcase", "system-err") for c in s))
        cases = [c for c in s if c.tag == "testcase"]
        test.assertEqual(int(s.get("tests")), len(cases))
        test.assertEqual(int(s.get("failures")), sum(c.find("failure") is not None for c in cases))
        test.assertEqual(int(s.get("skipped")), sum(c.find("skipped") is not None for c in cases))
        for c in cases:
            test.assertTrue(c.get("name") and c.get("classname"))
            test.assertLessEqual(len(list(c)), 1)
            for child in c:
                test.assertIn(child.tag, ("failure", "skipped"))
                test.assertTrue(child.get("message"))
    for attr in ("tests", "failures", "skipped"):
        test.assertEqual(int(root.get(attr)), sum(int(s.get(attr)) for s in root))


class RunTest(unittest.TestCase):
    def test_a_run_as_checks_report_counts_it(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "guest.out"), "w") as f:
                f.write(GUEST)
            with open(os.path.join(d, "vm.json"), "w") as f:
                json.dump({"arch": "arm64", "emu": "qemu", "exit": 0, "poweroff_exit": 0,
                           "timeout": False, "seconds": 3}, f)
            self.assertEqual(report.main(["report", d]), 1)
            root = ET.parse(os.path.join(d, "results.junit.xml")).getroot()
            with open(os.path.join(d, "results.json")) as f:
                counted = json.load(f)
        check_schema(self, root)
        passed = int(root.get("tests")) - int(root.get("failures")) - int(root.get("skipped"))
        self.assertEqual((passed, int(root.get("failures")), int(root.get("skipped"))),
                         (counted["passed"], counted["failed"], counted["skipped"]))
        cases = {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}
        self.assertEqual(cases[("arm64.qemu.shstk_clone3", "3 x86 only")].find("skipped")
                         .get("message"), "not on this arch")
        self.assertIsNotNone(cases[("arm64.qemu.shstk_clone3", "2 reused token")].find("failure"))
        crash = cases[("arm64.qemu.crashy", "(program)")].find("failure")
        self.assertIn("exit status 139", crash.get("message") + crash.text)

    def test_make_test_steps_and_a_missing_run_report(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "unit.log"), "w") as f:
                f.write("FAIL: test_x (tests.Foo)\nRan 3 tests\nFAILED (failures=1)\n")
            out = os.path.join(d, "all.xml")
            junit.main(["make-test", d, out, "unit", "unittest", "1", "lint", "ktap", "0",
                        "run-arm64", f"results:{d}/nowhere", "1"])
            root = ET.parse(out).getroot()
        check_schema(self, root)
        cases = {c.get("name"): c for c in root.iter("testcase")}
        self.assertIn("FAIL: test_x", cases["unit"].find("failure").text)
        self.assertIsNone(cases["lint"].find("failure"))
        self.assertIsNotNone(cases["run-arm64"].find("failure"))

    def test_a_step_that_only_skipped_is_a_skip(self):
        with tempfile.TemporaryDirectory() as d:
            why = "this kernel has no shadow stack token in struct clone_args (here)"
            with open(os.path.join(d, "gdb-check-x86_64.log"), "w") as f:
                f.write(f"x86_64   SKIP  make gdb-check  # SKIP {why}\n"
                        "gdb-check x86_64: 0 passed, 0 failed, 1 skipped\n")
            with open(os.path.join(d, "trace-x86_64.log"), "w") as f:
                f.write("trace x86_64: 15 passed, 0 failed, 1 skipped\n")
            out = os.path.join(d, "all.xml")
            junit.main(["make-test", d, out, "gdb-check-x86_64", "gdbsteps", "0",
                        "trace-x86_64", "gdbsteps", "0"])
            root = ET.parse(out).getroot()
        check_schema(self, root)
        cases = {c.get("name"): c for c in root.iter("testcase")}
        self.assertEqual(cases["gdb-check-x86_64"].find("skipped").get("message"), why)
        self.assertIsNone(cases["trace-x86_64"].find("skipped"))

    def test_bad_arguments_are_a_usage_error(self):
        with self.assertRaises(SystemExit) as e:
            junit.main(["make-test", "/tmp", "/tmp/x.xml", "unit", "unittest"])
        self.assertEqual(e.exception.code, 2)

    def test_a_program_tests_left_out_is_one_skipped_case(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "guest.out"), "w") as f:
                f.write(GUEST.replace("SHSTK-LAB BEGIN crashy",
                                      "SHSTK-LAB NOT-SELECTED left\nSHSTK-LAB BEGIN crashy")
                        .replace("SHSTK-LAB GUEST kernel=7.3.4 arch=aarch64 cpu_shstk=yes\n",
                                 "SHSTK-LAB GUEST kernel=7.3.4 arch=aarch64 cpu_shstk=yes\n"
                                 "SHSTK-LAB SELECTION shstk_clone3,crashy\n"))
            with open(os.path.join(d, "vm.json"), "w") as f:
                json.dump({"arch": "arm64", "emu": "qemu", "exit": 0, "poweroff_exit": 0,
                           "timeout": False, "seconds": 3}, f)
            with contextlib.redirect_stdout(io.StringIO()):
                report.main(["report", d])
            root = ET.parse(os.path.join(d, "results.junit.xml")).getroot()
            with open(os.path.join(d, "results.json")) as f:
                counted = json.load(f)
        check_schema(self, root)
        self.assertEqual(int(root.get("skipped")), counted["skipped"])
        case = next(c for c in root.iter("testcase") if c.get("classname") == "arm64.qemu.left")
        self.assertEqual((case.get("name"), case.find("skipped").get("message")),
                         ("(program)", "not selected by TESTS="))


if __name__ == "__main__":
    unittest.main()
