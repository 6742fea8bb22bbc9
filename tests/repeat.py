# SPDX-License-Identifier: GPL-2.0
"""Run each test of a module N times in a row and count the passes: the
way to show that a test that boots VMs is deterministic, not lucky.

    python3 -m tests.repeat [-n 20] [-k SUBSTRING] [--log FILE] [MODULE]

MODULE defaults to tests.vm_harness.  Prints one line per run and a table
of passes per test; exits non-zero unless every run of every test passed.
A failed run's message goes to the log (default out/repeat.log).
"""
import argparse
import os
import sys
import time
import unittest

from tests.test_harness import TOP


def test_ids(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from test_ids(t)
        else:
            yield t.id()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("module", nargs="?", default="tests.vm_harness")
    ap.add_argument("-n", "--runs", type=int, default=20, help="runs per test (default 20)")
    ap.add_argument("-k", dest="match", default="", help="only tests whose name has this")
    ap.add_argument("--log", default=os.path.join(TOP, "out", "repeat.log"))
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")

    loader = unittest.TestLoader()
    ids = [i for i in test_ids(loader.loadTestsFromName(args.module)) if args.match in i]
    if not ids:
        ap.error(f"no test in {args.module} matches '{args.match}'")
    os.makedirs(os.path.dirname(args.log), exist_ok=True)
    table = []
    with open(args.log, "w") as log:
        for tid in ids:
            counts = {"passed": 0, "failed": 0, "skipped": 0}
            times = []
            for n in range(1, args.runs + 1):
                result = unittest.TestResult()
                t0 = time.monotonic()
                loader.loadTestsFromName(tid).run(result)
                times.append(time.monotonic() - t0)
                problems = result.failures + result.errors
                verdict = "failed" if problems else "skipped" if result.skipped else "passed"
                counts[verdict] += 1
                print(f"{tid.rsplit('.', 1)[-1]} run {n}/{args.runs}: {verdict} in {times[-1]:.1f} s",
                      flush=True)
                for _, text in problems:
                    log.write(f"== {tid} run {n}\n{text}\n")
                for _, why in result.skipped:
                    log.write(f"== {tid} run {n}: skipped: {why}\n")
                log.flush()
            table.append((tid.rsplit(".", 1)[-1], counts, min(times), max(times)))
    width = max(len(name) for name, *_ in table)
    print(f"\n{'test':{width}}  passed  failed  skipped  seconds (min-max)")
    for name, c, lo, hi in table:
        print(f"{name:{width}}  {c['passed']:>3}/{args.runs:<3} {c['failed']:>5}  {c['skipped']:>7}"
              f"  {lo:.1f}-{hi:.1f}")
    ok = all(c["passed"] == args.runs for _, c, *_ in table)
    print(f"every test passed {args.runs} of {args.runs}" if ok else f"not every run passed; see {args.log}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
