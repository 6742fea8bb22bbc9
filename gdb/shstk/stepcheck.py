# SPDX-License-Identifier: GPL-2.0
"""The scripted-gdb framework of make gdb-check (gdb/check_clone3.py) and
make replay's check (gdb/check_replay.py): breakpoints that stop only for
one guest program, the returns of the functions they stop in, the stops
counted once each, and the JSON-lines step log.

A check makes one Stops for its program, its ProgramStop and ReturnStop
breakpoints on it, and runs gdb with Stops.next() (continue to the next
stop of the program, one reported again not counted) or Stops.run() (any
command, reverse execution too); each names the stop by the breakpoint
that said it hit.  What a stop means is the check's own.
"""
import json

import gdb

from shstk import archops, tasks, utils


class StepLog:
    """One JSON object per line, flushed at once (a gdb that times out
    leaves every line written before), and said on gdb's output after
    @prefix.  Integers under @hex_keys are written as "0x..." strings."""

    def __init__(self, f, prefix, hex_keys=()):
        self.f, self.prefix, self.hex_keys = f, prefix, frozenset(hex_keys)

    @classmethod
    def open(cls, path, prefix, hex_keys=()):
        return cls(open(path, "w"), prefix, hex_keys)

    def write(self, entry, say=None):
        """Log @entry; say @say (by default, the entry as it is)."""
        entry = {k: (f"{v:#x}" if isinstance(v, int) and k in self.hex_keys else v)
                 for k, v in entry.items()}
        self.f.write(json.dumps(entry) + "\n")
        self.f.flush()
        self.say(entry if say is None else say)

    def say(self, text):
        gdb.write(f"{self.prefix} {text}\n")


class Stops:
    """The stops of one guest program (@comm) that a check counts: which
    of its breakpoints hit during the last command (hits), and the stops
    counted so far, to tell one the gdbstub reports again from a new one.
    A round starts at each stop named @round_start (gdb-check: a clone3()
    entry); see is_repeat()."""

    def __init__(self, comm, say, round_start=None):
        self.program = tasks.ProgramStops(comm)
        self.say, self.round_start = say, round_start
        self.hits = []
        self.last_stop = None
        self.since_round = set()

    def ours(self):
        """Whether this stop is the program's.  One whose task cannot be
        read and whose address space cannot be matched is not: each check
        has the program's address space learnt at a kernel stop of it (its
        exec, ExecStop, or its first clone3()) before any of its user
        breakpoints can hit, so such a stop is another program running code
        at the same address."""
        ours = self.program.ours()
        if ours is None:
            # Said: were it the program's after all, it shows up later as a
            # missing step.
            self.say("could not tell whose stop this is: the task on the CPU cannot be "
                     "read, and no address space of the program's to match; not counted")
            return False
        return ours

    def run(self, command):
        """Run the gdb @command; the name of the stop of ours it ended at,
        or None where none of ours said it hit.  gdb.error where the command
        failed (a replay that ended)."""
        self.hits.clear()
        gdb.execute(command)
        return self.hits[-1] if self.hits else None

    def next(self):
        """Continue to the next stop of ours; its name, or None where gdb
        stopped at none of ours.  A stop reported again (is_repeat) is said
        and not counted.  The return breakpoint that hit is deleted."""
        while True:
            hit = self.run("continue")
            if hit is None:
                return None
            try:
                here = (hit,) + where_now()
            except (gdb.error, gdb.GdbError):
                here = None
            if not self.is_repeat(here):
                break
            kind, who = here[2]
            who = f"{kind} {who}" if kind == "pid" else f"{kind} {who:#x}"
            self.say(f"note: {hit} reported again by vCPU {here[1]}, {who}, "
                     f"PC {here[3]:#x} and stack pointer as when it was counted; "
                     f"not a new stop")
        self.counted(here)
        for b in gdb.breakpoints() or ():
            if isinstance(b, ReturnStop) and b.name == hit:
                b.delete()
        return hit

    def counted(self, here):
        self.last_stop = here
        if here is not None and here[0] == self.round_start:
            self.since_round.clear()
        if here is not None:
            self.since_round.add(here)

    def is_repeat(self, here):
        """Whether the stop @here ((name,) + where_now()) is one already
        counted, reported again.  QEMU's gdbstub does that: the first
        clone3() entry twice in a row, and on riscv the parent's return
        once more after the child's first instruction, the vCPU still at
        the same PC (its step over the breakpoint was cut short by the
        other vCPU's stop).  Every stop but a round's start happens at
        most once a round, so one seen again with the same vCPU, task, PC
        and stack pointer since the round started is that; a round's
        start is one when nothing else came between."""
        if here is None:
            return False
        if here[0] == self.round_start:
            return here == self.last_stop
        return here in self.since_round


def where_now():
    """The vCPU, the task (or, from a riscv user-mode stop, the address
    space), the PC and the stack pointer of this stop: what tells a new
    event from the same one reported again."""
    try:
        who = ("pid", int(tasks.on_cpu()["pid"]))
    except (gdb.error, gdb.GdbError):
        space = archops.ops().address_space()
        if space is None:
            raise
        who = ("address space", space)
    return (gdb.selected_thread().num, who, utils.pc(), utils.sp())


class ProgramStop(gdb.Breakpoint):
    """A breakpoint that stops only for the program of @stops (and only
    where wanted() says so), and says it hit as @name.  One stop per call:
    the location the debug info describes, at the function's entry."""

    def __init__(self, stops, name, spec, hardware=False):
        kind = gdb.BP_HARDWARE_BREAKPOINT if hardware else gdb.BP_BREAKPOINT
        super().__init__(spec, type=kind, internal=True)
        self.stops, self.name = stops, name
        archops.keep_described_locations(self)
        archops.keep_entry_locations(self)

    def wanted(self):
        """Whether this stop of the program is one to stop at."""
        return True

    def stop(self):
        if not self.stops.ours() or not self.wanted():
            return False
        self.stops.hits.append(self.name)
        return True


class ExecStop(ProgramStop):
    """A breakpoint at the kernel's exec of a new program image, after the
    new mm is in place and the comm set, that never stops: at the
    program's exec it learns the program's address space (ProgramStops),
    so that a user-mode stop of the program before any kernel stop of it
    (its main()) can be told from another program's."""

    def __init__(self, stops, spec="setup_new_exec"):
        super().__init__(stops, "exec", spec)

    def stop(self):
        self.stops.program.ours()
        return False


class ReturnStop(gdb.FinishBreakpoint):
    """The return of the function of @frame, a stop of @stops named
    @name; if gdb loses the frame first, it says @name + ":lost"."""

    def __init__(self, stops, name, frame):
        super().__init__(frame, internal=True)
        self.stops, self.name = stops, name

    def stop(self):
        self.stops.hits.append(self.name)
        return True

    def out_of_scope(self):
        self.stops.hits.append(self.name + ":lost")
