# SPDX-License-Identifier: GPL-2.0
"""gdb/shstk's helpers with gdb mocked (tests/gdbmock.py): the rules they
use, and what each says when a read fails."""
import unittest

from tests import gdbmock

gdb = gdbmock.install()

from shstk import commands, decode, vmas  # noqa: E402

commands.register()

ARM64_SS_RW = 0x4000100073          # rw-p, mayread/write/exec, ss (read from a guest)


class ShadowStackRuleTest(unittest.TestCase):
    """One rule for "is this a shadow stack clone3() accepts": decode's."""

    def setUp(self):
        gdbmock.reset("arm64")

    def test_describe_uses_the_tested_rule(self):
        d = vmas.describe((0x1000, 0x2000, ARM64_SS_RW, None))
        self.assertTrue(d["shadow_stack"])
        self.assertIn("ss", d["names"])
        # The flag without write: shown as a flag, not taken for a usable stack.
        read_only = ARM64_SS_RW & ~(1 << decode.VMA_BITS["WRITE"])
        d = vmas.describe((0x1000, 0x2000, read_only, None))
        self.assertIn("ss", d["names"])
        self.assertFalse(d["shadow_stack"])
        self.assertNotIn("ss", d)


if __name__ == "__main__":
    unittest.main()
