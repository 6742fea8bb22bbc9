# SPDX-License-Identifier: GPL-2.0
"""The harness under faults, with real VMs: Ctrl-C in the middle of a run,
a guest that hangs, two arches at once.  Not picked up by unittest discover
(the name does not start with "test"): make test runs it once the kernels are
built, as `python3 -m unittest tests.vm_harness`.
"""
import os
import signal
import subprocess
import tempfile
import time
import unittest

from tests.test_harness import TOP, emulators_running, kernel_built, run


@unittest.skipUnless(kernel_built("arm64"), "arm64 kernel not built (make kernel ARCH=arm64)")
class FaultTest(unittest.TestCase):
    def interrupt(self, cmd, whole_job):
        """Start cmd, wait for its emulator, signal it; nothing may be left."""
        with tempfile.TemporaryDirectory() as out:
            p = subprocess.Popen(cmd, cwd=TOP, env=dict(os.environ, SHSTK_OUT=out),
                                 start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 120
            while time.time() < deadline and not emulators_running(out):
                time.sleep(0.2)
            self.assertTrue(emulators_running(out), "the emulator never started")
            if whole_job:
                os.killpg(p.pid, signal.SIGINT)     # Ctrl-C: the whole job
            else:
                p.terminate()                       # SIGTERM to the script only
            p.wait(timeout=30)
            time.sleep(1)
            self.assertEqual(emulators_running(out), [])
            self.assertNotEqual(p.returncode, 0)

    def test_ctrl_c_leaves_nothing_running(self):
        self.interrupt(["scripts/run.sh", "run", "arm64"], whole_job=True)

    def test_term_to_the_script_alone_leaves_nothing_running(self):
        self.interrupt(["scripts/run.sh", "run", "arm64"], whole_job=False)

    # Bochs too: its command line names no console file, so boot-vm.sh's
    # last resort finds it by the backend's EMU_MATCH (a Bochs once outlived
    # a killed make fuzz when that looked for console.log).
    @unittest.skipUnless(kernel_built("x86_64"), "x86_64 kernel not built")
    def test_ctrl_c_and_term_leave_no_bochs_running(self):
        self.interrupt(["scripts/run.sh", "run", "x86_64", "bochs"], whole_job=True)
        self.interrupt(["scripts/run.sh", "run", "x86_64", "bochs"], whole_job=False)

    def test_hung_guest_is_a_failure_with_the_log_kept(self):
        # A guest program that never ends: the VM is stopped at the timeout.
        with tempfile.TemporaryDirectory() as out:
            prog = os.path.join(out, "hang")
            with open(prog + ".c", "w") as f:
                f.write("int main(void) { for (;;) ; }\n")
            r = run("scripts/tb", "aarch64-linux-gnu-gcc-14", "-static", "-o", prog, prog + ".c")
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


if __name__ == "__main__":
    unittest.main()
