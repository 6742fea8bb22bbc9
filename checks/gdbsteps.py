# SPDX-License-Identifier: GPL-2.0
"""Judge a `make gdb-check` run.

    python3 -m checks.gdbsteps OUTDIR ARCH GDB_EXIT_STATUS

Reads OUTDIR/gdb-steps.jsonl (written by gdb/check_clone3.py), the VM's
console log and the guest program's KTAP.  Every step must pass, every step
the arch needs must be there (a breakpoint that never hit is a missing step),
gdb must have exited 0 and the kernel must have stayed clean.
"""
import json
import os
import sys

from checks import console, ktap

CASES = ["valid", "misaligned", "no_token", "normal", "reused"]


def required(shstk_on):
    """(case, step prefix) pairs that must appear in the log."""
    need = []
    for case in CASES:
        need += [(case, "1 clone3 entry"), (case, "path")]
        if case != "misaligned":
            need += [(case, "2 copy_thread"), (case, "2a debug commands")]
    if shstk_on:
        need += [("valid", p) for p in ("3a token check", "3b token check", "4 new task",
                                        "5 child's first user instruction", "clone3 returns")]
        need += [(c, "6 refusal: clone3 returns") for c in CASES[1:]]
        need += [(c, "6 refusal") for c in ("no_token", "reused")]
    else:
        need += [(c, "6 refusal: clone3 returns") for c in CASES]
    return need


def judge(steps, gdb_rc, console_text, guest_text):
    problems = []
    scenario = [s for s in steps if s.get("step") == "0 scenario"]
    shstk_on = bool(scenario and scenario[0].get("shadow_stack_enabled"))
    if not scenario:
        problems.append("gdb never reached the first clone3() of the guest program")
    for case, prefix in required(shstk_on):
        if not any(s.get("case") == case and s.get("step", "").startswith(prefix) for s in steps):
            problems.append(f"missing step '{prefix}' for case {case}")
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


def main(argv):
    outdir, arch, gdb_rc = argv[1], argv[2], int(argv[3])
    steps = []
    try:
        with open(os.path.join(outdir, "gdb-steps.jsonl")) as f:
            steps = [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        pass

    def read(name):
        try:
            with open(os.path.join(outdir, name), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    shstk_on, problems = judge(steps, gdb_rc, read("console.log"), read("guest.out"))
    passed = failed = 0
    print(f"{'arch':<7} {'case':<10} {'step':<40} result")
    for s in steps:
        if s.get("step") == "verdict" or s.get("verdict") == "info":
            continue
        ok = s.get("verdict") == "pass"
        passed += ok
        failed += not ok
        print(f"{arch:<7} {s.get('case', ''):<10} {s.get('step', ''):<40} "
              f"{'PASS' if ok else 'FAIL'}  {s.get('expectation', '')}")
    for p in problems:
        print(f"{arch:<7} {'-':<10} {'(check)':<40} FAIL  {p}")
    failed += len(problems)
    for s in steps:
        if s.get("verdict") == "info":
            print(f"note: {s.get('expectation')}")
    print(f"gdb-check {arch}: {passed} passed, {failed} failed, 0 skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
