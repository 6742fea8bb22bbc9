# SPDX-License-Identifier: GPL-2.0
"""spec/scenario.py: the one description of the gdb scenario."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gdb"))

from spec import scenario  # noqa: E402
from shstk import decode  # noqa: E402

QEMU_X86 = ("console=ttyS0 panic=-1 oops=panic loglevel=5 shstk.out=/dev/hvc0 "
            "shstk.why=QEMU_TCG_does_not_emulate_CET")
QEMU_ARM64 = "console=ttyAMA0 panic=-1 oops=panic loglevel=5 shstk.out=/dev/hvc0"


class DeclaredTest(unittest.TestCase):
    """Step 0 ("0 scenario") is a check that can fail."""

    def test_declaration_from_the_command_line(self):
        self.assertEqual(scenario.declared_shadow_stack(QEMU_X86),
                         (False, "QEMU TCG does not emulate CET"))
        self.assertEqual(scenario.declared_shadow_stack(QEMU_ARM64), (True, None))
        self.assertEqual(scenario.declared_shadow_stack(""), (True, None))

    def test_program_as_declared_passes(self):
        ok, expect, problems = scenario.scenario_check(True, True, True)
        self.assertTrue(ok, problems)
        self.assertIn("on", expect)
        ok, expect, problems = scenario.scenario_check(False, False, False, "no CET")
        self.assertTrue(ok, problems)
        self.assertIn("no CET", expect)

    def test_program_without_shadow_stack_where_one_is_declared_fails(self):
        # arm64 with GCS, or Bochs: the program could not enable it.
        ok, _, problems = scenario.scenario_check(False, True, True)
        self.assertFalse(ok)
        self.assertIn("the program's shadow stack is off", problems[0])

    def test_cpu_that_lost_its_shadow_stack_fails(self):
        # e.g. an emulator update that drops GCS: everything would follow the
        # refusal path and pass, were it not for the declaration.
        ok, _, problems = scenario.scenario_check(False, True, False)
        self.assertFalse(ok)
        self.assertEqual(len(problems), 2)
        ok, _, problems = scenario.scenario_check(True, False, True, "no CET")
        self.assertFalse(ok)

    def test_unreadable_cpu_features_are_not_judged(self):
        self.assertTrue(scenario.scenario_check(True, True, None)[0])
        self.assertFalse(scenario.scenario_check(False, True, None)[0])


class LiveSspRegisterTest(unittest.TestCase):
    """Step 5 checks the live SSP where the gdbstub shows it, else skips."""

    def test_register_by_arch(self):
        self.assertEqual(decode.live_ssp_register("arm64", {"x0", "GCSPR_EL0"}), "GCSPR_EL0")
        self.assertIsNone(decode.live_ssp_register("arm64", {"x0", "sp"}))
        self.assertEqual(decode.live_ssp_register("x86_64", {"rax", "pl3_ssp"}), "pl3_ssp")
        self.assertIsNone(decode.live_ssp_register("x86_64", {"rax", "rip"}))

    def test_cpu_feature_words(self):
        self.assertEqual(decode.cpu_feature_word("x86_64"), ("boot_cpu_data.x86_capability[11]", 23))
        self.assertEqual(decode.cpu_feature_word("arm64"), ("elf_hwcap[0]", 32))


TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class OneDescriptionTest(unittest.TestCase):
    """The cases are written once: the guest program gets them as a header."""

    def test_stages_follow_the_kernel(self):
        self.assertEqual([scenario.stage(c, True) for c in scenario.CASE_NAMES],
                         ["accepted", "args", "token", "vma", "token"])
        self.assertEqual([scenario.stage(c, False) for c in scenario.CASE_NAMES],
                         ["caller", "args", "caller", "caller", "caller"])
        self.assertEqual([scenario.want_ret(c, True) for c in scenario.CASE_NAMES],
                         [0, -22, -22, -14, -22])
        self.assertEqual(scenario.gdb_path("valid", True),
                         ["entry", "alloc", "alloc_ret", "validate", "validate_ret", "newtask",
                          "parent"])
        self.assertEqual(scenario.gdb_path("misaligned", False), ["entry", "parent"])

    def test_header_lists_the_cases_in_order(self):
        header = scenario.c_header()
        rows = re.findall(r'\{ "(\w+)", SCENARIO_(\w+), (\S+), (\S+) \}', header)
        self.assertEqual([r[0] for r in rows], scenario.CASE_NAMES)
        self.assertEqual(rows[3], ("normal", "ORDINARY_MEMORY", "-EFAULT", "-EINVAL"))

    def test_guest_program_makes_every_kind_of_token(self):
        with open(os.path.join(TOP, "guest", "shstk_gdb.c")) as f:
            source = f.read()
        self.assertIn('#include "shstk_scenario.h"', source)
        for kind in scenario.TOKEN_KINDS:
            self.assertIn(f"SCENARIO_{kind.upper()}]", source)
        # ... and spells no case of its own.
        for name in scenario.CASE_NAMES:
            self.assertNotIn(f'"{name}"', source)

    @unittest.skipUnless(shutil.which("gcc"), "no host gcc to compile the header with")
    def test_header_compiles(self):
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, "-m", "spec.scenario", "--c-header"], cwd=TOP,
                               capture_output=True, text=True, check=True)
            with open(os.path.join(d, "shstk_scenario.h"), "w") as f:
                f.write(r.stdout)
            with open(os.path.join(d, "t.c"), "w") as f:
                f.write('#include "shstk_scenario.h"\n'
                        "int main(void) { return scenario_cases[3].want_with_shstk != -EFAULT; }\n")
            r = subprocess.run(["gcc", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                                os.path.join(d, "t.c")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
