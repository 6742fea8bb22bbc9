# SPDX-License-Identifier: GPL-2.0
"""make replay's check (gdb/check_replay.py) on a replay of the token race
(guest/token_race.c): its stops, forward, and the way back from the
winner's child to the consumption, each logged with what only gdb can
tell (which stop this is, the instruction count) for checks/replay.py to
judge.  The stops are stepcheck.py's, as make gdb-check's are."""
import gdb

from shstk import archops, decode, ssp, stepcheck, tasks, usermem, utils
from shstk.commands import token_check, token_of

PROG_COMM = "token_race"
CHILD = "race_child_entry"
PARENT = "race_parent_return"
# The snapshot the reverse check takes at the program's main() (QEMU's
# savevm, into the replay's own snapshot disk).
SNAPSHOT = "token-race-main"
# The race has seven stops: two token checks, their returns, one child,
# two racers back from clone3() (checks/replay.py requires exactly these).
RACE_STOPS = 7


def current():
    """(pid, comm) of the task on the CPU, (None, None) where it cannot be
    read (riscv from user mode: see ArchOps.address_space)."""
    try:
        task = tasks.on_cpu()
        return int(task["pid"]), tasks.comm(task)
    except (gdb.error, gdb.GdbError):
        return None, None


def token_and_word():
    """At a stop in the token check: the token clone3() was
    given, and the word there now, in the caller's memory."""
    token = token_of(gdb.selected_frame().read_var("args"))
    word = usermem.read_u64(usermem.task_mm(tasks.on_cpu()), token)
    return token, word


def validate():
    """The kernel function that checks the token and returns the verdict."""
    return token_check().function


def returned(stops):
    """A stop at the return of the token check gdb stopped in.  gdb
    deletes it at any stop whose stack no longer holds its frame, so it can
    only report a return that is the next stop: with one CPU a token check
    returns before another racer runs, and if one did not, the race's
    stops would not be what checks/replay.py requires (a failure, not a
    pass)."""
    return stepcheck.ReturnStop(stops, "validate_ret", utils.function_frame())


class Consumer(stepcheck.ProgramStop):
    """The token check called while the token is still there: run
    backwards into, that is the call that consumed it.  (So the reverse
    stop always finds the token; what proves it is the consumption is that
    it comes at the instruction count and task the forward replays saw.)"""

    def __init__(self, stops):
        super().__init__(stops, "validate", validate())

    def wanted(self):
        try:
            token, word = token_and_word()
        except (gdb.error, gdb.GdbError):
            return False
        return decode.token_verdict(tasks.arch(), token, word)[0]


def describe(kind, token=None):
    """The facts of a stop of @kind, read where it stopped; at a return,
    the word at @token (the check's frame is gone by then)."""
    pid, comm = current()
    fact = {"stop": kind, "pid": pid, "comm": comm, "pc": utils.pc(),
            "icount": utils.replay_icount()}
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
        fact["ssp"] = None if name is None else ops.reg(name) & utils.U64
    elif kind == "parent":
        fact["ret"] = ops.reg(ops.return_register)
    return fact


def go(log, stops, command, want):
    """Run @command; True if it stopped where @want says: at a stop of that
    name, or (None) anywhere but the replay's end.  Else it logs why not
    (the replay ended, or something else stopped it)."""
    try:
        got = stops.run(command)
    except gdb.error as e:
        log.write({"stop": "end", "after": command, "why": str(e)})
        return False
    if want is not None and got != want:
        log.write({"stop": "unexpected", "after": command, "want": want, "got": got,
                   "pc": utils.pc(), "icount": utils.replay_icount()})
        return False
    return True


def run_stops(log, stops):
    """Forward through the race: every stop, in order."""
    stepcheck.ProgramStop(stops, "validate", validate())
    stepcheck.ProgramStop(stops, "child", f"*{CHILD}", hardware=True)
    stepcheck.ProgramStop(stops, "parent", f"*{PARENT}", hardware=True)
    for _ in range(RACE_STOPS):
        try:
            kind = stops.next()
        except gdb.error as e:
            log.write({"stop": "end", "after": "continue", "why": str(e)})
            return
        if kind is None:
            log.write({"stop": "unexpected", "after": "continue", "pc": utils.pc(),
                       "icount": utils.replay_icount()})
            return
        log.write(describe(kind))
        if kind == "validate":
            returned(stops)
    log.write({"stop": "done", "stops": RACE_STOPS})


def snapshot_at_main(log, stops):
    """Run to the racing program's main() and take a snapshot there: a
    reverse execution replays from the nearest snapshot, which is
    otherwise the recording's start, the whole boot before the race.
    True if it was taken."""
    start = stepcheck.ProgramStop(stops, "main", "*main", hardware=True)
    if not go(log, stops, "continue", "main"):
        return False
    start.delete()
    out = gdb.execute(f"monitor savevm {SNAPSHOT}", to_string=True).strip()
    log.write({"step": "snapshot", "name": SNAPSHOT, "icount": utils.replay_icount(),
               "pc": utils.pc(), "qemu": out})
    return True


def run_reverse(log, stops):
    """From the winner's child backwards to the consumption, one
    instruction further back, and forward again to the check's return."""
    if not snapshot_at_main(log, stops):
        return
    child = stepcheck.ProgramStop(stops, "child", f"*{CHILD}", hardware=True)
    if not go(log, stops, "continue", "child"):
        return
    log.write(dict(step="child", **describe("child")))
    child.delete()
    Consumer(stops)
    if not go(log, stops, "reverse-continue", "validate"):
        return
    fact = describe("validate")
    log.write(dict(step="reverse-continue", **fact))
    before = utils.replay_icount()
    if not go(log, stops, "reverse-stepi", None):
        return
    log.write({"step": "reverse-stepi", "icount_before": before,
               "icount": utils.replay_icount(), "pc": utils.pc()})
    if not go(log, stops, "stepi", None):
        return
    log.write({"step": "stepi", "icount": utils.replay_icount(), "pc": utils.pc(),
               "back_at": fact["pc"]})
    utils.delete_breakpoints()
    returned(stops)
    if not go(log, stops, "continue", "validate_ret"):
        return
    log.write(dict(step="forward to the return", **describe("validate_ret", fact["token"])))


MODES = {"stops": run_stops, "reverse": run_reverse}


def main(path, mode):
    """Run the check in @mode (MODES), logging to @path, gdb attached
    (session.attach()); then let the replay go."""
    log = stepcheck.StepLog.open(path, "[replay]")
    # Each racer's token check starts a round of the race's stops.
    stops = stepcheck.Stops(PROG_COMM, log.say, round_start="validate")
    # The reverse check's first stop is the program's main(), in user mode.
    stepcheck.ExecStop(stops)
    try:
        if mode not in MODES:
            raise gdb.GdbError(f"SHSTK_REPLAY_MODE must be stops or reverse (is {mode!r})")
        MODES[mode](log, stops)
    finally:
        utils.detach()
