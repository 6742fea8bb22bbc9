# SPDX-License-Identifier: GPL-2.0
"""Each step of `make test` against its time budget (config/test-budgets).

    python3 -m checks.budgets [--markdown] [--budgets FILE] STEPS_TSV

STEPS_TSV is scripts/test.sh's record of a run (out/test/steps.tsv), one
step per line: NAME, then its wall time in seconds, tab-separated; a line
named "total" is the whole run's wall time (steps of two lanes overlap),
which the total's budget is checked against (without it, the steps' sum).  Prints
one row per step (budget, time, verdict) and the total; exits 1 if a step or
the total went over its budget, or a step has none.  make bench runs it as
a check; make test prints it for information only.
"""
import argparse
import fnmatch
import os
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUDGETS = os.path.join(TOP, "config", "test-budgets")


def parse_budgets(text):
    """[(pattern, seconds)] in file order, and the total's budget (or None)."""
    rules, total = [], None
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        try:
            if len(words) != 2:
                raise ValueError("want PATTERN SECONDS")
            seconds = float(words[1])
        except ValueError as e:
            raise ValueError(f"test-budgets line {n}: {line!r}: {e}") from None
        if words[0] == "total":
            total = seconds
        else:
            rules.append((words[0], seconds))
    return rules, total


def parse_steps(text):
    """[(name, seconds)] from steps.tsv, and its "total" line (or None)."""
    steps, wall = [], None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            name, seconds = line.split("\t")
            seconds = float(seconds)
        except ValueError:
            raise ValueError(f"steps line {n}: {line!r}: want NAME<TAB>SECONDS") from None
        if name == "total":
            wall = seconds
        else:
            steps.append((name, seconds))
    return steps, wall


def budget_of(name, rules):
    for pattern, seconds in rules:
        if fnmatch.fnmatchcase(name, pattern):
            return seconds
    return None


def judge(steps, rules, total_budget, wall=None):
    """[(name, budget, seconds, verdict)], the total's row, and whether all
    held.  The total is WALL when the run gave it, else the steps' sum."""
    rows, ok = [], True
    for name, seconds in steps:
        budget = budget_of(name, rules)
        if budget is None:
            verdict, ok = "NO BUDGET", False
        elif seconds > budget:
            verdict, ok = "OVER", False
        else:
            verdict = "ok"
        rows.append((name, budget, seconds, verdict))
    spent = sum(s for _, s in steps) if wall is None else wall
    if total_budget is None:
        total = ("total", None, spent, "NO BUDGET")
        ok = False
    else:
        total = ("total", total_budget, spent, "ok" if spent <= total_budget else "OVER")
        ok = ok and spent <= total_budget
    return rows, total, ok


def fmt(x):
    return "-" if x is None else f"{x:.1f}"


def render(rows, total, markdown):
    out = []
    if markdown:
        out.append("| step | budget (s) | took (s) | |")
        out.append("|---|---|---|---|")
        for name, budget, seconds, verdict in rows + [total]:
            out.append(f"| {name} | {fmt(budget)} | {fmt(seconds)} | {verdict} |")
    else:
        width = max(len(r[0]) for r in rows + [total])
        out.append(f"{'step':<{width}} {'budget':>7} {'took':>7}")
        for name, budget, seconds, verdict in rows + [total]:
            out.append(f"{name:<{width}} {fmt(budget):>7} {fmt(seconds):>7}  {verdict}")
    return "\n".join(out)


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m checks.budgets",
                                description="make test's steps against their time budgets.")
    p.add_argument("--markdown", action="store_true", help="a table for docs/bench.md")
    p.add_argument("--budgets", default=BUDGETS, help="the budgets (config/test-budgets)")
    p.add_argument("steps", help="scripts/test.sh's steps.tsv")
    args = p.parse_args(argv[1:])
    try:
        with open(args.budgets) as f:
            rules, total_budget = parse_budgets(f.read())
        with open(args.steps) as f:
            steps, wall = parse_steps(f.read())
    except (OSError, ValueError) as e:
        print(f"budgets: {e}", file=sys.stderr)
        return 2
    if not steps:
        print(f"budgets: no steps in {args.steps}", file=sys.stderr)
        return 2
    rows, total, ok = judge(steps, rules, total_budget, wall)
    print(render(rows, total, args.markdown))
    within = sum(verdict == "ok" for _, _, _, verdict in rows)
    over = [name for name, _, _, verdict in rows + [total] if verdict != "ok"]
    print(f"\ntime budgets: {within} of {len(rows)} steps"
          f" within{'; over: ' + ', '.join(over) if over else ''}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
