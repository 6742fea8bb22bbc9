# SPDX-License-Identifier: GPL-2.0
"""checks/scenario.py: the one description of the gdb scenario."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gdb"))

from checks import scenario  # noqa: E402
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


if __name__ == "__main__":
    unittest.main()
