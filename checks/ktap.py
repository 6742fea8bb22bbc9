# SPDX-License-Identifier: GPL-2.0
"""Parse the guest's results channel.

The guest's /init frames each program's output:

    SHSTK-LAB BEGIN <name>
    ... the program's KTAP (or TAP 13, as kselftest.h prints) ...
    SHSTK-LAB END <name> rc=<exit status>
    SHSTK-LAB DONE

and, when the host's TESTS= chose what runs (spec/selection.py), first
"SHSTK-LAB SELECTION <shstk.tests= word>", then "SHSTK-LAB NOT-SELECTED
<name>" in place of each program it left out.

Each program becomes a Program with its test points, plan, exit status and
metrics ("# metric: NAME=VALUE" diagnostics), and a verdict that trusts
nothing it did not see: a missing plan, a count that does not match the plan,
a non-zero exit or a missing END marker all fail the program.
"""
import re
from dataclasses import dataclass, field

from spec.selection import NOT_SELECTED

RESULT_RE = re.compile(r"^(not ok|ok)\s+(\d+)\s*(?:-\s*)?([^#]*?)\s*(?:#\s*(SKIP|TODO|XFAIL)\b\s*(.*))?$",
                       re.IGNORECASE)
PLAN_RE = re.compile(r"^1\.\.(\d+)")
# The older x86 selftests print "[OK]", "[FAIL]" and "[SKIP]" lines, not KTAP.
TAGGED_RE = re.compile(r"^\[(OK|FAIL|SKIP)\]\s*(.*)$")
# KTAP's abort: the program gave up, saying why (kselftest's ksft_exit_fail_msg).
BAIL_RE = re.compile(r"^Bail out!\s*(.*?)\s*$")
METRIC_RE = re.compile(r"^#\s*metric:\s*([A-Za-z0-9_.-]+)=(-?[0-9]+(?:\.[0-9]+)?)\s*$")
KSFT_SKIP = 4       # kselftest's exit status for "everything skipped"
TIMEOUT_RCS = {124, 143}   # busybox timeout: 124, or killed by its TERM


@dataclass
class Point:
    number: int
    name: str
    result: str          # "pass", "fail", "skip" or "xfail" (a known failure)
    reason: str = ""


@dataclass
class Program:
    name: str
    lines: list = field(default_factory=list)
    rc: int | None = None
    plan: int | None = None
    points: list = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)
    bail_out: str | None = None    # the reason of a "Bail out!" line
    xfail: list = field(default_factory=list)    # (problem, why) known, not ours
    left_out: bool = False         # TESTS= did not choose it: it never ran

    @property
    def verdict(self):
        """'pass', 'skip' (ran, skipped everything it had to, or was left
        out), 'xfail' (its problems all known, guest/known-failures) or
        'fail'."""
        if self.left_out:
            return "skip"
        if self.problems:
            return "fail"
        if self.xfail:
            return "xfail"
        return "skip" if self.points and all(p.result == "skip" for p in self.points) else "pass"

    @property
    def cases_left_out(self):
        """Its points TESTS= did not choose (ran with -t: lib/case.h)."""
        return [p for p in self.points if p.result == "skip" and p.reason == NOT_SELECTED]


def parse_points(prog):
    """Fill in @prog's plan, points and metrics from its raw lines.

    Only top-level (unindented) lines count: indented lines belong to
    subtests, which report to their parent line.
    """
    before = ""
    for line in prog.lines:
        if line.startswith((" ", "\t")):
            continue
        previous, before = before, line
        m = PLAN_RE.match(line)
        if m and prog.plan is None:
            prog.plan = int(m.group(1))
            continue
        m = BAIL_RE.match(line)
        if m and prog.bail_out is None:
            prog.bail_out = m.group(1)
            continue
        m = METRIC_RE.match(line)
        if m:
            value = m.group(2)
            prog.metrics[m.group(1)] = float(value) if "." in value else int(value)
            continue
        m = RESULT_RE.match(line)
        if m:
            ok, num, desc, directive, reason = m.groups()
            directive = (directive or "").upper()
            if directive == "SKIP":
                result = "skip"
            elif directive == "XFAIL":
                # A failure the program says this kernel is known to have
                # (kselftest's ksft_test_result_xfail()), and why: shown,
                # counted with the skips, as guest/known-failures' are.
                result = "xfail"
            elif ok.lower() == "ok" or directive == "TODO":
                result = "pass"
            else:
                result = "fail"
            # kselftest.h puts the name after "# SKIP": use it when the
            # description is empty.  Its tests then say why on the line
            # just before (ksft_print_msg()), which becomes the reason.
            name = desc.strip() or (reason or "").strip() or f"test {num}"
            why = (reason or "").strip()
            if result == "skip" and not desc.strip() and previous.startswith("# "):
                why = previous[2:].strip() or why
            prog.points.append(Point(int(num), name, result, why))


def judge(prog):
    """Record in prog.problems everything that makes the program a failure."""
    if prog.left_out:
        return
    if prog.plan is None and not prog.points and prog.rc is not None and prog.bail_out is None:
        tagged = [TAGGED_RE.match(line) for line in prog.lines]
        tagged = [m for m in tagged if m]
        if tagged:
            # "[OK]/[FAIL]/[SKIP]" style: one point per tagged line.
            kinds = {"OK": "pass", "FAIL": "fail", "SKIP": "skip"}
            for i, m in enumerate(tagged, 1):
                text = m.group(2).strip()
                prog.points.append(Point(i, text, kinds[m.group(1)],
                                         text if m.group(1) == "SKIP" else ""))
            prog.plan = len(prog.points)
            # Those tests exit 1 when they skip everything: that exit status,
            # with nothing but skips printed, is their way of saying skip.
            if prog.rc == 1 and all(p.result == "skip" for p in prog.points):
                prog.rc = KSFT_SKIP
        else:
            # No output to read: an exit-status test, judged as kselftest's
            # runner judges one (0 pass, 4 skip, anything else fail).
            result = {0: "pass", KSFT_SKIP: "skip"}.get(prog.rc, "fail")
            prog.plan = 1
            prog.points.append(Point(1, "exit status", result,
                                     "exit status 4" if result == "skip" else ""))
    if prog.rc is None:
        prog.problems.append("no END marker: the program never finished (guest hang or crash?)")
    elif prog.rc in TIMEOUT_RCS:
        prog.problems.append(f"timed out in the guest (exit {prog.rc})")
    elif prog.rc not in (0, KSFT_SKIP):
        prog.problems.append(f"exit status {prog.rc}")
    if prog.bail_out is not None:
        # Named by its reason, so that a known one (guest/known-failures)
        # does not cover another way of giving up.
        prog.problems.append(f"Bail out! {prog.bail_out}".rstrip())
    if prog.plan is None:
        # A program that bails out before its plan has said why already.
        if prog.bail_out is None:
            prog.problems.append("no KTAP plan")
    elif len(prog.points) != prog.plan:
        prog.problems.append(f"plan says {prog.plan} tests, saw {len(prog.points)}")
    numbers = [p.number for p in prog.points]
    if numbers != list(range(1, len(numbers) + 1)):
        prog.problems.append("test numbers out of sequence")
    for p in prog.points:
        if p.result == "fail":
            prog.problems.append(f"not ok {p.number} {p.name}")
        if p.result == "skip" and not p.reason and not p.name:
            prog.problems.append(f"test {p.number} skipped without a reason")
        if p.result == "xfail" and not p.reason:
            prog.problems.append(f"test {p.number} {p.name}: a known failure (XFAIL) without a reason")
    if prog.rc == KSFT_SKIP and any(p.result == "pass" for p in prog.points):
        prog.problems.append("exit status 4 (skip) although tests passed")


def parse(text):
    """Parse the whole results channel: returns (guest_info, programs, done);
    guest_info["tests"] is the selection, when TESTS= made one."""
    info, programs, current, done = {}, [], None, False
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if line.startswith("SHSTK-LAB GUEST "):
            info = dict(kv.split("=", 1) for kv in line.split()[2:] if "=" in kv)
        elif line.startswith("SHSTK-LAB SELECTION "):
            info["tests"] = line.split(None, 2)[2].strip()
        elif line.startswith("SHSTK-LAB NOT-SELECTED "):
            programs.append(Program(line.split(None, 2)[2].strip(), left_out=True))
            current = None
        elif line.startswith("SHSTK-LAB BEGIN "):
            current = Program(line.split(None, 2)[2].strip())
            programs.append(current)
        elif line.startswith("SHSTK-LAB END ") and current is not None:
            m = re.search(r"rc=(\d+)", line)
            current.rc = int(m.group(1)) if m else None
            current = None
        elif line.strip() == "SHSTK-LAB DONE":
            done = True
        elif current is not None:
            current.lines.append(line)
    for prog in programs:
        parse_points(prog)
        judge(prog)
    return info, programs, done
