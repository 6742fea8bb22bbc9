# SPDX-License-Identifier: GPL-2.0
"""Judge QEMU's bare-metal system tests (scripts/tcg-tests.sh) from what
each left in OUTDIR: TEST.out, the test's own output ("ok N name", "not ok
N name: why", and a closing "N tests, M failures"), and QEMU's exit status
given on the command line.  Prints KTAP: one point per check, named
TEST.name, a failed check's reason on a diagnostic line before it, then one
point per test for its verdict as a whole; and a closing "tcg-tests ARCH: N
passed, N failed, 0 skipped".  Exits 1 if anything failed.

    python3 -m checks.tcgtests ARCH OUTDIR TEST=RC [TEST=RC ...]

A test passes as a whole only if QEMU exited 0, its totals line is there
and says no failures, and it counts as many checks as it printed: a check
line this parser does not read (or one the test never printed) cannot pass
unseen.  A "not ok" line that is no check (an unexpected exception that
ended the test) fails the test with that line.
"""
import os
import re
import sys

CHECK = re.compile(r"^(ok|not ok) (\d+) ([^\s:]+)(?:: (.*))?$")
TOTALS = re.compile(r"^(\d+) tests, (\d+) failures$")
# timeout(1)'s statuses: TERM after the limit, KILL after the grace period.
TIMED_OUT = (124, 137)


def judge(name, text, rc):
    """([(ok, point name, reason or None)], test ok, reason or None) for
    the output @text of test @name that QEMU ended with status @rc."""
    checks, aborts, totals = [], [], None
    for line in text.splitlines():
        m = CHECK.match(line)
        t = None if m else TOTALS.match(line)
        if m:
            checks.append((m.group(1) == "ok", f"{name}.{m.group(3)}", m.group(4)))
        elif t:
            totals = tuple(int(x) for x in t.groups())
        elif line.startswith("not ok"):
            aborts.append(line)
    failed = sum(not ok for ok, _, _ in checks)
    why = None
    if rc in TIMED_OUT:
        why = f"no result within the time limit (exit status {rc})"
    elif aborts:
        why = aborts[0]
    elif totals is None:
        why = f"ended without its totals line (exit status {rc})"
    elif totals[0] != len(checks):
        why = f"its totals count {totals[0]} checks, its output has {len(checks)}"
    elif totals[1] != failed:
        why = f"its totals count {totals[1]} failures, its output has {failed}"
    elif totals[1] or rc:
        why = f"{totals[0]} tests, {totals[1]} failures, exit status {rc}"
    return checks, why is None, why


def main(argv):
    if len(argv) < 4:
        sys.exit("usage: python3 -m checks.tcgtests ARCH OUTDIR TEST=RC [TEST=RC ...]")
    arch, outdir = argv[1], argv[2]
    lines, n, passed, failed = [], 0, 0, 0
    for arg in argv[3:]:
        name, _, rc = arg.partition("=")
        try:
            with open(os.path.join(outdir, name + ".out"), errors="replace") as f:
                text = f.read()
        except FileNotFoundError:
            text = ""
        checks, ok, why = judge(name, text, int(rc))
        for check_ok, point, reason in checks + [(ok, name, why)]:
            n += 1
            if check_ok:
                passed += 1
            else:
                failed += 1
                if reason:
                    lines.append(f"# {point}: {reason}")
            lines.append(f"{'ok' if check_ok else 'not ok'} {n} {point}")
        if not ok:
            lines.append(f"# {name}: its output {os.path.join(outdir, name + '.out')}, "
                         f"QEMU's {os.path.join(outdir, name + '.log')}")
    print("KTAP version 1")
    print(f"1..{n}")
    print("\n".join(lines))
    print(f"tcg-tests {arch}: {passed} passed, {failed} failed, 0 skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
