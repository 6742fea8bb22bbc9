# SPDX-License-Identifier: GPL-2.0
"""Judge a `make gdb-check` run.

    python3 -m checks.gdbsteps OUTDIR ARCH GDB_EXIT_STATUS

Reads OUTDIR/gdb-steps.jsonl (written by gdb/check_clone3.py), the VM's
console log and the guest program's KTAP.  Every step must pass (the drgn
oracle's, logged with both readings, by checks/oracle.py's verdict), every
step the arch needs must be there (a breakpoint that never hit is a missing
step), gdb must have exited 0 and the kernel must have stayed clean.  A step that
was not exercised is a skip with its reason (the consumption steps of a
caller without shadow stacks, a live SSP no gdbstub shows), counted as such;
a skip anywhere else is a failure.
"""
import argparse
import json
import os
import sys

from checks import ktap, oracle
from spec import console, scenario
from config import arches


def required(shstk_on):
    """(case, step) pairs that must appear in the log: every step a caller
    with a shadow stack shows (those this one could not show as skips)."""
    return [(c, s) for c in scenario.CASE_NAMES for s in scenario.gdb_steps(c, True)] + \
        [(c, s) for c in scenario.CASE_NAMES for s in scenario.gdb_steps(c, shstk_on)
         if s not in scenario.gdb_steps(c, True)]


def skip_problems(steps, shstk_on):
    """A skip is honest only with a reason, and only where the scenario
    allows one: a step this caller could not exercise, or one MAY_SKIP."""
    allowed = set(scenario.not_exercised(shstk_on))
    problems = []
    for s in steps:
        if s.get("verdict") != "skip":
            continue
        where = f"'{s.get('step')}' for case {s.get('case')}"
        if not s.get("reason"):
            problems.append(f"step {where} skipped without a reason")
        if (s.get("case"), s.get("step")) not in allowed and s.get("step") not in scenario.MAY_SKIP:
            problems.append(f"step {where} skipped, but it must run here")
    return problems


def judge(steps, gdb_rc, console_text, guest_text):
    problems = []
    first = [s for s in steps if s.get("step") == scenario.STEP_SCENARIO]
    shstk_on = bool(first and first[0].get("shadow_stack_enabled"))
    if not first:
        problems.append("gdb never reached the first clone3() of the guest program")
    for case, step in required(shstk_on):
        if not any(s.get("case") == case and s.get("step") == step for s in steps):
            problems.append(f"missing step '{step}' for case {case}")
    problems += skip_problems(steps, shstk_on)
    if not any(s.get("step") == "verdict" for s in steps):
        problems.append("the step log has no verdict: gdb stopped part way")
    if gdb_rc == 124:
        problems.append("gdb timed out (a breakpoint never hit)")
    elif gdb_rc:
        problems.append(f"gdb exited {gdb_rc}")
    for kind, line in console.scan(console_text):
        problems.append(f"kernel {kind}: {line}")
    _, progs, _ = ktap.parse(guest_text)
    for prog in progs:
        problems += [f"guest {prog.name}: {p}" for p in prog.problems]
    if not progs:
        problems.append("the guest program never ran to the end")
    return shstk_on, problems


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m checks.gdbsteps",
                                description="Judge a make gdb-check run.")
    p.add_argument("outdir", help="where gdb-steps.jsonl, console.log and guest.out are")
    p.add_argument("arch", choices=arches.names(all=True))
    p.add_argument("gdb_rc", type=int, metavar="GDB_EXIT_STATUS",
                   help="gdb's exit status (124: timed out)")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv[1:])
    outdir, arch, gdb_rc = args.outdir, args.arch, args.gdb_rc
    steps = []
    try:
        with open(os.path.join(outdir, "gdb-steps.jsonl")) as f:
            steps = [oracle.judge(json.loads(line)) for line in f if line.strip()]
    except FileNotFoundError:
        pass

    def read(name):
        try:
            with open(os.path.join(outdir, name), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    _, problems = judge(steps, gdb_rc, read("console.log"), read("guest.out"))
    counts = {"pass": 0, "fail": 0, "skip": 0}
    print(f"{'arch':<7} {'case':<10} {'step':<40} result")
    for s in steps:
        if s.get("step") == "verdict":
            continue
        verdict = s.get("verdict") if s.get("verdict") in ("pass", "skip") else "fail"
        counts[verdict] += 1
        reason = f"  # SKIP {s.get('reason')}" if verdict == "skip" else ""
        print(f"{arch:<7} {s.get('case', ''):<10} {s.get('step', ''):<40} "
              f"{verdict.upper()}  {s.get('expectation', '')}{reason}")
    for p in problems:
        print(f"{arch:<7} {'-':<10} {'(check)':<40} FAIL  {p}")
    counts["fail"] += len(problems)
    print(f"gdb-check {arch}: {counts['pass']} passed, {counts['fail']} failed, "
          f"{counts['skip']} skipped")
    # The verdict for what reads the results later (checks/evidence.py).
    with open(os.path.join(outdir, "gdb-check.json"), "w") as f:
        json.dump({"passed": counts["pass"], "failed": counts["fail"],
                   "skipped": counts["skip"]}, f)
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
