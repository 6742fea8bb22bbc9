# SPDX-License-Identifier: GPL-2.0
"""gdb/shstk/stepcheck.py, the framework of make gdb-check and make
replay's check, with gdb mocked: the step log, one stop counted once, the
returns, and one policy for a stop whose task cannot be read."""
import io
import json
import unittest
from unittest import mock

from tests import gdbmock

gdb = gdbmock.install()

from shstk import stepcheck  # noqa: E402


class StepLogTest(unittest.TestCase):
    def test_one_line_per_entry_words_in_hex_and_said(self):
        gdbmock.reset("arm64")
        f = io.StringIO()
        log = stepcheck.StepLog(f, "[check]", hex_keys={"token"})
        log.write({"step": "a", "token": 0x7f0000000ff8, "ret": -22})
        log.write({"step": "b"}, say="PASS b")
        self.assertEqual([json.loads(line) for line in f.getvalue().splitlines()],
                         [{"step": "a", "token": "0x7f0000000ff8", "ret": -22}, {"step": "b"}])
        self.assertEqual("".join(gdbmock.STATE.out).splitlines(),
                         ["[check] {'step': 'a', 'token': '0x7f0000000ff8', 'ret': -22}",
                          "[check] PASS b"])


class StopsTest(unittest.TestCase):
    def setUp(self):
        gdbmock.reset("riscv64")
        self.said = []
        self.stops = stepcheck.Stops("prog", self.said.append, round_start="entry")

    def go(self, events):
        """Stops.next() over @events: (the stop that said it hit, or None;
        where_now() there)."""
        events = iter(events)
        where = []

        def execute(command, from_tty=False, to_string=False):
            self.assertEqual(command, "continue")
            hit, here = next(events)
            if hit is not None:
                self.stops.hits.append(hit)
            where.append(here)

        with mock.patch.object(stepcheck.gdb, "execute", execute), \
                mock.patch.object(stepcheck, "where_now", lambda: where[-1]):
            return self.stops.next()

    def test_a_stop_reported_again_is_not_counted(self):
        entry = (1, ("pid", 52), 0x8001e960, 0xff2000000001bd00)
        parent = (1, ("address space", 0x81234), 0x10830, 0x7fffffffe000)
        self.assertEqual(self.go([("entry", entry)]), "entry")
        # QEMU reports the entry again: said, and the next stop is the one.
        self.assertEqual(self.go([("entry", entry), ("parent", parent)]), "parent")
        self.assertEqual(len(self.said), 1)
        self.assertIn("note: entry reported again by vCPU 1, pid 52", self.said[0])

    def test_nothing_of_ours_is_none(self):
        self.assertIsNone(self.go([(None, None)]))

    def test_the_return_that_hit_is_deleted(self):
        deleted = []
        ret = stepcheck.ReturnStop(self.stops, "alloc_ret", gdbmock.Frame())
        ret.delete = lambda: deleted.append(ret.name)
        with mock.patch.object(stepcheck.gdb, "breakpoints", lambda: [ret]):
            self.assertEqual(self.go([("alloc_ret", (1, ("pid", 5), 0x1000, 0x2000))]),
                             "alloc_ret")
        self.assertEqual(deleted, ["alloc_ret"])

    def test_a_return_whose_frame_is_lost_says_so(self):
        ret = stepcheck.ReturnStop(self.stops, "validate_ret", gdbmock.Frame())
        ret.out_of_scope()
        self.assertEqual(self.stops.hits, ["validate_ret:lost"])

    def test_an_unreadable_stop_is_not_the_programs_and_said(self):
        # One policy for both checks: neither the task nor an address space
        # to match (riscv in user mode, before the program's first stop).
        gdbmock.STATE.current_task = gdbmock.pointer(0xff60000000001000, "task_struct")
        gdbmock.STATE.symbols["(unsigned long)$satp"] = 0x81234
        self.assertIsNone(self.stops.program.ours())
        self.assertFalse(self.stops.ours())
        self.assertIn("could not tell whose stop this is", self.said[0])
        self.assertIn("not counted", self.said[0])

    def test_the_exec_stop_learns_the_address_space_and_never_stops(self):
        gdbmock.STATE.symbols["(unsigned long)$satp"] = 0x81234 | 9 << 44
        execs = stepcheck.ExecStop(self.stops)
        self.assertEqual(execs.spec, "setup_new_exec")
        # Another program's exec: nothing learnt.
        gdbmock.STATE.current_task = gdbmock.pointer(
            gdbmock.struct("task_struct", 0x1000, pid=5, comm=gdbmock.Value("init")))
        self.assertFalse(execs.stop())
        self.assertIsNone(self.stops.program.address_space)
        gdbmock.STATE.current_task = gdbmock.pointer(
            gdbmock.struct("task_struct", 0x2000, pid=6, comm=gdbmock.Value("prog")))
        self.assertFalse(execs.stop())
        self.assertEqual(self.stops.program.address_space, 0x81234)
        self.assertEqual(self.stops.hits, [])
        # Its main(), in user mode: the task cannot be read, satp can.
        gdbmock.STATE.current_task = gdbmock.pointer(0xff60000000001000, "task_struct")
        self.assertTrue(stepcheck.ProgramStop(self.stops, "main", "*main").stop())
        self.assertEqual(self.stops.hits, ["main"])

    def test_wanted_filters_the_programs_stops(self):
        class Odd(stepcheck.ProgramStop):
            def wanted(self):
                return False
        gdbmock.STATE.current_task = gdbmock.pointer(
            gdbmock.struct("task_struct", 0x1000, pid=5, comm=gdbmock.Value("prog")))
        self.assertTrue(stepcheck.ProgramStop(self.stops, "a", "a").stop())
        self.assertFalse(Odd(self.stops, "b", "b").stop())
        gdbmock.STATE.current_task = gdbmock.pointer(
            gdbmock.struct("task_struct", 0x2000, pid=6, comm=gdbmock.Value("other")))
        self.assertFalse(stepcheck.ProgramStop(self.stops, "c", "c").stop())
        self.assertEqual(self.stops.hits, ["a"])


if __name__ == "__main__":
    unittest.main()
