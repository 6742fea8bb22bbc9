# SPDX-License-Identifier: GPL-2.0
"""Scan a guest's kernel console log for the signs of a broken kernel.

Any of these makes a run fail whatever the tests said: the log is kept.
"""
import re
import sys

# (what, pattern): the kernel's own wording for each kind of trouble.
SIGNS = [
    ("panic", re.compile(r"Kernel panic - not syncing")),
    ("oops", re.compile(r"\bOops\b|Internal error: Oops")),
    ("KASAN", re.compile(r"BUG: KASAN: ")),
    ("soft lockup", re.compile(r"watchdog: BUG: soft lockup")),
    ("lockdep", re.compile(r"WARNING: possible (circular|recursive) locking|inconsistent lock state")),
    ("kmemleak", re.compile(r"kmemleak: \d+ new suspected memory leaks|^unreferenced object 0x")),
    # A stall another CPU noticed ("detected stalls on CPUs/tasks"), or the
    # stalled CPU itself ("self-detected stall on CPU").
    ("RCU stall", re.compile(r"rcu: INFO: rcu_\w+ (self-)?detected stalls?")),
    ("hung task", re.compile(r"INFO: task .* blocked for more than")),
    # x86 kernel IBT: an indirect branch to code without ENDBR (a BUG or a
    # WARN follows; the guest reports a failed boot selftest, report.py).
    ("IBT", re.compile(r"Missing ENDBR: ")),
    # The general forms last: the specific ones above are also BUGs/WARNINGs.
    ("BUG", re.compile(r"\bBUG: |kernel BUG at")),
    ("WARN", re.compile(r"WARNING: CPU: \d+ PID: \d+|------------\[ cut here \]------------")),
]


def scan(text):
    """Return a list of (kind, line) for every sign of trouble in @text."""
    found = []
    for line in text.splitlines():
        for kind, pattern in SIGNS:
            if pattern.search(line):
                found.append((kind, line.strip()))
                break
    return found


def main(argv):
    """python3 -m spec.console LOG: print each sign of trouble in LOG;
    exit 1 if there is any (a snapshot's boot, which no run's report
    reads before its restore)."""
    if len(argv) != 2:
        sys.exit("usage: python3 -m spec.console LOG")
    with open(argv[1], errors="replace") as f:
        found = scan(f.read())
    for kind, line in found:
        print(f"kernel {kind}: {line}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
