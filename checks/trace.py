# SPDX-License-Identifier: GPL-2.0
"""Check a `make trace` run: the bpftrace log against what the guest saw.

    python3 -m checks.trace OUTDIR ARCH SCRIPT[,SCRIPT...] LOGDIR [user]

Each script that ran in the boot is checked by its own checker (CHECKERS),
the run itself (the guest finished, a clean console) once for all.

token-validation.bt logs, for the guest program, its
map_shadow_stack() calls and each clone3() with a token: clone3_enter, the
arch copy_thread hook (alloc), the token check (validate: fork.c's
shstk_validate_clone(), which also refuses a token outside a shadow stack
with -EFAULT, or v23's arch_shstk_validate_clone()), the new task (newtask)
and clone3_exit.  The guest scenario (guest/shstk_gdb.c)
prints "# CASE: token T -> RET (want W)" for each call.  They must agree:

  - every clone3() that succeeded shows exactly one validation of its token
    with result 0, then a new task whose shadow stack pointer is token + 8;
  - every refused one shows the refusal where the kernel makes it, with the
    errno the guest saw, and no new task;
  - every call the guest made is in the trace, in order, and nothing in the
    trace is unexplained.

shstk-vmas.bt logs the shadow stack each copy_thread() sets up
(check_vmas); errno-provenance.bt names where each refused call's errno
came from (check_provenance).
"""
import argparse
import os
import re
import sys

from checks import ktap
from spec import console, scenario
from config import arches

EINVAL, EFAULT = scenario.EINVAL, scenario.EFAULT
LINE_RE = re.compile(r"^(\w+) (.*)$")
CASE_RE = re.compile(r"^# (\w+): token (0x[0-9a-f]+) -> (-?\d+) \(want (-?\d+)\)")
STATE_RE = re.compile(r"^# shadow stack (enabled|not available)(?:: (.*\S))?")
CMDLINE_RE = re.compile(r"[Cc]ommand line: (.*)")


def shadow_stack_state(program_lines, guest_text, console_text):
    """(on, why) of the scenario's caller: what the program says (its
    "# shadow stack ..." line), else what the guest's init saw on the CPU;
    why it is off, from the program, else from the emulator's declaration
    on the kernel command line."""
    said = [m for m in map(STATE_RE.match, program_lines) if m]
    on = said[0].group(1) == "enabled" if said else "cpu_shstk=yes" in guest_text
    why = said[0].group(2) if said else None
    if not on and not why:
        m = CMDLINE_RE.search(console_text)
        why = scenario.declared_shadow_stack(m.group(1) if m else "")[1] or \
            "the program could not enable shadow stacks"
    return on, why


def parse_trace(lines):
    """[(event, {key: value})] from the "event key=value ..." lines."""
    events = []
    for line in lines:
        m = LINE_RE.match(line.strip())
        if not m or "=" not in m.group(2):
            continue
        fields = {}
        for kv in m.group(2).split():
            k, _, v = kv.partition("=")
            try:
                fields[k] = int(v, 0)
            except ValueError:
                fields[k] = v
        events.append((m.group(1), fields))
    return events


def group_calls(events):
    """Split the token events into clone3() calls; (calls, stray events)."""
    calls, stray, current = [], [], None
    for ev, f in events:
        if ev == "clone3_enter":
            current = {"token": f.get("token", 0), "events": [(ev, f)], "ret": None}
            if current["token"]:
                calls.append(current)
        elif ev == "clone3_exit":
            if current is None or f.get("token") != current["token"]:
                stray.append((ev, f))
            else:
                current["ret"] = f.get("ret")
                current["events"].append((ev, f))
            current = None
        elif ev in ("alloc", "validate", "newtask"):
            if current is None or f.get("token") != current["token"]:
                stray.append((ev, f))
            else:
                current["events"].append((ev, f))
    return calls, stray


def check_call(call):
    """Problems with one clone3() call's events (empty if it is explained)."""
    token, ret = call["token"], call["ret"]
    evs = {}
    for ev, f in call["events"]:
        evs.setdefault(ev, []).append(f)
    problems = []
    if ret is None:
        return [f"token {token:#x}: no clone3_exit"]
    validates = evs.get("validate", [])
    newtasks = evs.get("newtask", [])
    allocs = evs.get("alloc", [])
    if ret > 0:
        if [v["ret"] for v in validates] != [0]:
            problems.append(f"token {token:#x}: succeeded, but validations {validates}")
        if len(newtasks) != 1:
            problems.append(f"token {token:#x}: succeeded with {len(newtasks)} new tasks")
        else:
            # The arch part of the script reports it where the arch has it:
            # with the new task (arm64: thread.gcspr_el0), or from the
            # copy_thread hook (x86: the SSP shstk_alloc_thread_stack returns).
            ssp = newtasks[0].get("ssp", allocs[0].get("ssp") if allocs else None)
            if ssp != token + 8:
                problems.append(f"token {token:#x}: new task's ssp {ssp}, not token + 8")
            if newtasks[0].get("new_pid") != ret:
                problems.append(f"token {token:#x}: new task {newtasks[0].get('new_pid')}, clone3 returned {ret}")
    else:
        if newtasks:
            problems.append(f"token {token:#x}: refused ({ret}) but a task was made")
        if token % 8:
            if allocs or validates:
                problems.append(f"token {token:#x}: misaligned, yet it reached copy_thread")
        elif ret == -EFAULT:
            # Only fork.c's token check, which also checks the VMA,
            # refuses with it.
            if [(v["ret"], v.get("func")) for v in validates] not in \
                    ([], [(-EFAULT, scenario.STAGES["vma"].function)]):
                problems.append(f"token {token:#x}: EFAULT, yet the token was validated")
        elif ret == -EINVAL:
            refused_by_alloc = any(a.get("ret") == -EINVAL for a in allocs)
            refused_by_validate = [v["ret"] for v in validates] == [-EINVAL]
            if not (refused_by_alloc or refused_by_validate):
                problems.append(f"token {token:#x}: EINVAL with no refusal in the trace")
        else:
            problems.append(f"token {token:#x}: unexpected errno {ret}")
    return problems


def stage_of(call):
    """The stage of the kernel's checks (spec/scenario.py) where the traced
    call ended, from its events; None if they say nothing clear."""
    if call["ret"] is not None and call["ret"] > 0:
        return "accepted"
    if call["token"] % 8:
        return "args"
    names = [ev for ev, f in call["events"]]
    for ev, f in call["events"]:
        if ev == "alloc" and f.get("ret") == -EINVAL:
            return "caller"
        if ev == "validate" and f.get("ret") == -EINVAL:
            return "token"
        if ev == "validate" and f.get("ret") == -EFAULT:
            return "vma"
    if "alloc" in names and "validate" not in names:
        return "vma"
    return None


def describe(stage, function=None):
    """@stage in words, named by @function where the trace showed which of
    the stage's functions refused (scenario.STAGES)."""
    st = scenario.STAGES[stage]
    return f"{function or st.function}: {st.refusal}" if stage != "accepted" else st.refusal


def check_function(call):
    """The token check the trace showed for @call (its validate event's
    func=), or None."""
    funcs = [f.get("func") for ev, f in call["events"] if ev == "validate"]
    return funcs[0] if funcs else None


def not_exercised_rows(seen, shstk_on, why, what):
    """Skip rows for what a caller with a shadow stack would have shown and
    this one did not (@what says which part of it each row is)."""
    rows = []
    for token, _, name in seen:
        case = scenario.BY_NAME.get(name)
        if case and not shstk_on and scenario.stage(case, False) != case.stage:
            rows.append((token, None, f"{name}: {what(case.stage)}", "skip", why))
    return rows


def check_token_calls(events, seen, shstk_on=True, why=None):
    """trace/token-validation.bt against the guest's cases: (rows, problems).

    Each traced clone3() call is explained by its events (check_call), and
    each row is the guest's call at the same place: the same token, the
    return the guest saw (the pid it prints as 0), and the stage the
    scenario says the kernel stops that case at.  Rows are (token, ret,
    where, verdict, reason)."""
    calls, stray = group_calls(events)
    problems = [f"unexplained trace event {ev} {f}" for ev, f in stray]
    rows = []
    if not seen:
        # A program of the user's: each call explained by its own events.
        for call in calls:
            call_problems = check_call(call)
            problems += call_problems
            stage = stage_of(call)
            rows.append((call["token"], call["ret"], describe(stage) if stage else "?",
                         "fail" if call_problems else "pass", None))
        return rows, problems
    for i, (token, ret, name) in enumerate(seen):
        if i >= len(calls):
            problems.append(f"{name}: the guest's call with token {token:#x} is not in the trace")
            rows.append((token, ret, f"{name}: never traced", "fail", None))
            continue
        call = calls[i]
        row_problems = check_call(call)
        traced_ret = 0 if call["ret"] is not None and call["ret"] > 0 else call["ret"]
        if call["token"] != token:
            row_problems.append(f"{name}: traced token {call['token']:#x}, "
                                f"the guest passed {token:#x}")
        if traced_ret != ret:
            row_problems.append(f"{name}: traced return {call['ret']}, the guest saw {ret}")
        want = scenario.stage(name, shstk_on) if name in scenario.BY_NAME else None
        got = stage_of(call)
        if want is None:
            row_problems.append(f"{name}: not a case of the scenario")
        elif got != want:
            row_problems.append(f"{name}: ended at {describe(got) if got else 'no clear stage'}, "
                                f"not {describe(want)}")
        problems += row_problems
        shown = check_function(call) if (want or got) in ("token", "vma") else None
        rows.append((call["token"], call["ret"], f"{name}: {describe(want or got or 'args', shown)}",
                     "fail" if row_problems else "pass", None))
    problems += [f"unexplained traced call with token {c['token']:#x}" for c in calls[len(seen):]]
    rows += not_exercised_rows(seen, shstk_on, why, lambda st: "not exercised: " + describe(st))
    return rows, problems


def took_token(event, token):
    """Did the arch copy_thread hook take @token for the new task's shadow
    stack?  x86's and riscv's return the new shadow stack pointer, token +
    8.  arm64's names the token it took and allocates no GCS of the
    kernel's; whether GCSPR_EL0 is set there or when the token is consumed
    is the series' choice (token-validation holds the new task to token + 8)."""
    if "token" in event:
        return event["token"] == token and event.get("kernel") == 0
    return event.get("ssp") == token + 8


def check_vmas(events, seen, shstk_on, why=None):
    """trace/shstk-vmas.bt against the guest's cases: (rows, problems).

    A token that reaches the arch copy_thread hook (spec/scenario.py) gets
    one copy_thread event, in the order of the calls, that took it
    (took_token(); copy_process() may refuse the token after); one
    that does not (misaligned, or any from a caller without shadow stacks)
    gets none: the next event, if any, is another call's.  An accepted
    token lies in a stack that map_shadow_stack() returned.
    """
    maps = [(f.get("addr", 0), f.get("size", 0)) for ev, f in events if ev == "map"]
    # The hook's calls that set up no shadow stack of the kernel's (arm64's
    # name their token: those without one are tasks without GCS).
    threads = [f for ev, f in events
               if ev == "copy_thread" and f.get("kernel") == 0 and f.get("token", 1) != 0]
    rows, problems, i = [], [], 0
    for token, ret, name in seen:
        stage = scenario.stage(name, shstk_on) if name in scenario.BY_NAME else None
        if stage is None:
            problems.append(f"{name}: not a case of the scenario")
            rows.append((token, ret, f"{name}: not a case of the scenario", "fail", None))
            continue
        nxt = threads[i] if i < len(threads) else None
        if not scenario.reaches_copy_thread(stage):
            ok = nxt is None or not took_token(nxt, token)
            if not ok:
                i += 1      # its event: the next call's is after it
                problems.append(f"{name}: copy_thread set up a shadow stack from token "
                                f"{token:#x}, which {describe(stage)}")
            rows.append((token, ret, f"{name}: no copy_thread shadow stack ({describe(stage)})",
                         "pass" if ok else "fail", None))
            continue
        if nxt is None:
            problems.append(f"{name}: token {token:#x}: no copy_thread event")
            rows.append((token, ret, f"{name}: copy_thread never traced", "fail", None))
            continue
        i += 1
        ok = took_token(nxt, token)
        if not ok and "token" in nxt:
            problems.append(f"{name}: token {token:#x}: copy_thread took token "
                            f"{nxt['token']:#x}, kernel GCS {nxt.get('kernel')}")
        elif not ok:
            problems.append(f"{name}: token {token:#x}: copy_thread set the shadow stack "
                            f"pointer to {nxt.get('ssp', 0):#x}, not token + 8")
        if ret == 0 and not any(a <= token < a + n for a, n in maps):
            ok = False
            problems.append(f"{name}: token {token:#x}: accepted, but in no traced "
                            f"map_shadow_stack() range")
        rows.append((token, ret, f"{name}: copy_thread: took the token"
                     + (", in a mapped stack" if ret == 0 else ""), "pass" if ok else "fail", None))
    problems += [f"unexplained copy_thread {f}" for f in threads[i:]]
    rows += not_exercised_rows(
        seen, shstk_on, why,
        lambda st: "not exercised: copy_thread would take the token"
        if scenario.reaches_copy_thread(st) else "not exercised: " + describe(st))
    return rows, problems


def origin_function(fields):
    """The function a refusal's origin names: the token check's is the probe
    that matched it (fexit:vmlinux:FUNCTION)."""
    return str(fields.get("origin", "")).rpartition(":")[2]


def check_provenance(events, seen, shstk_on, why=None):
    """trace/errno-provenance.bt against the guest's cases: (rows, problems).

    The script logs each clone3() of the program, in order: "accepted", or
    "refused" with where its errno came from.  The n-th must be the guest's
    n-th call, with its token and return; a refusal's origin must be the
    function of the stage the scenario says the kernel stops that case at
    (spec/scenario.py STAGES)."""
    calls = [(ev, f) for ev, f in events if ev in ("refused", "accepted")]
    rows, problems = [], []
    if not seen:
        # A program of the user's: each refusal must have been placed.
        for ev, f in calls:
            if ev != "refused":
                continue
            ok = bool(f.get("origin")) and f.get("how") in ("probed", "inferred")
            if not ok:
                problems.append(f"token {f.get('token', 0):#x}: refusal without an origin {f}")
            rows.append((f.get("token", 0), f.get("ret"),
                         f"{f.get('origin', '?')} ({f.get('how', '?')})",
                         "pass" if ok else "fail", None))
        return rows, problems
    for n, (token, ret, name) in enumerate(seen):
        stage = scenario.stage(name, shstk_on) if name in scenario.BY_NAME else None
        if stage is None:
            problems.append(f"{name}: not a case of the scenario")
            rows.append((token, ret, f"{name}: not a case of the scenario", "fail", None))
            continue
        if n >= len(calls):
            problems.append(f"{name}: the guest's call with token {token:#x} is not in the trace")
            rows.append((token, ret, f"{name}: never traced", "fail", None))
            continue
        ev, f = calls[n]
        want = scenario.STAGES[stage]
        row_problems = []
        if f.get("token") != token:
            row_problems.append(f"{name}: traced token {f.get('token', 0):#x}, the guest "
                                f"passed {token:#x}")
        if want.ret == 0:
            if ev != "accepted" or ret != 0:
                row_problems.append(f"{name}: {ev} in the trace, the guest saw {ret}, "
                                    f"the scenario: accepted")
            where = f"{name}: accepted"
        else:
            if ev != "refused" or f.get("ret") != ret:
                row_problems.append(f"{name}: traced {ev} {f.get('ret')}, the guest saw {ret}")
            elif origin_function(f) not in want.functions or \
                    (stage in ("token", "accepted") and f.get("how") != "probed"):
                row_problems.append(f"{name}: the errno came from {origin_function(f)}, not "
                                    f"{want.function} ({want.refusal})")
            where = f"{name}: {origin_function(f)} ({f.get('how')})"
        problems += row_problems
        rows.append((token, ret, where, "fail" if row_problems else "pass", None))
    problems += [f"unexplained traced call {ev} {f}" for ev, f in calls[len(seen):]]
    rows += not_exercised_rows(seen, shstk_on, why, lambda st: "not exercised: " + describe(st))
    return rows, problems


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m checks.trace",
                                description="Check a make trace run: each bpftrace log "
                                "against what the guest saw.")
    p.add_argument("outdir", help="where guest.out and console.log are")
    p.add_argument("arch", choices=arches.names(all=True))
    p.add_argument("scripts", help="the trace/ scripts that ran, comma-separated "
                   "(token-validation, shstk-vmas, errno-provenance, ...)")
    p.add_argument("logdir", help="where to write each log, as trace-SCRIPT.log")
    # Positional, and empty allowed, for scripts/trace.sh's "${PROG:+user}".
    p.add_argument("mode", nargs="?", default="", choices=("", "user"),
                   help="user: the guest ran the user's PROG, not the scenario")
    return p.parse_args(argv)


# What each script's events are checked by: fn(events, seen, shstk_on, why,
# user) -> (rows, problems).
CHECKERS = {
    "token-validation": lambda ev, seen, on, why, user: check_token_calls(ev, seen, on, why),
    "shstk-vmas": lambda ev, seen, on, why, user:
        ([], []) if user else check_vmas(ev, seen, on, why),
    "errno-provenance": lambda ev, seen, on, why, user: check_provenance(ev, seen, on, why),
}


def check_script(script, progs, logdir, arch, seen, shstk_on, why, user):
    """One script's log: (rows, problems, the copy of its log written to
    logdir, None when the guest sent none)."""
    trace = next((p for p in progs if p.name == f"trace:{script}"), None)
    logcopy = os.path.join(logdir, f"trace-{script}.log")
    problems = []
    if trace is None:
        return [], [f"{script}: no trace:{script} block: bpftrace never ran"], None
    with open(logcopy, "w") as f:
        f.write("\n".join(trace.lines) + "\n")
    if trace.rc != 0:
        problems.append(f"{script}: bpftrace exited {trace.rc}")
    if not any(line.startswith("TRACE READY") for line in trace.lines):
        problems.append(f"{script}: bpftrace never reported that its probes were attached")
    events = parse_trace(trace.lines)
    if script in CHECKERS:
        rows, script_problems = CHECKERS[script](events, seen, shstk_on, why, user)
    else:
        # A script of the user's: only what holds for any script is checked.
        print(f"{arch:<7} (no check of the events of trace/{script}.bt: bpftrace, console and guest only)")
        rows, script_problems = [], []
    return rows, problems + [f"{script}: {p}" for p in script_problems], logcopy


def main(argv):
    args = parse_args(argv[1:])
    outdir, arch, logdir = args.outdir, args.arch, args.logdir
    scripts = [s for s in args.scripts.split(",") if s]
    user = args.mode == "user"
    with open(os.path.join(outdir, "guest.out"), errors="replace") as f:
        guest_text = f.read()
    try:
        with open(os.path.join(outdir, "console.log"), errors="replace") as f:
            console_text = f.read()
    except FileNotFoundError:
        console_text = ""
    _, progs, done = ktap.parse(guest_text)
    program = next((p for p in progs if not p.name.startswith("trace:")), None)
    # What is wrong with the run itself counts once, whatever the scripts.
    problems = []
    if not done:
        problems.append("the guest never finished")
    problems += [f"kernel {k}: {line}" for k, line in console.scan(console_text)]
    if program is None:
        problems.append("the guest program never ran")
    else:
        problems += [f"guest {program.name}: {p}" for p in program.problems]

    seen = []
    program_lines = program.lines if program is not None else []
    if program is not None and not user:
        seen = [(int(m.group(2), 16), int(m.group(3)), m.group(1))
                for m in (CASE_RE.match(line) for line in program_lines) if m]
        if not seen:
            problems.append("the scenario printed no cases")
    shstk_on, why = shadow_stack_state(program_lines, guest_text, console_text)

    passed = skipped = failed = 0
    for script in scripts:
        rows, script_problems, log = check_script(script, progs, logdir, arch, seen,
                                                  shstk_on, why, user)
        print(f"{arch:<7} trace/{script}.bt")
        print(f"{'arch':<7} {'token':<18} {'clone3':>7}  where")
        for token, ret, where, verdict, reason in rows:
            shown = "-" if ret is None else ret
            print(f"{arch:<7} {token:<#18x} {shown:>7}  {where}  {verdict.upper()}"
                  + (f"  # SKIP {reason}" if verdict == "skip" else ""))
        for p in script_problems:
            print(f"{arch:<7} FAIL  {p}")
        if log:
            print(f"trace log: {log}")
        # Each row that checks out passes, each one not exercised is a skip;
        # every problem is a failure.
        passed += sum(verdict == "pass" for *_, verdict, _ in rows)
        skipped += sum(verdict == "skip" for *_, verdict, _ in rows)
        failed += len(script_problems)
    for p in problems:
        print(f"{arch:<7} FAIL  {p}")
    failed += len(problems)
    print(f"trace {arch}: {passed} passed, {failed} failed, {skipped} skipped "
          f"({', '.join(scripts)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
