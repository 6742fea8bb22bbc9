# SPDX-License-Identifier: GPL-2.0
"""Sum up the steps of `make test` (scripts/test.sh).

    python3 -m checks.summary LOGDIR NAME KIND RC [NAME KIND RC ...]

KIND says how a step is counted:
  unittest        python's unittest output ("Ran N tests", failures, skips)
  ktap            the step printed KTAP: its test points
  build           one point: the exit status
  results:DIR     a VM run: DIR/results.json (checks/report.py)
  gdbsteps        make gdb-check, make trace, make tcg-tests: their closing
                  "N passed, N failed" line
A step that exits non-zero with nothing failed in what it printed counts one
failure more: a step can never fail silently.

Between the table and the total, each failed step shows the lines of its log
that say what failed (FAIL, "not ok", errors), a few per step: a CI log that
keeps only its tail still names the failure, not just the step.  Each step
with skips shows why, from its "# SKIP reason" lines, counted by reason: a
skipped column without reasons would read like a quiet pass.
"""
import argparse
import json
import os
import re
import sys

from checks import ktap


def count_unittest(text):
    ran = re.search(r"^Ran (\d+) tests?", text, re.M)
    total = int(ran.group(1)) if ran else 0
    fails = sum(int(n) for n in re.findall(r"(?:failures|errors)=(\d+)", text))
    skips = sum(int(n) for n in re.findall(r"skipped=(\d+)", text))
    return total - fails - skips, fails, skips


def count_ktap(text):
    _, progs, _ = ktap.parse("SHSTK-LAB BEGIN step\n" + text + "\nSHSTK-LAB END step rc=0\n")
    points = progs[0].points
    return (sum(p.result == "pass" for p in points), sum(p.result == "fail" for p in points),
            sum(p.result in ("skip", "xfail") for p in points))


def count_closing_line(text):
    m = re.findall(r"(\d+) passed, (\d+) failed, (\d+) skipped", text)
    return tuple(int(x) for x in m[-1]) if m else (0, 0, 0)


def count_results(outdir):
    try:
        with open(os.path.join(outdir, "results.json")) as f:
            r = json.load(f)
    except (OSError, ValueError):
        return 0, 0, 0
    return r["passed"], r["failed"], r["skipped"]


# What a log line that names a failure looks like, in the outputs the steps
# print: check tables (FAIL), KTAP ("not ok"), python and the scripts' own
# messages.
FAILURE_LINE = re.compile(r"\bFAIL\b|^\s*not ok\b|^(?:ERROR|FAIL):|\b(?:error|failed|timed out)\b",
                          re.I)
SHOWN_PER_STEP = 6


def failure_lines(text, limit=SHOWN_PER_STEP):
    """The first few lines of a step's log that say what failed."""
    hits = [line.rstrip() for line in text.splitlines()
            if FAILURE_LINE.search(line) and not re.search(r"\b0 failed\b|# (?:SKIP|XFAIL)", line)]
    more = len(hits) - limit
    return hits[:limit] + ([f"... and {more} more"] if more > 0 else [])


# A skip and its reason: "# SKIP reason" (KTAP, checks.gdbsteps,
# checks.trace), or a checks.report table row "SKIP  (reason)" (XFAIL, a
# known failure, counts as skipped there too).
SKIP_REASON = re.compile(r"# SKIP\s+(.*\S)|\b(?:SKIP|XFAIL)\s+\((.*)\)\s*$")


def skip_reasons(text, limit=SHOWN_PER_STEP):
    """[(count, reason)] of a step's skip lines, most frequent first (ties in
    the order they first appear)."""
    counts = {}
    for line in text.splitlines():
        m = SKIP_REASON.search(line)
        if m:
            why = m.group(1) or m.group(2)
            counts[why] = counts.get(why, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    return [(n, why) for why, n in ranked[:limit]]


KINDS = ("unittest", "ktap", "build", "gdbsteps", "results:DIR")


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python3 -m checks.summary", description="Sum up the steps of make test.",
        usage="%(prog)s LOGDIR NAME KIND RC [NAME KIND RC ...]",
        epilog="KIND: " + ", ".join(KINDS) + "; each step's log is LOGDIR/NAME.log")
    p.add_argument("logdir")
    p.add_argument("steps", nargs="+", metavar="NAME KIND RC")
    args = p.parse_args(argv)
    if len(args.steps) % 3:
        p.error(f"steps come as NAME KIND RC: {len(args.steps)} words is not a multiple of 3")
    steps = []
    for i in range(0, len(args.steps), 3):
        name, kind, rc = args.steps[i:i + 3]
        if kind not in KINDS[:-1] and not kind.startswith("results:"):
            p.error(f"step {name}: unknown kind {kind!r} (use {', '.join(KINDS)})")
        try:
            steps.append((name, kind, int(rc)))
        except ValueError:
            p.error(f"step {name}: exit status {rc!r} is not a number")
    return args.logdir, steps


def step_log(logdir, name):
    """The text of step @name's log in @logdir; "" if it left none (a step
    that died before it wrote one is judged by its exit status)."""
    try:
        with open(os.path.join(logdir, name + ".log"), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def main(argv):
    logdir, steps = parse_args(argv[1:])
    total = [0, 0, 0]
    failed_logs = []
    skipped_logs = []
    width = max([len("step")] + [len(n) for n, _, _ in steps])
    print(f"{'step':<{width}} {'passed':>7} {'failed':>7} {'skipped':>8}  exit")
    for name, kind, rc in steps:
        text = step_log(logdir, name)
        if kind == "unittest":
            p, f_, s = count_unittest(text)
        elif kind == "ktap":
            p, f_, s = count_ktap(text)
        elif kind == "build":
            p, f_, s = (1, 0, 0) if rc == 0 else (0, 1, 0)
        elif kind == "gdbsteps":
            p, f_, s = count_closing_line(text)
        else:
            p, f_, s = count_results(kind.split(":", 1)[1])
        if rc != 0 and f_ == 0:
            f_ = 1
        if f_:
            failed_logs.append((name, text))
        if s:
            skipped_logs.append((name, s, text))
        print(f"{name:<{width}} {p:>7} {f_:>7} {s:>8}  {rc}")
        for j, v in enumerate((p, f_, s)):
            total[j] += v
    # Skips first: the failures stay next to the total, in a log's tail.
    for name, n, text in skipped_logs:
        print(f"{name} skipped {n}:")
        for count, why in skip_reasons(text) or [(n, "(its log gives no reason; see the log)")]:
            print(f"  {count:>4}  {why[:150]}")
    for name, text in failed_logs:
        print(f"{name} failed ({os.path.join(logdir, name + '.log')}):")
        for line in failure_lines(text) or ["(its log names no failure; see the log)"]:
            print(f"  {line[:160]}")
    # The last line, in the form CI reads: "N passed, N failed, N skipped".
    print(f"{total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return 1 if total[1] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
