# SPDX-License-Identifier: GPL-2.0
"""make replay's check: gdb, in batch, on a replay of a recorded token race
(guest/token_race.c), in one of two modes (SHSTK_REPLAY_MODE):

  stops    run the replay forward and log every stop of the race: each
           racer's token check (commands.TokenCheck.function) and its
           return, the winner's child at its first instruction, each racer
           back from clone3(); each with the guest's instruction count
           (QEMU's "info replay").
           Two replays of one recording must log the same stops.
  reverse  run forward to the program's main() and take a snapshot there
           (reverse execution replays from the nearest one), then to the
           winner's child's first instruction, then reverse-continue to
           the token check that consumed its token (the one that still
           finds the token there),
           reverse-stepi once, then run forward to that call's return, where
           the word must be 0.

Both write JSON lines to SHSTK_STEPS, one per stop, which checks/replay.py
judges; nothing is judged here but what only gdb can tell (which stop this
is).  Started by scripts/replay.sh, with the environment of
shstk/session.py.  Importing this file does nothing; gdb runs it (main()).
"""
import functools
import json
import os
import re
import sys

import gdb

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

PROG_COMM = "token_race"
CHILD = "race_child_entry"
# The snapshot the reverse check takes at the program's main() (QEMU's
# savevm, into the replay's own snapshot disk).
SNAPSHOT = "token-race-main"
PARENT = "race_parent_return"
# The race has seven stops: two token checks, their returns, one child,
# two racers back from clone3() (checks/replay.py requires exactly these).
RACE_STOPS = 7
U64 = 2**64 - 1
# The kinds of the breakpoints that stopped during the last command, from
# their stop() (see go()).
HITS = []


def icount():
    """The guest's instruction count at this point of the replay."""
    out = gdb.execute("monitor info replay", to_string=True)
    m = re.search(r"instruction count = (\d+)", out)
    if not m:
        raise gdb.GdbError(f"QEMU's info replay says no instruction count: {out.strip()!r}")
    return int(m.group(1))


def current():
    """(pid, comm) of the task on the CPU, (None, None) where it cannot be
    read (riscv from user mode: see ArchOps.address_space)."""
    from shstk import tasks
    try:
        task = tasks.on_cpu()
        return int(task["pid"]), tasks.comm(task)
    except (gdb.error, gdb.GdbError):
        return None, None


def token_and_word():
    """At a stop in the token check: the token clone3() was
    given, and the word there now, in the caller's memory."""
    from shstk import tasks, usermem
    from shstk.commands import token_of
    token = token_of(gdb.selected_frame().read_var("args"))
    word = usermem.read_u64(usermem.task_mm(tasks.on_cpu()), token)
    return token, word


class Log:
    def __init__(self, path):
        self.f = open(path, "w")

    def write(self, **entry):
        self.f.write(json.dumps(entry) + "\n")
        self.f.flush()
        gdb.write(f"[replay] {entry}\n")


class RaceStop(gdb.Breakpoint):
    """A stop of the race, only in the racing program; self.kind says
    which."""

    def __init__(self, kind, spec, hardware=False):
        super().__init__(spec, type=gdb.BP_HARDWARE_BREAKPOINT if hardware else gdb.BP_BREAKPOINT,
                         internal=True)
        self.kind = kind
        from shstk import archops
        archops.keep_described_locations(self)

    def stop(self):
        ours = program().ours()
        if ours is None:
            # A user-mode stop whose task cannot be read (riscv), before
            # any stop of the program: at an address of its own text, so
            # taken to be it.
            ours = True
        if ours:
            HITS.append(self.kind)
        return ours


@functools.cache
def program():
    """What tells the racing program's stops from others'
    (tasks.ProgramStops): one for the whole run, made once gdb/shstk can
    be imported, since it learns the program's address space."""
    from shstk import tasks
    return tasks.ProgramStops(PROG_COMM)


class Returned(gdb.FinishBreakpoint):
    """The return of the token check gdb stopped in.  gdb deletes it at any
    stop whose stack no longer holds its frame, so it can only report a
    return that is the next stop: with one CPU a token check returns before
    another racer runs, and if one did not, the race's stops would not be
    what checks/replay.py requires (a failure, not a pass)."""

    kind = "validate_ret"

    def __init__(self):
        # The function's own frame: after a stepi onto its first
        # instruction gdb may show an inlined callee's there.
        frame = gdb.newest_frame()
        while frame.type() == gdb.INLINE_FRAME:
            frame = frame.older()
        super().__init__(frame, internal=True)

    def stop(self):
        HITS.append(self.kind)
        return True


def validate():
    """The kernel function that checks the token and returns the verdict."""
    from shstk.commands import token_check
    return token_check().function


def pc():
    return int(gdb.parse_and_eval("$pc")) & U64


def describe(kind, token=None):
    """The facts of a stop of @kind, read where it stopped; at a return,
    the word at @token (the check's frame is gone by then)."""
    from shstk import archops, decode, ssp, tasks, usermem
    pid, comm = current()
    fact = {"stop": kind, "pid": pid, "comm": comm, "pc": pc(), "icount": icount()}
    ops = archops.ops()
    if kind == "validate":
        fact["token"], fact["word"] = token_and_word()
        fact["valid_token"] = decode.token_verdict(tasks.arch(), fact["token"], fact["word"])[0]
    elif kind == "validate_ret":
        fact["ret"] = ops.returned(32)
        if token is not None:
            fact["token"] = token
            fact["word"] = usermem.read_u64(usermem.task_mm(tasks.on_cpu()), token)
    elif kind == "child":
        name = ssp.live_register()
        fact["ssp"] = None if name is None else ops.reg(name) & U64
    elif kind == "parent":
        fact["ret"] = ops.reg(ops.return_register)
    return fact


def go(log, command, want):
    """Run @command; True if it stopped where @want says: at a breakpoint
    of that kind, or (None) anywhere but the replay's end.  Else it logs
    why not (the replay ended, or something else stopped it).  Which
    breakpoint stopped is what its stop() said: a FinishBreakpoint is gone
    by the time the command returns."""
    del HITS[:]
    try:
        gdb.execute(command, to_string=True)
    except gdb.error as e:
        log.write(stop="end", after=command, why=str(e))
        return False
    got = HITS[-1] if HITS else None
    if want is not None and got != want:
        log.write(stop="unexpected", after=command, want=want, got=got, pc=pc(), icount=icount())
        return False
    return True


def run_stops(log):
    """Forward through the race: every stop, in order."""
    RaceStop("validate", validate())
    RaceStop("child", f"*{CHILD}", hardware=True)
    RaceStop("parent", f"*{PARENT}", hardware=True)
    for _ in range(RACE_STOPS):
        if not go(log, "continue", None):
            return
        if not HITS:
            log.write(stop="unexpected", after="continue", pc=pc(), icount=icount())
            return
        kind = HITS[-1]
        log.write(**describe(kind))
        if kind == "validate":
            Returned()
    log.write(stop="done", stops=RACE_STOPS)


class Consumer(RaceStop):
    """The token check called while the token is still there:
    run backwards into, that is the call that consumed it.  (So the reverse
    stop always finds the token; what proves it is the consumption is that
    it comes at the instruction count and task the forward replays saw.)"""

    def __init__(self):
        super().__init__("validate", validate())

    def stop(self):
        from shstk import decode, tasks
        if not super().stop():
            return False
        HITS.pop()
        try:
            token, word = token_and_word()
        except (gdb.error, gdb.GdbError):
            return False
        if not decode.token_verdict(tasks.arch(), token, word)[0]:
            return False
        HITS.append(self.kind)
        return True


def snapshot_at_main(log):
    """Run to the racing program's main() and take a snapshot there: a
    reverse execution replays from the nearest snapshot, which is
    otherwise the recording's start, the whole boot before the race (x86:
    nearly three billion instructions).  True if it was taken."""
    start = RaceStop("main", "*main", hardware=True)
    if not go(log, "continue", "main"):
        return False
    start.delete()
    out = gdb.execute(f"monitor savevm {SNAPSHOT}", to_string=True).strip()
    log.write(step="snapshot", name=SNAPSHOT, icount=icount(), pc=pc(), qemu=out)
    return True


def run_reverse(log):
    """From the winner's child backwards to the consumption, one
    instruction further back, and forward again to the check's return."""
    if not snapshot_at_main(log):
        return
    child = RaceStop("child", f"*{CHILD}", hardware=True)
    if not go(log, "continue", "child"):
        return
    log.write(step="child", **describe("child"))
    child.delete()
    Consumer()
    if not go(log, "reverse-continue", "validate"):
        return
    fact = describe("validate")
    log.write(step="reverse-continue", **fact)
    before = icount()
    if not go(log, "reverse-stepi", None):
        return
    log.write(step="reverse-stepi", icount_before=before, icount=icount(), pc=pc())
    if not go(log, "stepi", None):
        return
    log.write(step="stepi", icount=icount(), pc=pc(), back_at=fact["pc"])
    for bp in gdb.breakpoints() or ():
        bp.delete()
    Returned()
    if not go(log, "continue", "validate_ret"):
        return
    log.write(step="forward to the return", **describe("validate_ret", fact["token"]))


def main():
    from shstk import session
    session.attach()
    log = Log(os.environ["SHSTK_STEPS"])
    mode = os.environ.get("SHSTK_REPLAY_MODE", "stops")
    try:
        if mode == "stops":
            run_stops(log)
        elif mode == "reverse":
            run_reverse(log)
        else:
            raise gdb.GdbError(f"SHSTK_REPLAY_MODE must be stops or reverse (is {mode!r})")
    finally:
        try:
            gdb.execute("detach", to_string=True)
        except gdb.error:
            pass


if __name__ == "__main__":
    main()
