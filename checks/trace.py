# SPDX-License-Identifier: GPL-2.0
"""Check a `make trace` run: the bpftrace log against what the guest saw.

    python3 -m checks.trace OUTDIR ARCH SCRIPT LOGCOPY [user]

The trace (trace/token-validation.bt) logs, for the guest program, its
map_shadow_stack() calls and each clone3() with a token: clone3_enter, the
arch copy_thread hook (alloc), arch_shstk_validate_clone() (validate), the
new task (newtask) and clone3_exit.  The guest scenario (guest/shstk_gdb.c)
prints "# CASE: token T -> RET (want W)" for each call.  They must agree:

  - every clone3() that succeeded shows exactly one validation of its token
    with result 0, then a new task whose shadow stack pointer is token + 8;
  - every refused one shows the refusal where the kernel makes it, with the
    errno the guest saw, and no new task;
  - every call the guest made is in the trace, in order, and nothing in the
    trace is unexplained.
"""
import os
import re
import sys

from checks import console, ktap

EINVAL, EFAULT = 22, 14
LINE_RE = re.compile(r"^(\w+) (.*)$")
CASE_RE = re.compile(r"^# (\w+): token (0x[0-9a-f]+) -> (-?\d+) \(want (-?\d+)\)")


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


def check_call(call, arch):
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
            ssp = newtasks[0].get("ssp") if arch == "arm64" else (allocs[0].get("ssp") if allocs else None)
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
            if validates:
                problems.append(f"token {token:#x}: EFAULT, yet the token was validated")
        elif ret == -EINVAL:
            refused_by_alloc = any(a.get("ret") == -EINVAL for a in allocs)
            refused_by_validate = [v["ret"] for v in validates] == [-EINVAL]
            if not (refused_by_alloc or refused_by_validate):
                problems.append(f"token {token:#x}: EINVAL with no refusal in the trace")
        else:
            problems.append(f"token {token:#x}: unexpected errno {ret}")
    return problems


def where_refused(call):
    if call["ret"] and call["ret"] > 0:
        return "accepted: validated (0), new task on token + 8"
    names = [ev for ev, f in call["events"]]
    if call["token"] % 8:
        return "clone3_args_valid (misaligned)"
    for ev, f in call["events"]:
        if ev == "alloc" and f.get("ret") == -EINVAL:
            return "copy_thread: no shadow stack in the caller"
        if ev == "validate" and f.get("ret") == -EINVAL:
            return "arch_shstk_validate_clone: not the token"
    if "alloc" in names and "validate" not in names:
        return "shstk_validate_clone: not a shadow stack VMA"
    return "?"


def check_token_calls(events, seen, arch):
    """trace/token-validation.bt against the guest's cases: (rows, problems).

    Each traced clone3() call is explained by its events (check_call), and
    the calls the guest made are the traced ones, in order.
    """
    calls, stray = group_calls(events)
    problems = [f"unexplained trace event {ev} {f}" for ev, f in stray]
    rows = []
    for call in calls:
        call_problems = check_call(call, arch)
        problems += call_problems
        rows.append((call["token"], call["ret"], where_refused(call), not call_problems))
    if seen:
        guest_calls = [(t, 0 if r == 0 else r) for t, r, _ in seen]
        # clone3 returns the pid on success; the scenario prints 0 for it.
        traced = [(c["token"], 0 if c["ret"] is not None and c["ret"] > 0 else c["ret"]) for c in calls]
        if guest_calls != traced:
            problems.append(f"the guest's calls {guest_calls} are not the traced ones {traced}")
    return rows, problems


def check_vmas(events, seen, shstk):
    """trace/shstk-vmas.bt against the guest's cases: (rows, problems).

    Every aligned token from a caller with shadow stacks reaches copy_thread(),
    which points the new task's shadow stack at token + 8 before the token is
    checked (copy_process() may refuse it after); a misaligned one never gets
    there, nor does any token from a caller without shadow stacks.  An
    accepted token lies in a stack that map_shadow_stack() returned.
    """
    maps = [(f.get("addr", 0), f.get("size", 0)) for ev, f in events if ev == "map"]
    threads = [f for ev, f in events if ev == "copy_thread" and f.get("kernel") == 0]
    rows, problems, i = [], [], 0
    for token, ret, _ in seen:
        if token % 8 or not shstk:
            why = "misaligned" if token % 8 else "caller without shadow stack"
            rows.append((token, ret, f"{why}: no copy_thread shadow stack", True))
            continue
        if i >= len(threads):
            problems.append(f"token {token:#x}: no copy_thread event")
            rows.append((token, ret, "copy_thread never traced", False))
            continue
        sp = threads[i].get("ssp", threads[i].get("gcspr"))
        i += 1
        ok = sp == token + 8
        if not ok:
            problems.append(f"token {token:#x}: copy_thread set the shadow stack pointer to {sp}, not token + 8")
        if ret == 0 and not any(a <= token < a + n for a, n in maps):
            ok = False
            problems.append(f"token {token:#x}: accepted, but in no traced map_shadow_stack() range")
        rows.append((token, ret, "copy_thread: shadow stack pointer token + 8"
                     + (", in a mapped stack" if ret == 0 else ""), ok))
    problems += [f"unexplained copy_thread {f}" for f in threads[i:]]
    return rows, problems


def main(argv):
    outdir, arch, script, logcopy = argv[1:5]
    user = len(argv) > 5 and argv[5] == "user"
    with open(os.path.join(outdir, "guest.out"), errors="replace") as f:
        guest_text = f.read()
    try:
        with open(os.path.join(outdir, "console.log"), errors="replace") as f:
            console_text = f.read()
    except FileNotFoundError:
        console_text = ""
    _, progs, done = ktap.parse(guest_text)
    trace = next((p for p in progs if p.name == f"trace:{script}"), None)
    scenario = next((p for p in progs if not p.name.startswith("trace:")), None)
    problems = []
    if trace is None:
        problems.append(f"no trace:{script} block: bpftrace never ran")
        trace_lines = []
    else:
        trace_lines = trace.lines
        with open(logcopy, "w") as f:
            f.write("\n".join(trace_lines) + "\n")
        if trace.rc != 0:
            problems.append(f"bpftrace exited {trace.rc}")
        if not any(line.startswith("TRACE READY") for line in trace_lines):
            problems.append("bpftrace never reported that its probes were attached")
    if not done:
        problems.append("the guest never finished")
    problems += [f"kernel {k}: {line}" for k, line in console.scan(console_text)]
    if scenario is None:
        problems.append("the guest program never ran")
    else:
        problems += [f"guest {scenario.name}: {p}" for p in scenario.problems]

    seen = []
    if scenario is not None and not user:
        seen = [(int(m.group(2), 16), int(m.group(3)), m.group(1))
                for m in (CASE_RE.match(line) for line in scenario.lines) if m]
        if not seen:
            problems.append("the scenario printed no cases")
    events = parse_trace(trace_lines)
    if script == "token-validation":
        rows, script_problems = check_token_calls(events, seen, arch)
    elif script == "shstk-vmas":
        rows, script_problems = ([], []) if user else \
            check_vmas(events, seen, "cpu_shstk=yes" in guest_text)
    else:
        # A script of the user's: only what holds for any script is checked.
        print(f"{arch:<7} (no check of the events of trace/{script}.bt: bpftrace, console and guest only)")
        rows, script_problems = [], []
    problems += script_problems

    passed = sum(ok for *_, ok in rows)
    print(f"{'arch':<7} {'token':<18} {'clone3':>7}  where")
    for token, ret, where, ok in rows:
        print(f"{arch:<7} {token:<#18x} {ret:>7}  {where}  {'PASS' if ok else 'FAIL'}")
    for p in problems:
        print(f"{arch:<7} FAIL  {p}")
    print(f"trace log: {logcopy}")
    # Each traced call that checks out passes; every problem is a failure.
    print(f"trace {arch}: {passed} passed, {len(problems)} failed, 0 skipped")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
