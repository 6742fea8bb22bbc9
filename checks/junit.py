# SPDX-License-Identifier: GPL-2.0
"""JUnit XML, which CI systems show natively, beside results.ktap and
results.json.

    python3 -m checks.junit make-test LOGDIR OUTFILE NAME KIND RC [NAME KIND RC ...]

checks/report.py calls run_suites() for one guest run (one <testsuite> per
guest program, one <testcase> per test point); the command line above writes
one file for the whole of `make test` (scripts/test.sh's steps, the same
arguments as checks.summary): a step whose output is a VM run contributes
that run's suites, every other step one testcase.  The counts in the
<testsuite> attributes are those of its testcases, so a reader that sums
them sums what checks/ counted.
"""
import argparse
import os
import sys
import xml.etree.ElementTree as ET

from spec.selection import NOT_SELECTED


def suite(name, cases):
    """A <testsuite> from cases: (classname, name, result, text) with result
    "pass", "fail", "skip" or "xfail" (a known failure: reported skipped)."""
    el = ET.Element("testsuite", name=name)
    counts = {"tests": 0, "failures": 0, "skipped": 0}
    for classname, case_name, result, text in cases:
        tc = ET.SubElement(el, "testcase", name=case_name, classname=classname)
        counts["tests"] += 1
        if result == "fail":
            counts["failures"] += 1
            ET.SubElement(tc, "failure", message=(text or "failed").splitlines()[0][:200]).text = text
        elif result in ("skip", "xfail"):
            counts["skipped"] += 1
            why = text or "skipped"
            ET.SubElement(tc, "skipped", message=(f"known failure: {why}" if result == "xfail" else why))
    for k, v in counts.items():
        el.set(k, str(v))
    el.set("errors", "0")
    return el


def run_suites(arch, emu, programs, run_problems, properties=None):
    """<testsuite> elements for one guest run (checks.report's programs),
    each with @properties (name: value), what the run was of."""
    suites = []
    for prog in programs:
        classname = f"{arch}.{emu}.{prog.name}"
        cases = [(classname, f"{p.number} {p.name}", p.result, p.reason) for p in prog.points]
        if prog.left_out:
            # Never run (TESTS=): one skipped case, as checks.report counts it.
            cases = [(classname, "(program)", "skip", NOT_SELECTED)]
        # What fails a program beyond its points (a crash, a timeout, a bad
        # plan) is one case of its own when no point failed, as
        # checks.report counts it; otherwise it is told in system-err.
        problems = [x for x in prog.problems if not x.startswith("not ok ")]
        if problems and not any(p.result == "fail" for p in prog.points):
            cases.append((classname, "(program)", "fail", "\n".join(problems)))
        for problem, why in prog.xfail:
            if not problem.startswith("not ok "):
                cases.append((classname, "(program)", "xfail", f"{problem}: {why}"))
        el = suite(f"{arch}/{emu} {prog.name}", cases)
        if problems and any(p.result == "fail" for p in prog.points):
            ET.SubElement(el, "system-err").text = "\n".join(problems)
        suites.append(el)
    if run_problems:
        suites.append(suite(f"{arch}/{emu} (run)",
                            [(f"{arch}.{emu}.run", "(vm)", "fail", p) for p in run_problems]))
    for el in suites if properties else ():
        props = ET.Element("properties")
        for name, value in properties.items():
            ET.SubElement(props, "property", name=name, value=str(value))
        el.insert(0, props)
    return suites


def document(suites):
    root = ET.Element("testsuites")
    totals = {"tests": 0, "failures": 0, "skipped": 0, "errors": 0}
    for s in suites:
        root.append(s)
        for k in totals:
            totals[k] += int(s.get(k, 0))
    for k, v in totals.items():
        root.set(k, str(v))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write(path, suites):
    with open(path, "w") as f:
        f.write(document(suites))


def merge(path, files):
    """One document of the suites of several (make fuzz's VMs); a file that
    is missing is a failed case, as checks.report --merge counts it."""
    suites = []
    for f in files:
        try:
            suites.extend(ET.parse(f).getroot().iter("testsuite"))
        except (OSError, ET.ParseError) as e:
            suites.append(suite(os.path.dirname(f), [("run", "(report)", "fail",
                                                      f"no JUnit report: {e}")]))
    write(path, suites)


def make_test_suites(logdir, steps):
    """The steps of make test: (name, kind, rc).  A VM step brings its run's
    own results.junit.xml; any other step is one case, failed with the
    lines of its log that say what failed."""
    from checks import summary

    suites, own = [], []
    for name, kind, rc in steps:
        text = summary.step_log(logdir, name)
        run_file = os.path.join(kind.split(":", 1)[1], "results.junit.xml") \
            if kind.startswith("results:") else None
        if run_file and os.path.exists(run_file):
            for s in ET.parse(run_file).getroot().iter("testsuite"):
                s.set("name", f"{name}: {s.get('name')}")
                suites.append(s)
            if rc == 0:
                continue
        passed, failed, skipped = summary.count_closing_line(text)
        if rc == 0 and skipped and not passed and not failed:
            # A step that checked nothing here, and said why.
            reasons = summary.skip_reasons(text)
            own.append(("make-test", name, "skip",
                        reasons[0][1] if reasons else f"see {name}.log"))
            continue
        result = "pass" if rc == 0 else "fail"
        detail = "\n".join(summary.failure_lines(text)) or f"exit {rc}; see {name}.log"
        own.append(("make-test", name, result, "" if rc == 0 else detail))
    return [suite("make test: steps", own)] + suites


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m checks.junit",
                                 description="JUnit XML for the whole of make test")
    ap.add_argument("command", choices=["make-test"])
    ap.add_argument("logdir")
    ap.add_argument("outfile")
    ap.add_argument("steps", nargs="*", metavar="NAME KIND RC")
    args = ap.parse_args(argv)
    if len(args.steps) % 3:
        ap.error("steps come in threes: NAME KIND RC")
    steps = []
    for i in range(0, len(args.steps), 3):
        name, kind, rc = args.steps[i:i + 3]
        try:
            steps.append((name, kind, int(rc)))
        except ValueError:
            ap.error(f"step {name}: exit status {rc!r} is not a number")
    write(args.outfile, make_test_suites(args.logdir, steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
