# SPDX-License-Identifier: GPL-2.0
"""checks.trace: the bpftrace log against what the guest saw."""
import unittest

from checks import trace

T = 0xffffb4901ff8
GOOD = f"""TRACE READY token-validation comm=shstk_gdb
map_shadow_stack pid=5 size=4096 flags=1 ret=0xffffb4901000
clone3_enter pid=5 size=96 token={T:#x} word={T & ~0xfff | 1:#x}
alloc pid=5 token={T:#x} ret=0 gcspr={T + 8:#x}
validate pid=5 token={T:#x} ret=0
newtask pid=5 new_pid=9 token={T:#x} ssp={T + 8:#x}
clone3_exit pid=5 token={T:#x} ret=9
clone3_enter pid=5 size=96 token={T:#x} word=0x0
alloc pid=5 token={T:#x} ret=0 gcspr={T + 8:#x}
validate pid=5 token={T:#x} ret=-22
clone3_exit pid=5 token={T:#x} ret=-22
clone3_enter pid=5 size=96 token={T - 1:#x} word=none
clone3_exit pid=5 token={T - 1:#x} ret=-22
""".splitlines()


def calls_of(lines):
    return trace.group_calls(trace.parse_trace(lines))


class TraceTest(unittest.TestCase):
    def test_a_consistent_log(self):
        calls, stray = calls_of(GOOD)
        self.assertEqual(stray, [])
        self.assertEqual([(c["token"], c["ret"]) for c in calls], [(T, 9), (T, -22), (T - 1, -22)])
        for c in calls:
            self.assertEqual(trace.check_call(c, "arm64"), [], c)
        self.assertEqual(trace.where_refused(calls[1]), "arch_shstk_validate_clone: not the token")
        self.assertEqual(trace.where_refused(calls[2]), "clone3_args_valid (misaligned)")

    def test_success_without_validation_fails(self):
        lines = [line for line in GOOD[:7] if not line.startswith("validate")]
        calls, _ = calls_of(lines)
        self.assertTrue(trace.check_call(calls[0], "arm64"))

    def test_wrong_ssp_fails(self):
        lines = [line.replace(f"ssp={T + 8:#x}", f"ssp={T:#x}") for line in GOOD[:7]]
        calls, _ = calls_of(lines)
        self.assertIn("not token + 8", trace.check_call(calls[0], "arm64")[0])

    def test_refusal_with_a_task_fails(self):
        lines = GOOD[7:10] + [f"newtask pid=5 new_pid=10 token={T:#x} ssp={T + 8:#x}"] + GOOD[10:11]
        calls, _ = calls_of(lines)
        self.assertTrue(any("task was made" in p for p in trace.check_call(calls[0], "arm64")))

    def test_guest_calls_must_be_the_traced_ones(self):
        events = trace.parse_trace(GOOD)
        seen = [(T, 0, "ok"), (T, -22, "reused"), (T - 1, -22, "misaligned")]
        rows, problems = trace.check_token_calls(events, seen, "arm64")
        self.assertEqual(problems, [])
        self.assertEqual(len(rows), 3)
        _, problems = trace.check_token_calls(events, seen[:2], "arm64")
        self.assertTrue(any("not the traced ones" in p for p in problems), problems)

    def test_stray_event_is_unexplained(self):
        _, stray = calls_of([f"validate pid=5 token={T:#x} ret=0"])
        self.assertEqual(len(stray), 1)


S = 0x7f569c884ff8
VMAS = f"""TRACE READY shstk-vmas comm=shstk_gdb
map pid=3 addr=0x7f569c884000 size=4096
map pid=3 addr=0x7f569c882000 size=4096
copy_thread pid=3 ssp={S + 8:#x} kernel=0 base=0x0 size=0
exit pid=7
copy_thread pid=3 ssp=0x7f569c883000 kernel=0 base=0x0 size=0
""".splitlines()
# What the scenario printed: (token, result, case)
SEEN = [(S, 0, "ok"), (S - 1, -22, "misaligned"), (0x7f569c882ff8, -22, "no_token")]


class VmasTest(unittest.TestCase):
    def check(self, lines, seen=SEEN, shstk=True):
        return trace.check_vmas(trace.parse_trace(lines), seen, shstk)

    def test_a_consistent_log(self):
        rows, problems = self.check(VMAS)
        self.assertEqual(problems, [])
        self.assertEqual([ok for *_, ok in rows], [True, True, True])

    def test_wrong_stack_pointer_fails(self):
        lines = [line.replace(f"ssp={S + 8:#x}", f"ssp={S:#x}") for line in VMAS]
        _, problems = self.check(lines)
        self.assertIn("not token + 8", problems[0])

    def test_accepted_token_outside_every_mapping_fails(self):
        _, problems = self.check([line for line in VMAS if "0x7f569c884000" not in line])
        self.assertTrue(any("no traced map_shadow_stack" in p for p in problems), problems)

    def test_missing_and_extra_events_fail(self):
        _, problems = self.check(VMAS[:4])
        self.assertTrue(any("no copy_thread event" in p for p in problems), problems)
        _, problems = self.check(VMAS, seen=SEEN[:2])
        self.assertTrue(any("unexplained copy_thread" in p for p in problems), problems)

    def test_no_shadow_stack_means_no_events(self):
        rows, problems = self.check(VMAS[:1], shstk=False)
        self.assertEqual(problems, [])
        _, problems = self.check(VMAS, shstk=False)
        self.assertTrue(problems)


if __name__ == "__main__":
    unittest.main()
