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
            self.assertEqual(trace.check_call(c), [], c)
        self.assertEqual(trace.stage_of(calls[1]), "token")
        self.assertEqual(trace.stage_of(calls[2]), "args")

    def test_success_without_validation_fails(self):
        lines = [line for line in GOOD[:7] if not line.startswith("validate")]
        calls, _ = calls_of(lines)
        self.assertTrue(trace.check_call(calls[0]))

    def test_wrong_ssp_fails(self):
        lines = [line.replace(f"ssp={T + 8:#x}", f"ssp={T:#x}") for line in GOOD[:7]]
        calls, _ = calls_of(lines)
        self.assertIn("not token + 8", trace.check_call(calls[0])[0])

    def test_ssp_from_the_copy_thread_hook(self):
        # x86's script reports the SSP at the alloc hook, not with the task.
        x86 = [f"clone3_enter pid=5 size=96 token={T:#x} word={T + 9:#x}",
               f"alloc pid=5 token={T:#x} ret={T + 8} ssp={T + 8:#x}",
               f"validate pid=5 token={T:#x} ret=0",
               f"newtask pid=5 new_pid=9 token={T:#x}",
               f"clone3_exit pid=5 token={T:#x} ret=9"]
        calls, _ = calls_of(x86)
        self.assertEqual(trace.check_call(calls[0]), [])
        calls, _ = calls_of([line.replace(f"ssp={T + 8:#x}", f"ssp={T:#x}") for line in x86])
        self.assertIn("not token + 8", trace.check_call(calls[0])[0])

    def test_a_token_check_that_also_checks_the_vma(self):
        # patches/: fork.c's shstk_validate_clone() refuses a token outside
        # a shadow stack itself, so the EFAULT comes with a validate event;
        # a value refusal from it is still the token stage.
        lines = [f"clone3_enter pid=5 size=96 token={T:#x} word=0x0",
                 f"alloc pid=5 token={T:#x} ret=0 gcspr={T + 8:#x}",
                 f"validate pid=5 token={T:#x} ret=-14 func=shstk_validate_clone",
                 f"clone3_exit pid=5 token={T:#x} ret=-14",
                 f"clone3_enter pid=5 size=96 token={T:#x} word=0x0",
                 f"alloc pid=5 token={T:#x} ret=0 gcspr={T + 8:#x}",
                 f"validate pid=5 token={T:#x} ret=-22 func=shstk_validate_clone",
                 f"clone3_exit pid=5 token={T:#x} ret=-22"]
        calls, stray = calls_of(lines)
        self.assertEqual(stray, [])
        self.assertEqual([trace.check_call(c) for c in calls], [[], []])
        self.assertEqual([trace.stage_of(c) for c in calls], ["vma", "token"])
        # An EFAULT after a check that let the token through is not explained.
        calls, _ = calls_of([line.replace("ret=-14 func", "ret=0 func") for line in lines[:4]])
        self.assertIn("EFAULT, yet the token was validated", trace.check_call(calls[0])[0])
        # Nor is one from a check that never looks at the VMA (v23's).
        calls, _ = calls_of([line.replace("func=shstk_validate_clone",
                                          "func=arch_shstk_validate_clone") for line in lines[:4]])
        self.assertIn("EFAULT, yet the token was validated", trace.check_call(calls[0])[0])

    def test_refusal_with_a_task_fails(self):
        lines = GOOD[7:10] + [f"newtask pid=5 new_pid=10 token={T:#x} ssp={T + 8:#x}"] + GOOD[10:11]
        calls, _ = calls_of(lines)
        self.assertTrue(any("task was made" in p for p in trace.check_call(calls[0])))

    def test_guest_calls_must_be_the_traced_ones(self):
        events = trace.parse_trace(GOOD)
        seen = [(T, 0, "valid"), (T, -22, "reused"), (T - 1, -22, "misaligned")]
        rows, problems = trace.check_token_calls(events, seen)
        self.assertEqual(problems, [])
        self.assertEqual([r[3] for r in rows], ["pass"] * 3)
        _, problems = trace.check_token_calls(events, seen[:2])
        self.assertTrue(any("unexplained traced call" in p for p in problems), problems)

    def test_each_row_is_the_guests_call(self):
        events = trace.parse_trace(GOOD)
        seen = [(T, 0, "valid"), (T, -22, "reused"), (T - 1, -22, "misaligned")]
        # The guest saw a different return than the trace: that row fails.
        rows, problems = trace.check_token_calls(events, [seen[0], (T, -14, "reused"), seen[2]])
        self.assertEqual([r[3] for r in rows], ["pass", "fail", "pass"])
        self.assertTrue(any("the guest saw -14" in p for p in problems), problems)

    def test_refused_at_the_wrong_stage_fails(self):
        # "normal" must be refused by the VMA check (EFAULT); a trace where
        # the token check refused it, with the guest seeing the same -22,
        # must fail.
        lines = [line.replace(f"{T:#x}", "0x4a4ff8") for line in GOOD[7:11]]
        rows, problems = trace.check_token_calls(trace.parse_trace(lines),
                                                 [(0x4a4ff8, -22, "normal")])
        self.assertEqual(rows[0][3], "fail")
        self.assertTrue(any("not shstk_validate_clone" in p for p in problems), problems)

    def test_without_shadow_stack_the_rest_is_skipped(self):
        # x86 under QEMU: every aligned token refused in copy_thread; the
        # validation the other cases would have shown is counted as skipped.
        N = 0x4b8ff8
        lines = []
        seen = []
        for name, tok in (("valid", N), ("misaligned", N - 1), ("no_token", N),
                          ("normal", N), ("reused", N)):
            lines.append(f"clone3_enter pid=5 size=96 token={tok:#x} word=0x0")
            if tok % 8 == 0:
                lines.append(f"alloc pid=5 token={tok:#x} ret=-22 ssp=0xffffffffffffffea")
            lines.append(f"clone3_exit pid=5 token={tok:#x} ret=-22")
            seen.append((tok, -22, name))
        rows, problems = trace.check_token_calls(trace.parse_trace(lines), seen, False, "QEMU TCG does not emulate CET")
        self.assertEqual(problems, [])
        self.assertEqual([r[3] for r in rows], ["pass"] * 5 + ["skip"] * 4)
        self.assertTrue(all(r[4] == "QEMU TCG does not emulate CET" for r in rows[5:]))
        self.assertIn("copy_thread", rows[0][2])

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
SEEN = [(S, 0, "valid"), (S - 1, -22, "misaligned"), (0x7f569c882ff8, -22, "no_token")]


class VmasTest(unittest.TestCase):
    def check(self, lines, seen=SEEN, shstk=True):
        return trace.check_vmas(trace.parse_trace(lines), seen, shstk, "no CET here")

    def test_a_consistent_log(self):
        rows, problems = self.check(VMAS)
        self.assertEqual(problems, [])
        self.assertEqual([r[3] for r in rows], ["pass"] * 3)

    def test_wrong_stack_pointer_fails(self):
        lines = [line.replace(f"ssp={S + 8:#x}", f"ssp={S:#x}") for line in VMAS]
        _, problems = self.check(lines)
        self.assertIn("not token + 8", problems[0])

    def test_arm64_names_the_token_it_took(self):
        # arm64: GCSPR_EL0 may be set only when the token is consumed (v23),
        # so the hook's event says which token it took; a task without GCS
        # (token 0) is none of the scenario's calls.
        lines = [line.replace(f"ssp={S + 8:#x}", f"token={S:#x} gcspr=0xffffaddcafc0")
                 .replace("ssp=0x7f569c883000", "token=0x7f569c882ff8 gcspr=0xffffaddcafa8")
                 for line in VMAS] + ["copy_thread pid=3 token=0x0 gcspr=0x0 kernel=0 base=0x0 size=0"]
        rows, problems = self.check(lines)
        self.assertEqual(problems, [])
        self.assertEqual([r[3] for r in rows], ["pass"] * 3)
        wrong = [line.replace(f"token={S:#x}", f"token={S - 8:#x}") for line in lines]
        _, problems = self.check(wrong)
        self.assertIn(f"took token {S - 8:#x}", problems[0])

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

    def test_a_refused_token_with_a_shadow_stack_fails_its_row(self):
        # The misaligned row checks something of its own: no copy_thread
        # event for it.  A kernel that set one up from it fails that row.
        lines = VMAS[:4] + [f"copy_thread pid=3 ssp={S - 1 + 8:#x} kernel=0 base=0x0 size=0"] + VMAS[4:]
        rows, problems = self.check(lines)
        self.assertEqual([r[3] for r in rows], ["pass", "fail", "pass"], problems)

    def test_not_exercised_is_skipped_with_its_reason(self):
        # x86 under QEMU: no copy_thread event at all, and what a caller with
        # shadow stacks would have shown is a skip, not a pass.
        rows, problems = self.check(VMAS[:1], shstk=False)
        self.assertEqual(problems, [])
        self.assertEqual([r[3] for r in rows], ["pass", "pass", "pass", "skip", "skip"])
        self.assertEqual({r[4] for r in rows if r[3] == "skip"}, {"no CET here"})


P = 0xffff926c6ff8
PROVENANCE = f"""TRACE READY errno-provenance comm=shstk_gdb
accepted pid=4 token={P:#x} ret=11
refused pid=4 token={P - 1:#x} ret=-22 origin=clone3_args_valid how=inferred
refused pid=4 token={P - 0x2000:#x} ret=-22 origin=fexit:vmlinux:arch_shstk_validate_clone how=probed
refused pid=4 token=0x4b4ff8 ret=-14 origin=shstk_validate_clone how=inferred
refused pid=4 token={P:#x} ret=-22 origin=fexit:vmlinux:arch_shstk_validate_clone how=probed
""".splitlines()
PROVENANCE_SEEN = [(P, 0, "valid"), (P - 1, -22, "misaligned"), (P - 0x2000, -22, "no_token"),
                   (0x4b4ff8, -14, "normal"), (P, -22, "reused")]


class ProvenanceTest(unittest.TestCase):
    def check(self, lines, seen=PROVENANCE_SEEN, shstk=True):
        return trace.check_provenance(trace.parse_trace(lines), seen, shstk, "no CET here")

    def test_a_consistent_log(self):
        rows, problems = self.check(PROVENANCE)
        self.assertEqual(problems, [])
        self.assertEqual([r[3] for r in rows], ["pass"] * 5)

    def test_an_errno_from_the_wrong_place_fails_its_row(self):
        # The VMA check's EFAULT attributed to the pin: the row says so.
        lines = [line.replace("origin=shstk_validate_clone how=inferred",
                              "origin=pin_user_pages_remote how=probed") for line in PROVENANCE]
        rows, problems = self.check(lines)
        self.assertEqual([r[3] for r in rows], ["pass", "pass", "pass", "fail", "pass"])
        self.assertIn("came from pin_user_pages_remote, not shstk_validate_clone", problems[0])

    def test_the_token_check_in_fork_c(self):
        # patches/: both refusals of shstk_validate_clone() are probed; an
        # EINVAL from it is the token stage, an EFAULT the VMA stage.
        lines = [line.replace("origin=fexit:vmlinux:arch_shstk_validate_clone",
                              "origin=fexit:vmlinux:shstk_validate_clone")
                 .replace("origin=shstk_validate_clone how=inferred",
                          "origin=fexit:vmlinux:shstk_validate_clone how=probed")
                 for line in PROVENANCE]
        rows, problems = self.check(lines)
        self.assertEqual(problems, [])
        self.assertEqual([r[3] for r in rows], ["pass"] * 5)
        # The token stage's EINVAL only inferred is not the check's.
        inferred = list(lines)
        inferred[3] = inferred[3].replace("origin=fexit:vmlinux:shstk_validate_clone how=probed",
                                          "origin=shstk_validate_clone how=inferred")
        rows, problems = self.check(inferred)
        self.assertEqual([r[3] for r in rows], ["pass", "pass", "fail", "pass", "pass"])
        # The token stage's EINVAL put on the copy_thread hook fails.
        self.assertIn("origin=fexit:vmlinux:shstk_validate_clone", lines[3])
        lines[3] = lines[3].replace("origin=fexit:vmlinux:shstk_validate_clone",
                                    "origin=copy_thread")
        rows, problems = self.check(lines)
        self.assertEqual([r[3] for r in rows], ["pass", "pass", "fail", "pass", "pass"])

    def test_accepted_where_the_guest_was_refused_fails(self):
        # (the first line is bpftrace's TRACE READY)
        lines = PROVENANCE[:5] + [f"accepted pid=4 token={P:#x} ret=12"]
        _, problems = self.check(lines)
        self.assertEqual(len(problems), 1, problems)

    def test_missing_and_extra_calls_fail(self):
        _, problems = self.check(PROVENANCE[:3])
        self.assertTrue(any("not in the trace" in p for p in problems), problems)
        _, problems = self.check(PROVENANCE, seen=PROVENANCE_SEEN[:4])
        self.assertTrue(any("unexplained traced call" in p for p in problems), problems)

    def test_without_shadow_stack_every_aligned_token_is_copy_threads(self):
        # x86 under stock QEMU: the copy_thread hook refuses them all.
        lines = [f"refused pid=4 token={P:#x} ret=-22 origin=copy_thread how=probed",
                 PROVENANCE[2]]
        seen = [(P, -22, "valid"), (P - 1, -22, "misaligned")]
        rows, problems = self.check(lines, seen, shstk=False)
        self.assertEqual(problems, [])
        self.assertEqual([r[3] for r in rows], ["pass", "pass", "skip"])

if __name__ == "__main__":
    unittest.main()
