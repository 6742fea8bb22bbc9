# SPDX-License-Identifier: GPL-2.0
"""checks/live.py: each guest program's verdict as it ends, never at odds
with the report that follows."""
import os
import re
import subprocess
import tempfile
import threading
import time
import unittest

from checks import ktap, live, report

RUN = """SHSTK-LAB GUEST kernel=7.3.4+ arch=x86_64 cpu_shstk=yes
SHSTK-LAB SELECTION ours:token_*,crashy,selftest,known
SHSTK-LAB BEGIN ours
KTAP version 1
1..3
ok 1 token_ok
not ok 2 token_reused
ok 3 size_e2big # SKIP not selected by TESTS=
# totals: pass:1 fail:1 skip:1
SHSTK-LAB END ours rc=1
SHSTK-LAB NOT-SELECTED clone3
SHSTK-LAB BEGIN crashy
1..2
ok 1 first
SHSTK-LAB END crashy rc=139
SHSTK-LAB BEGIN selftest
[OK]\tone
[SKIP]\ttwo
# progress: 10 s of 20
[OK]\tthree
SHSTK-LAB END selftest rc=0
SHSTK-LAB BEGIN known
1..1
not ok 1 broken on stock
SHSTK-LAB END known rc=1
SHSTK-LAB NOT-SELECTED last
SHSTK-LAB DONE
"""
KNOWN = {("x86_64/qemu/stock", "known", "not ok 1 broken on stock"): "emulator bug",
         ("x86_64/qemu/stock", "known", "exit status 1"): "the same"}
VERDICT = re.compile(r"^(\S+): (\d+) passed, (\d+) failed, (\d+) skipped \(")


def follower(build="stock 11.1.3"):
    said = []
    return live.Follower("x86_64", "qemu", lambda: build, said.append, KNOWN), said


def feed(f, text):
    for n, line in enumerate(text.splitlines()):
        if f.feed(line, now=float(n)):
            return True
    return False


class FollowerTest(unittest.TestCase):
    def test_what_it_says_in_order(self):
        f, said = follower()
        self.assertTrue(feed(f, RUN))
        self.assertEqual(said[0], "running ours")
        self.assertEqual(said[1], "ours: 1 passed, 1 failed, 1 skipped (7.0 s; 1 cases not "
                                  "selected): FAIL: exit status 1; not ok 2 token_reused")
        self.assertEqual(said[2], "not selected by TESTS=: clone3")
        self.assertEqual(said[3], "running crashy")
        self.assertTrue(said[4].startswith("crashy: 1 passed, 1 failed, 0 skipped (3.0 s): "
                                           "FAIL: exit status 139"), said[4])
        self.assertIn("progress: 10 s of 20", said)
        self.assertEqual(said[-2], "known: 0 passed, 0 failed, 2 skipped (3.0 s): known "
                                   "failures: not ok 1 broken on stock; exit status 1")
        self.assertEqual(said[-1], "not selected by TESTS=: last")

    def test_the_verdicts_are_the_reports(self):
        for build in ("stock 11.1.3", "patched 10.2.2"):
            with self.subTest(build=build):
                f, said = follower(build)
                feed(f, RUN)
                lines = {m.group(1): tuple(int(x) for x in m.groups()[1:])
                         for m in map(VERDICT.match, said) if m}
                _, programs, _ = ktap.parse(RUN)
                report.apply_known("x86_64", programs, KNOWN, "qemu", build)
                ran = [p for p in programs if not p.left_out]
                self.assertEqual(lines, {p.name: report.counts([p], []) for p in ran})
                # The report's totals are the lines' and one skip per program
                # left out.
                self.assertEqual(report.counts(programs, []),
                                 tuple(sum(x) for x in zip(*lines.values(), (0, 0, 2))))

    def test_a_program_the_vm_ended_in_is_a_failure(self):
        f, said = follower()
        self.assertFalse(feed(f, "SHSTK-LAB BEGIN hang\n1..2\nok 1 a\n"))
        f.finish(now=5.0)
        self.assertRegex(said[-1], r"^hang: 1 passed, 1 failed, 0 skipped \(.*\): FAIL: "
                                   r"no END marker")


class FollowTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.path = os.path.join(tmp.name, "guest.out")

    def test_a_finished_boot_is_read_to_the_end(self):
        # The boot is gone (a reaped child): everything it left is read.
        done = subprocess.Popen(["true"])
        done.wait()
        with open(self.path, "w") as f:
            f.write(RUN.replace("SHSTK-LAB DONE\n", "SHSTK-LAB BEGIN cut\nok 1 x"))
        fol, said = follower()
        live.follow(self.path, done.pid, fol, poll=0.01)
        self.assertEqual(sum(bool(VERDICT.match(s)) for s in said), 5)
        self.assertTrue(said[-1].startswith("cut: "), said)

    def test_no_channel_and_no_boot_ends_at_once(self):
        done = subprocess.Popen(["true"])
        done.wait()
        fol, said = follower()
        t0 = time.monotonic()
        live.follow(self.path, done.pid, fol, poll=0.01)
        self.assertLess(time.monotonic() - t0, 1)
        self.assertEqual(said, [])

    def test_a_channel_made_anew_and_filled_as_it_runs(self):
        # The last run's channel, then a new file in its place (boot.sh's
        # rm and the emulator's create), filled a line at a time until DONE
        # while the boot runs (this process).
        with open(self.path, "w") as f:
            f.write("junk\n")
        fol, said = follower()

        def write():
            time.sleep(0.05)
            os.unlink(self.path)
            with open(self.path, "w") as f:
                for line in RUN.splitlines(True):
                    f.write(line)
                    f.flush()
                    time.sleep(0.002)

        t = threading.Thread(target=write)
        t.start()
        live.follow(self.path, os.getpid(), fol, poll=0.01)
        t.join()
        self.assertEqual(said[0], "running ours")
        self.assertEqual(said[-1], "not selected by TESTS=: last")

    def test_pid_alive(self):
        self.assertTrue(live.pid_alive(os.getpid()))
        child = subprocess.Popen(["true"])
        # Ended but not waited for: a zombie, which does not run.
        deadline = time.monotonic() + 5
        while live.pid_alive(child.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertFalse(live.pid_alive(child.pid))
        child.wait()
        self.assertFalse(live.pid_alive(child.pid))


if __name__ == "__main__":
    unittest.main()
