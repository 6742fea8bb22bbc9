# SPDX-License-Identifier: GPL-2.0
"""gdb/shstk/decode.py (no gdb needed) and checks.gdbsteps."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gdb"))

from shstk import decode  # noqa: E402
from checks import gdbsteps  # noqa: E402


class TokenTest(unittest.TestCase):
    def test_expected_tokens(self):
        self.assertEqual(decode.expected_token("x86_64", 0x7f0000000ff8), 0x7f0000001001)
        self.assertEqual(decode.expected_token("arm64", 0xffff8c962ff8), 0xffff8c962001)

    def test_verdicts(self):
        a = 0xffffab20aff8
        self.assertEqual(decode.token_verdict("arm64", a, 0xffffab20a001), (True, "valid token"))
        self.assertFalse(decode.token_verdict("arm64", a + 1, 0)[0])
        self.assertIn("misaligned", decode.token_verdict("arm64", a + 1, 0)[1])
        self.assertIn("consumed", decode.token_verdict("arm64", a, 0)[1])
        self.assertIn("EFAULT", decode.token_verdict("arm64", a, None)[1])
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


class GdbStepsTest(unittest.TestCase):
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
