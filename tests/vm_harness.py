# SPDX-License-Identifier: GPL-2.0
"""The harness under faults, with real VMs: Ctrl-C or TERM in the middle of
a run, a guest that hangs, two arches at once.  Not picked up by unittest
discover (the name does not start with "test"): make test runs it once the
kernels are built, as `python3 -m unittest tests.vm_harness`;
`python3 -m tests.repeat` runs each test many times in a row.
"""
import os
import signal
import subprocess
import tempfile
import time
import unittest

from tests.test_harness import (CACHE, TOP, default_sigint, emulators_running, kernel_built,
                                run)

# How long a script may take to stop its VM after a signal.
STOP_SECONDS = 10
# How long an emulator may take to appear (the build steps are no-ops here).
START_SECONDS = 120
# What the guest's init writes once every program has run (guest/init.sh).
GUEST_DONE = "SHSTK-LAB DONE"


def processes_with(tag):
    """Processes (other than this one) whose command line or environment
    mentions @tag: the VM, gdb, tail, whatever a run started."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().decode(errors="replace")
        except OSError:
            continue
        if tag in cmdline or tag in environ:
            found.append(f"{pid} {cmdline.strip()}")
    return found


def running_as(lines, names):
    """Whether one of the processes @lines (from processes_with) is itself
    a program named in @names (its comm), not a wrapper whose command line
    names one (tb, timeout, vm/boot.sh)."""
    for line in lines:
        try:
            with open(f"/proc/{line.split()[0]}/comm") as f:
                if f.read().startswith(names):
                    return True
        except OSError:
            pass
    return False


def emulator_up(tag):
    """An emulator process itself of the run @tag is up."""
    return running_as(emulators_running(tag), ("qemu-system", "bochs"))


def kill_session(sid):
    """SIGKILL every process of the session @sid, one this test started
    with start_new_session: by pid, never by a pattern (an emulator sits in
    a process group of its own, GNU timeout's, but in its run's session)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After "(comm)": state, ppid, pgrp, session.
        if int(fields[3]) == sid:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass


@unittest.skipUnless(kernel_built("arm64"), "arm64 kernel not built (make kernel ARCH=arm64)")
class FaultTest(unittest.TestCase):
    def interrupt(self, cmd, results, whole_job, stdin=subprocess.DEVNULL, also=None, ready=None):
        """Start cmd, wait for its emulator (and for the program @also
        itself, of this run), then send a Ctrl-C to the whole job (whole_job) or a
        TERM to the script alone.  The script must exit within STOP_SECONDS,
        non-zero, leave nothing running, and its guest must not have
        finished by itself (results: the run's directory under SHSTK_OUT,
        where guest.out is).  A cmd that starts with "timeout" is stopped
        as CI's limit stops it: a TERM to timeout, which passes it on to
        the script and then to the whole process group.  @ready: a file,
        under SHSTK_OUT, whose appearance also waits (a step that is not
        the command's first)."""
        with tempfile.TemporaryDirectory() as out:
            log_path = os.path.join(out, "script.log")
            with open(log_path, "w") as log:
                p = subprocess.Popen(cmd, cwd=TOP, env=dict(os.environ, SHSTK_OUT=out),
                                     start_new_session=True, stdin=stdin,
                                     stdout=log, stderr=subprocess.STDOUT,
                                     preexec_fn=default_sigint)

            def tail():
                with open(log_path, errors="replace") as f:
                    return "\n  last lines of its output:\n  " + "\n  ".join(f.read().splitlines()[-12:])

            try:
                # The guest's VM running: the case the user's Ctrl-C hits.
                # The program itself for @also: a TERM that comes while gdb
                # loads the kernel's symbols is the one it is slow to act on.
                def started():
                    return emulator_up(out) and (
                        also is None or running_as(processes_with(out), (also[:15],))) and (
                        ready is None or os.path.exists(os.path.join(out, ready)))
                deadline = time.monotonic() + START_SECONDS
                while time.monotonic() < deadline and not started():
                    self.assertIsNone(p.poll(), "the script ended before its emulator started" + tail())
                    time.sleep(0.2)
                self.assertTrue(started(), f"the emulator (and {also}) never started" + tail())
                t0 = time.monotonic()
                if whole_job:
                    os.killpg(p.pid, signal.SIGINT)     # Ctrl-C: the whole job
                else:
                    p.terminate()                       # SIGTERM to the script only
                try:
                    p.wait(timeout=STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    self.fail(f"{cmd[0]} still running {STOP_SECONDS} s after the signal" + tail())
                took = time.monotonic() - t0
                what = f"{' '.join(cmd)}, {'Ctrl-C' if whole_job else 'TERM'}, exit {p.returncode} after {took:.1f} s"
                self.assertNotEqual(p.returncode, 0, what + tail())
                self.assertEqual(emulators_running(out), [], what + ": emulator left" + tail())
                self.assertEqual(processes_with(out), [], what + ": processes left" + tail())
                with open(os.path.join(out, results, "guest.out"), errors="replace") as f:
                    self.assertNotIn(GUEST_DONE, f.read(),
                                     what + ": the guest ran to its end, it was not stopped" + tail())
            finally:
                # Whatever failed above, nothing of this run outlives the test.
                kill_session(p.pid)
                p.wait()
                if p.stdin:
                    p.stdin.close()

    def test_ci_timeout_stops_make_tests_vm_step(self):
        # What CI's time limit does to make test: GNU timeout TERMs its
        # child and then every process of its group, so each script of the
        # lane, its step and the step's vm/boot.sh get a TERM of their own
        # as well as the one each parent passes on.  In the suite's step,
        # once its first program runs: smoke's guest is done too soon.
        self.interrupt(["timeout", "600", "scripts/test.sh", "--steps", "arm64", "qemu"],
                       "arm64", whole_job=False, ready="arm64/first-output")

    def test_ctrl_c_stops_run(self):
        self.interrupt(["scripts/run.sh", "run", "arm64"], "arm64", whole_job=True)

    def test_term_stops_run(self):
        self.interrupt(["scripts/run.sh", "run", "arm64"], "arm64", whole_job=False)

    # Bochs too: its backend builds its command line differently.
    @unittest.skipUnless(kernel_built("x86_64"), "x86_64 kernel not built")
    def test_ctrl_c_stops_run_under_bochs(self):
        self.interrupt(["scripts/run.sh", "run", "x86_64", "bochs"], "x86_64-bochs", whole_job=True)

    @unittest.skipUnless(kernel_built("x86_64"), "x86_64 kernel not built")
    def test_term_stops_run_under_bochs(self):
        self.interrupt(["scripts/run.sh", "run", "x86_64", "bochs"], "x86_64-bochs", whole_job=False)

    def test_ctrl_c_stops_trace(self):
        self.interrupt(["scripts/trace.sh", "arm64"], "arm64/trace", whole_job=True)

    def test_ctrl_c_stops_gdb_check(self):
        self.interrupt(["scripts/gdb-check.sh", "arm64"], "arm64/gdb", whole_job=True)

    def test_term_stops_debug_and_its_gdb(self):
        # gdb waits at its prompt on a pipe that stays open; a Ctrl-C would
        # be gdb's (it interrupts the guest), so only TERM stops make debug.
        self.interrupt(["scripts/debug.sh", "arm64"], "arm64/debug", whole_job=False,
                       stdin=subprocess.PIPE, also="gdb-multiarch")

    def test_hung_guest_is_a_failure_with_the_log_kept(self):
        # A guest program that never ends: the VM is stopped at the timeout.
        with tempfile.TemporaryDirectory() as out:
            prog = os.path.join(out, "hang")
            with open(prog + ".c", "w") as f:
                f.write("int main(void) { for (;;) ; }\n")
            r = run("scripts/tools/tb", "aarch64-linux-gnu-gcc-14", "-static", "-o", prog, prog + ".c")
            self.assertEqual(r.returncode, 0, r.stderr)
            r = run("scripts/run.sh", "run", "arm64", "qemu", prog,
                    env={"SHSTK_OUT": out, "SHSTK_RUN_TIMEOUT": "15"}, timeout=180)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("the guest hung", r.stdout)
            self.assertTrue(os.path.getsize(os.path.join(out, "arm64", "prog", "console.log")) > 0)
            self.assertEqual(emulators_running(out), [])

    @unittest.skipUnless(kernel_built("x86_64"), "x86_64 kernel not built")
    def test_two_arches_at_once(self):
        with tempfile.TemporaryDirectory() as out:
            env = dict(os.environ, SHSTK_OUT=out)
            procs = [subprocess.Popen(["scripts/run.sh", "smoke", a], cwd=TOP, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                     for a in ("arm64", "x86_64")]
            outs = [p.communicate(timeout=300)[0] for p in procs]
            for p, o in zip(procs, outs):
                self.assertEqual(p.returncode, 0, o)
            for a in ("arm64", "x86_64"):
                self.assertTrue(os.path.exists(os.path.join(out, a, "smoke", "results.json")))


@unittest.skipUnless(kernel_built("arm64"), "arm64 kernel not built (make kernel ARCH=arm64)")
class TwoRunsInOneCheckoutTest(unittest.TestCase):
    """Two make runs of one arch in one checkout (one out/): each ends with
    its own complete results, and stopping one leaves the other alone."""

    RUN = ["make", "--no-print-directory", "run", "ARCH=arm64"]
    WAITING = "waiting for another run that writes"

    def start(self, out, log):
        return subprocess.Popen(self.RUN, cwd=TOP, env=dict(os.environ, SHSTK_OUT=out),
                                start_new_session=True, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=default_sigint)

    def wait_for(self, what, cond, p, log_path, seconds=START_SECONDS):
        deadline = time.monotonic() + seconds
        while not cond():
            self.assertIsNone(p.poll(), f"ended before {what}" + self.tail(log_path))
            self.assertLess(time.monotonic(), deadline, f"never {what}" + self.tail(log_path))
            time.sleep(0.2)

    @staticmethod
    def text(log_path):
        with open(log_path, errors="replace") as f:
            return f.read()

    def tail(self, log_path):
        return "\n  its output:\n  " + "\n  ".join(self.text(log_path).splitlines()[-15:])

    def assert_complete(self, p, log_path, out):
        """@p passed, and its own results are the suite's whole list."""
        self.assertEqual(p.wait(timeout=600), 0, self.tail(log_path))
        text = self.text(log_path)
        self.assertRegex(text, r"arm64/qemu: [1-9][0-9]* passed, 0 failed", self.tail(log_path))
        self.assertRegex(text, r"\[each-arch\.sh\]   arm64 +[1-9][0-9]* passed, 0 failed")
        with open(os.path.join(out, "arm64", "guest.out"), errors="replace") as f:
            self.assertIn(GUEST_DONE, f.read())

    def stop_all(self, procs):
        # The test's own runs only: each is a session of its own.
        for p in procs:
            kill_session(p.pid)
            p.wait()

    def test_two_runs_at_once_both_complete(self):
        with tempfile.TemporaryDirectory() as out:
            logs = [os.path.join(out, f"run{i}.log") for i in range(2)]
            procs = []
            try:
                for path in logs:
                    with open(path, "w") as log:
                        procs.append(self.start(out, log))
                for p, path in zip(procs, logs):
                    self.assert_complete(p, path, out)
                self.assertTrue(any(self.WAITING in self.text(path) for path in logs),
                                "neither run waited for the other")
            finally:
                self.stop_all(procs)
            self.assertEqual(emulators_running(out), [])

    def term_one_of_two(self, victim):
        """A runs its VM while B waits for the output directory; a TERM
        to @victim ("first" or "second") must leave the other's run whole."""
        with tempfile.TemporaryDirectory() as out:
            logs = [os.path.join(out, f"run{i}.log") for i in range(2)]
            procs = []
            try:
                with open(logs[0], "w") as log:
                    procs.append(self.start(out, log))
                self.wait_for("its emulator started", lambda: emulator_up(out), procs[0], logs[0])
                vm = emulators_running(out)
                with open(logs[1], "w") as log:
                    procs.append(self.start(out, log))
                self.wait_for("it waited for the first run",
                              lambda: self.WAITING in self.text(logs[1]), procs[1], logs[1], 60)
                stopped, kept = (0, 1) if victim == "first" else (1, 0)
                procs[stopped].terminate()
                self.assertNotEqual(procs[stopped].wait(timeout=STOP_SECONDS), 0,
                                    self.tail(logs[stopped]))
                if kept == 0:
                    self.assertEqual(emulators_running(out), vm, "the first run's VM was touched")
                self.assert_complete(procs[kept], logs[kept], out)
            finally:
                self.stop_all(procs)
            self.assertEqual(emulators_running(out), [])
            self.assertEqual(processes_with(out), [])

    def test_term_to_the_waiting_run_leaves_the_running_one_alone(self):
        self.term_one_of_two("second")

    def test_term_to_the_running_run_lets_the_waiting_one_run(self):
        self.term_one_of_two("first")


@unittest.skipUnless(kernel_built("arm64"), "arm64 kernel not built (make kernel ARCH=arm64)")
class ConcurrentBuildTest(unittest.TestCase):
    def test_two_guest_image_builds_at_once(self):
        # make test's two lanes may build one arch's image at the same
        # moment (a kernel changed: every image is rebuilt); its program
        # list must come out once, not twice (each program run twice).
        tests = os.path.join(CACHE, "guest", "arm64", "smoke.tests")
        for _ in range(3):
            procs = [subprocess.Popen(["scripts/build/guest.sh", "arm64", "smoke"], cwd=TOP,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                     for _ in range(2)]
            for p in procs:
                out = p.communicate(timeout=300)[0]
                self.assertEqual(p.returncode, 0, out)
            with open(tests) as f:
                lines = f.read().splitlines()
            self.assertTrue(lines, "no programs in " + tests)
            self.assertEqual(len(lines), len(set(lines)), f"{tests}: {lines}")


if __name__ == "__main__":
    unittest.main()
