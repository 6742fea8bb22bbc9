# SPDX-License-Identifier: GPL-2.0
"""Judge a `make replay` check (scripts/replay.sh --check).

    python3 -m checks.replay OUTDIR ARCH

OUTDIR holds record/ (the recorded run: vm.json, console.log, guest.out) and
three replays of it under gdb (gdb/check_replay.py): stops-1/ and stops-2/
ran forward and logged every stop of the token race, reverse/ ran forward to
the winner's child and backwards to the consumption.  Each has steps.jsonl
and gdb.rc.  The checks:

  - the recorded run: the race passed in the guest, the emulator ended as
    a power-off does, the kernel stayed clean;
  - each forward replay saw the race as the kernel must run it: two token
    checks of one token, the first finding the token and returning 0, the
    second finding 0 and returning -EINVAL; the winner's child starting at
    token + 8; each racer back from clone3() with the child's pid or -22;
    the instruction count rising;
  - the two forward replays logged the same stops, instruction counts
    included;
  - the reverse replay got from the child (at the instruction count the
    forward replays saw it) back to the token check that consumed the token
    (at the count they saw it, the word still the token), one instruction
    further back and forward again, and forward to that check's return,
    where it returned 0 and the word was 0.
"""
import argparse
import json
import os
import sys

from checks import ktap
from spec import console
from config import arches

EINVAL = -22


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def read_steps(path):
    """The JSON lines of a step log; a line gdb was killed while writing
    ends it (what came before still counts)."""
    steps = []
    for line in read(path).splitlines():
        if not line.strip():
            continue
        try:
            steps.append(json.loads(line))
        except json.JSONDecodeError:
            steps.append({"stop": "end", "after": "?", "why": f"a step log line cut short: {line!r}"})
            break
    return steps


def gdb_problems(name, rc_text):
    rc = rc_text.strip()
    if rc == "":
        return [f"{name}: gdb never ran"]
    if rc == "124":
        return [f"{name}: gdb timed out"]
    return [] if rc == "0" else [f"{name}: gdb exited {rc}"]


def record_problems(vm, console_text, guest_text):
    """The recorded run itself."""
    problems = []
    if not vm:
        return ["the recording never ran (no record/vm.json)"]
    if vm.get("timeout"):
        problems.append("the recording timed out")
    elif vm.get("exit") != vm.get("poweroff_exit"):
        problems.append(f"the recording's emulator exited {vm.get('exit')}, "
                        f"not as a power-off does ({vm.get('poweroff_exit')})")
    problems += [f"kernel {kind}: {line}" for kind, line in console.scan(console_text)]
    _, progs, _ = ktap.parse(guest_text)
    if not progs:
        problems.append("the race program never ran to the end")
    for prog in progs:
        problems += [f"guest {prog.name}: {p}" for p in prog.problems]
        problems += [f"guest {prog.name}: {t.name} {t.result}{': ' + t.reason if t.reason else ''}"
                     for t in prog.points if t.result != "pass"]
    return problems


def ended(stops, name):
    """Why a step log stopped short, if it did."""
    for s in stops:
        if s.get("stop") in ("end", "unexpected"):
            return [f"{name}: {s.get('stop')} after {s.get('after', '?')}: "
                    f"{s.get('why') or 'stopped at ' + str(s.get('got')) + ', not ' + str(s.get('want'))}"]
    return []


def race_problems(stops, name):
    """One forward replay's stops against the race as the kernel runs it."""
    problems = ended(stops, name)
    if problems:
        return problems
    if not stops or stops[-1].get("stop") != "done":
        return [f"{name}: the log ends before the race did"]
    race = stops[:-1]
    by = {k: [s for s in race if s.get("stop") == k]
          for k in ("validate", "validate_ret", "child", "parent")}
    counts = {k: len(v) for k, v in by.items()}
    if counts != {"validate": 2, "validate_ret": 2, "child": 1, "parent": 2}:
        return [f"{name}: stops {counts}, not two token checks, their returns, one child "
                f"and two racers back"]
    first, second = by["validate"]
    if first.get("token") != second.get("token"):
        problems.append(f"{name}: the racers passed different tokens")
    if not first.get("valid_token"):
        problems.append(f"{name}: the first check found {first.get('word')}, not the token")
    if second.get("word") != 0:
        problems.append(f"{name}: the second check found {second.get('word')}, not 0")
    rets = {r.get("pid"): r.get("ret") for r in by["validate_ret"]}
    if rets.get(first.get("pid")) != 0 or rets.get(second.get("pid")) != EINVAL:
        problems.append(f"{name}: the checks returned {rets}: the first must return 0, "
                        f"the second {EINVAL}")
    child = by["child"][0]
    if child.get("ssp") is not None and child["ssp"] != first.get("token", 0) + 8:
        problems.append(f"{name}: the child started at SSP {child['ssp']:#x}, not token + 8")
    # Who got what back, where the stops could read the task (riscv's
    # user-mode stops cannot: then what came back, one child pid and one
    # EINVAL).
    back = {p.get("pid"): p.get("ret") for p in by["parent"]}
    if None not in back and child.get("pid") is not None:
        want_back = {first.get("pid"): child.get("pid"), second.get("pid"): EINVAL}
    else:
        want_back = ["a child's pid", EINVAL]
        back = sorted((r if r == EINVAL else "a child's pid" if isinstance(r, int) and r > 0
                       else r for r in (p.get("ret") for p in by["parent"])), key=str)
        want_back = sorted(want_back, key=str)
    if back != want_back:
        problems.append(f"{name}: the racers got {back} back from clone3(), not {want_back}")
    counts_seen = [s.get("icount") for s in race]
    if any(b <= a for a, b in zip(counts_seen, counts_seen[1:])):
        problems.append(f"{name}: the instruction count does not rise: {counts_seen}")
    return problems


def same_stops(a, b):
    """The two forward replays' stops must be the same, field for field."""
    if a == b:
        return []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return [f"the replays differ at stop {i + 1}: {x} against {y}"]
    return [f"the replays logged {len(a)} and {len(b)} stops"]


def reverse_problems(steps, stops):
    """The reverse replay against the forward one's stops."""
    problems = ended(steps, "reverse")
    by = {s.get("step"): s for s in steps if "step" in s}
    need = ("child", "reverse-continue", "reverse-stepi", "stepi", "forward to the return")
    missing = [n for n in need if n not in by]
    if missing:
        return problems + [f"reverse: no {', '.join(missing)} step"]
    fwd = {k: [s for s in stops if s.get("stop") == k] for k in ("validate", "validate_ret", "child")}
    if not fwd["validate"] or not fwd["validate_ret"] or not fwd["child"]:
        return problems + ["reverse: no forward replay to compare with"]
    consumed = fwd["validate"][0]
    consumed_ret = [r for r in fwd["validate_ret"] if r.get("pid") == consumed.get("pid")]
    child, back = by["child"], by["reverse-continue"]
    if child.get("icount") != fwd["child"][0].get("icount"):
        problems.append(f"reverse: the child stopped at count {child.get('icount')}, "
                        f"the forward replays at {fwd['child'][0].get('icount')}")
    if not back.get("valid_token"):
        problems.append(f"reverse: reverse-continue stopped where the word is {back.get('word')}, "
                        f"not the token")
    if child.get("ssp") is not None and back.get("token") != child["ssp"] - 8:
        problems.append("reverse: the check it reached was for another token than the child's")
    if (back.get("icount"), back.get("pid")) != (consumed.get("icount"), consumed.get("pid")):
        problems.append(f"reverse: reverse-continue stopped at count {back.get('icount')} "
                        f"(pid {back.get('pid')}), the consumption was at "
                        f"{consumed.get('icount')} (pid {consumed.get('pid')})")
    step = by["reverse-stepi"]
    if step.get("icount") != step.get("icount_before", 0) - 1:
        problems.append(f"reverse: reverse-stepi went from count {step.get('icount_before')} "
                        f"to {step.get('icount')}")
    if by["stepi"].get("pc") != by["stepi"].get("back_at"):
        problems.append("reverse: stepi after reverse-stepi did not come back to the check")
    ret = by["forward to the return"]
    if ret.get("ret") != 0 or ret.get("word") != 0:
        problems.append(f"reverse: forward to the return: returned {ret.get('ret')}, "
                        f"word {ret.get('word')}; want 0 and 0")
    if consumed_ret and ret.get("icount") != consumed_ret[0].get("icount"):
        problems.append(f"reverse: the check returned at count {ret.get('icount')}, "
                        f"the forward replays saw it at {consumed_ret[0].get('icount')}")
    return problems


def judge(outdir):
    """[(check, problems)] for a replay directory; (check, None, why) for
    a check not run (the emulator cannot run a replay backwards:
    reverse/not-run says why)."""
    vm = {}
    if read(os.path.join(outdir, "record", "vm.json")):
        vm = json.loads(read(os.path.join(outdir, "record", "vm.json")))
    rows = [("the recorded run: the race passed, the kernel stayed clean",
             record_problems(vm, read(os.path.join(outdir, "record", "console.log")),
                             read(os.path.join(outdir, "record", "guest.out"))))]
    logs = {name: read_steps(os.path.join(outdir, name, "steps.jsonl"))
            for name in ("stops-1", "stops-2", "reverse")}
    for name in ("stops-1", "stops-2"):
        rows.append((f"{name}: the race's seven stops, as the kernel must run it",
                     gdb_problems(name, read(os.path.join(outdir, name, "gdb.rc"))) +
                     race_problems(logs[name], name)))
    rows.append(("stops-1 and stops-2: the same stops, instruction counts included",
                 same_stops(logs["stops-1"], logs["stops-2"]) if logs["stops-1"] else
                 ["no stops to compare"]))
    reverse = "reverse: from the child back to the consumption, and forward to its return"
    not_run = read(os.path.join(outdir, "reverse", "not-run")).strip()
    if not_run:
        rows.append((reverse, None, not_run))
    else:
        rows.append((reverse, gdb_problems("reverse", read(os.path.join(outdir, "reverse", "gdb.rc"))) +
                     reverse_problems(logs["reverse"], logs["stops-1"])))
    return rows


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m checks.replay",
                                description="Judge a make replay check.")
    p.add_argument("outdir")
    p.add_argument("arch", choices=arches.names(all=True))
    args = p.parse_args(argv[1:])
    passed = failed = skipped = 0
    for check, problems, *why in judge(args.outdir):
        if problems is None:
            print(f"{args.arch:<8} SKIP  {check}  # SKIP {why[0]}")
            skipped += 1
            continue
        print(f"{args.arch:<8} {'PASS' if not problems else 'FAIL'}  {check}")
        for problem in problems:
            print(f"{args.arch:<8}       {problem}")
        passed += not problems
        failed += bool(problems)
    print(f"replay {args.arch}: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
