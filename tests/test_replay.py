# SPDX-License-Identifier: GPL-2.0
"""checks/replay.py on made-up replay logs: a good set passes, and each way
a replay can go wrong is a failure."""
import copy
import importlib.util
import json
import os
import tempfile
import unittest

from checks import replay

TOKEN = 0x7fff9702aff8
WIN, LOSE, CHILD = 101, 102, 103

STOPS = [
    {"stop": "validate", "pid": WIN, "comm": "token_race", "pc": 0xffff1000, "icount": 1000,
     "token": TOKEN, "word": TOKEN + 8, "valid_token": True},
    {"stop": "validate_ret", "pid": WIN, "comm": "token_race", "pc": 0xffff2000, "icount": 1100,
     "ret": 0},
    {"stop": "child", "pid": CHILD, "comm": "token_race", "pc": 0x401000, "icount": 1500,
     "ssp": TOKEN + 8},
    {"stop": "parent", "pid": WIN, "comm": "token_race", "pc": 0x401010, "icount": 1600,
     "ret": CHILD},
    {"stop": "validate", "pid": LOSE, "comm": "token_race", "pc": 0xffff1000, "icount": 2000,
     "token": TOKEN, "word": 0, "valid_token": False},
    {"stop": "validate_ret", "pid": LOSE, "comm": "token_race", "pc": 0xffff2000, "icount": 2100,
     "ret": -22},
    {"stop": "parent", "pid": LOSE, "comm": "token_race", "pc": 0x401010, "icount": 2200,
     "ret": -22},
    {"stop": "done", "stops": 7},
]

REVERSE = [
    dict(STOPS[2], step="child"),
    dict(STOPS[0], step="reverse-continue"),
    {"step": "reverse-stepi", "icount_before": 1000, "icount": 999, "pc": 0xffff0ffc},
    {"step": "stepi", "icount": 1000, "pc": 0xffff1000, "back_at": 0xffff1000},
    dict(STOPS[1], step="forward to the return", token=TOKEN, word=0),
]

GUEST = """SHSTK-LAB BEGIN token_race
KTAP version 1
1..1
ok 1 race_one_token_one_winner
# totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0
SHSTK-LAB END token_race rc=0
"""


class ReplayCheckTest(unittest.TestCase):
    def write(self, root, stops1=STOPS, stops2=STOPS, reverse=REVERSE, rcs=("0", "0", "0"),
              vm=None, guest=GUEST):
        os.makedirs(os.path.join(root, "record"))
        with open(os.path.join(root, "record", "vm.json"), "w") as f:
            json.dump(vm or {"exit": 0, "poweroff_exit": 0, "timeout": False}, f)
        for name, text in (("console.log", "Linux version 7.3.4\n"), ("guest.out", guest)):
            with open(os.path.join(root, "record", name), "w") as f:
                f.write(text)
        for name, steps, rc in zip(("stops-1", "stops-2", "reverse"), (stops1, stops2, reverse), rcs):
            os.makedirs(os.path.join(root, name))
            with open(os.path.join(root, name, "steps.jsonl"), "w") as f:
                f.writelines(json.dumps(s) + "\n" for s in steps)
            with open(os.path.join(root, name, "gdb.rc"), "w") as f:
                f.write(rc + "\n")

    def failures(self, **kw):
        with tempfile.TemporaryDirectory() as root:
            self.write(root, **kw)
            return [(check, p) for check, problems, *_ in replay.judge(root)
                    for p in problems or ()]

    def test_good_replays_pass(self):
        self.assertEqual(self.failures(), [])

    def test_a_reverse_not_run_is_a_skip_with_its_reason(self):
        with tempfile.TemporaryDirectory() as root:
            self.write(root, reverse=[])
            with open(os.path.join(root, "reverse", "not-run"), "w") as f:
                f.write("this QEMU cannot\n")
            rows = replay.judge(root)
        self.assertEqual(rows[-1][1:], (None, "this QEMU cannot"))
        self.assertEqual([p for _, problems, *_ in rows[:-1] for p in problems], [])

    def test_replays_that_differ_fail(self):
        other = copy.deepcopy(STOPS)
        other[4]["icount"] += 1
        fails = self.failures(stops2=other)
        self.assertEqual(len(fails), 1, fails)
        self.assertIn("differ at stop 5", fails[0][1])

    def test_reverse_that_stops_at_the_loser_fails(self):
        rev = copy.deepcopy(REVERSE)
        rev[1] = dict(STOPS[4], step="reverse-continue")
        fails = self.failures(reverse=rev)
        self.assertTrue(any("not the token" in p for _, p in fails), fails)
        self.assertTrue(any("the consumption was at 1000" in p for _, p in fails), fails)

    def test_a_word_not_consumed_fails(self):
        rev = copy.deepcopy(REVERSE)
        rev[4]["word"] = TOKEN + 8
        self.assertTrue(any("want 0 and 0" in p for _, p in self.failures(reverse=rev)))

    def test_two_winners_fail(self):
        stops = copy.deepcopy(STOPS)
        stops[5]["ret"] = 0
        fails = self.failures(stops1=stops, stops2=stops)
        self.assertTrue(any("the first must return 0" in p for _, p in fails), fails)

    def test_user_stops_without_a_task_are_judged_by_what_came_back(self):
        # riscv: a stop in user mode cannot read the task
        stops = copy.deepcopy(STOPS)
        for st in stops:
            if st["stop"] in ("child", "parent"):
                st["pid"] = st["comm"] = None
        rev = copy.deepcopy(REVERSE)
        rev[0].update(pid=None, comm=None)
        self.assertEqual(self.failures(stops1=stops, stops2=stops, reverse=rev), [])
        stops[3]["ret"] = -22
        fails = self.failures(stops1=stops, stops2=stops, reverse=rev)
        self.assertTrue(any("back from clone3()" in p for _, p in fails), fails)

    def test_a_replay_that_ended_early_fails(self):
        short = STOPS[:3] + [{"stop": "end", "after": "continue", "why": "Remote connection closed"}]
        fails = self.failures(stops1=short)
        self.assertTrue(any("Remote connection closed" in p for _, p in fails), fails)

    def test_gdb_timeout_and_a_failed_race_fail(self):
        guest = GUEST.replace("ok 1 race", "not ok 1 race")
        fails = self.failures(rcs=("0", "124", "0"), guest=guest)
        self.assertTrue(any("stops-2: gdb timed out" in p for _, p in fails), fails)
        self.assertTrue(any("race_one_token_one_winner fail" in p for _, p in fails), fails)


if __name__ == "__main__":
    unittest.main()


class RaceStopTest(unittest.TestCase):
    """gdb/shstk/racecheck.py's stops, gdb mocked: whose stop a riscv
    user-mode stop is, where the task on the CPU cannot be read (the
    policy gdb-check's stops share, gdb/shstk/stepcheck.py): the address
    space decides, once known; until then it is not the program's."""

    def setUp(self):
        from tests import gdbmock
        self.gdbmock = gdbmock
        gdbmock.install()
        gdbmock.reset("riscv64")
        from shstk import racecheck, stepcheck
        self.rc, self.stepcheck = racecheck, stepcheck
        self.stops = stepcheck.Stops(racecheck.PROG_COMM, lambda text: None,
                                     round_start="validate")

    def stop_in_user_mode(self, satp):
        self.gdbmock.STATE.current_task = self.gdbmock.pointer(0xff60000000001000,
                                                               "task_struct")
        self.gdbmock.STATE.symbols["(unsigned long)$satp"] = satp
        self.stops.hits.clear()
        return self.stepcheck.ProgramStop(self.stops, "parent", f"*{self.rc.PARENT}").stop()

    def test_before_the_programs_address_space_is_known_a_user_stop_is_not_counted(self):
        self.assertFalse(self.stop_in_user_mode(0x80000))
        self.assertEqual(self.stops.hits, [])

    def test_once_its_address_space_is_known_it_decides(self):
        # Learnt at the program's exec (stepcheck.ExecStop), before main().
        self.stops.program.address_space = 0x81234
        self.assertTrue(self.stop_in_user_mode(0x81234 | 9 << 44))
        self.assertFalse(self.stop_in_user_mode(0x80000))
        self.assertEqual(self.stops.hits, [])

    def test_the_check_script_imports_nothing_at_load(self):
        spec = importlib.util.spec_from_file_location(
            "check_replay", os.path.join(self.gdbmock.TOP, "gdb", "check_replay.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.assertEqual(self.gdbmock.STATE.breakpoints, [])
