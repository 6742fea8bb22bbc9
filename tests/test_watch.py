# SPDX-License-Identifier: GPL-2.0
"""scripts/watch.sh (make watch): runs its command, again when the tree
changes, not when it does not, and stops with its child on Ctrl-C."""

import os
import signal
import subprocess
import tempfile
import time
import unittest

from tests.test_harness import TOP, default_sigint

WATCH = os.path.join(TOP, "scripts", "watch.sh")


def git(tree, *args):
    subprocess.run(["git", "-C", tree, *args], check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                            GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t"))


class WatchTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.tree = os.path.join(self.tmp.name, "linux")
        os.makedirs(os.path.join(self.tree, "kernel"))
        with open(os.path.join(self.tree, "kernel", "fork.c"), "w") as f:
            f.write("int x;\n")
        git(self.tree, "init", "-q")
        git(self.tree, "add", "-A")
        git(self.tree, "commit", "-q", "-m", "base")
        self.runs = os.path.join(self.tmp.name, "runs")
        self.env = dict(os.environ, SHSTK_KSRC=self.tree, SHSTK_WATCH_SECONDS="1",
                        SHSTK_OUT=os.path.join(self.tmp.name, "out"))

    def tearDown(self):
        self.tmp.cleanup()

    def count(self):
        try:
            with open(self.runs) as f:
                return len(f.read().split())
        except FileNotFoundError:
            return 0

    def wait_for(self, n, seconds=20):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self.count() < n:
            time.sleep(0.1)
        return self.count()

    def test_runs_again_on_a_change_and_stops_on_ctrl_c(self):
        # The command: one word per run, then a sleep the Ctrl-C must end.
        cmd = ["sh", "-c", f"echo run >> {self.runs}; exec sleep 1000"]
        p = subprocess.Popen([WATCH, *cmd], env=self.env, start_new_session=True, preexec_fn=default_sigint,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            self.assertEqual(self.wait_for(1), 1, "the first run did not start")
            # The child still runs: the loop waits for it, it is not restarted.
            time.sleep(2.5)
            self.assertEqual(self.count(), 1)
            os.killpg(p.pid, signal.SIGINT)
            out, _ = p.communicate(timeout=20)
            self.assertEqual(p.returncode, 130, out)
            # Its child (SIGINT ignored, as a background child) got TERM.
            time.sleep(0.5)
            with self.assertRaises(ProcessLookupError, msg="the run's child outlived the watch"):
                os.killpg(p.pid, 0)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()

    def test_change_to_the_tree_runs_again(self):
        cmd = ["sh", "-c", f"echo run >> {self.runs}"]
        p = subprocess.Popen([WATCH, *cmd], env=self.env, start_new_session=True, preexec_fn=default_sigint,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            self.assertEqual(self.wait_for(1), 1)
            time.sleep(2.5)
            self.assertEqual(self.count(), 1, "ran again with no change")
            with open(os.path.join(self.tree, "kernel", "fork.c"), "a") as f:
                f.write("/* edit */\n")
            self.assertEqual(self.wait_for(2), 2, "an edit of a tracked file ran nothing")
            with open(os.path.join(self.tree, "kernel", "new.c"), "w") as f:
                f.write("int y;\n")
            self.assertEqual(self.wait_for(3), 3, "a new file ran nothing")
            # The watch never writes the tree's index.
            self.assertFalse(os.path.exists(os.path.join(self.tree, ".git", "index.lock")))
        finally:
            os.killpg(p.pid, signal.SIGINT)
            try:
                p.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()

    def test_bad_interval_is_named(self):
        r = subprocess.run([WATCH, "true"], env=dict(self.env, SHSTK_WATCH_SECONDS="0.5"),
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("SHSTK_WATCH_SECONDS=0.5", r.stderr)


if __name__ == "__main__":
    unittest.main()
