# SPDX-License-Identifier: GPL-2.0
"""spec.console: the signs of a broken kernel in a console log."""
import contextlib
import io
import tempfile
import unittest

from spec import console

CLEAN = """[    0.000000] Booting Linux on physical CPU 0x0000000000 [0x000f0510]
[    1.234567] Run /init as init process
shstk-lab: running shstk_clone3
[   20.941965] reboot: Power down
"""


class ScanTest(unittest.TestCase):
    def test_clean_log(self):
        self.assertEqual(console.scan(CLEAN), [])

    def test_each_kind_is_found(self):
        cases = {
            "panic": "[    3.1] Kernel panic - not syncing: Attempted to kill init!",
            "oops": "[    3.1] Internal error: Oops: 0000000096000004 [#1] SMP",
            "WARN": "[    3.1] WARNING: CPU: 1 PID: 77 at kernel/fork.c:2345 copy_process+0x1/0x2",
            "KASAN": "[    3.1] BUG: KASAN: slab-out-of-bounds in copy_process+0x10/0x20",
            "BUG": "[    3.1] BUG: unable to handle page fault for address: 0000000000001000",
            "lockdep": "[    3.1] WARNING: possible circular locking dependency detected",
            "kmemleak": "[    3.1] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)",
            "soft lockup": "[    3.1] watchdog: BUG: soft lockup - CPU#0 stuck for 22s!",
            "hung task": "[  240.1] INFO: task shstk_clone3:77 blocked for more than 120 seconds.",
            "IBT": "[    2.1] Missing ENDBR: copy_process+0x0/0x1a40",
        }
        for kind, line in cases.items():
            found = console.scan(CLEAN + line + "\n")
            self.assertEqual(len(found), 1, kind)
            self.assertEqual(found[0][0], kind, line)


    def test_both_forms_of_an_rcu_stall(self):
        # A riscv debug-kernel fuzz's console has the second form, which
        # the scan must catch as well as the first.
        for line in ("[ 90.1] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
                     "[ 1362.248207] rcu: INFO: rcu_sched self-detected stall on CPU"):
            self.assertEqual(console.scan(CLEAN + line + "\n")[0][0], "RCU stall", line)


class MainTest(unittest.TestCase):
    """python3 -m spec.console LOG: a snapshot's boot is checked so."""

    def run_main(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".log") as f:
            f.write(text)
            f.flush()
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = console.main(["console", f.name])
        return rc, out.getvalue()

    def test_clean_log_exits_0(self):
        self.assertEqual(self.run_main(CLEAN), (0, ""))

    def test_each_sign_is_printed_and_exits_1(self):
        rc, out = self.run_main(CLEAN + "[    3.1] Kernel panic - not syncing: x\n")
        self.assertEqual(rc, 1)
        self.assertIn("kernel panic: [    3.1] Kernel panic - not syncing: x", out)


if __name__ == "__main__":
    unittest.main()
