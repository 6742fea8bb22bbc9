# SPDX-License-Identifier: GPL-2.0
"""Judge one guest run and report it.

    python3 -m checks.report OUTDIR
    python3 -m checks.report --merge OUTDIR RUNDIR...

OUTDIR holds what scripts/vm/boot.sh left: console.log, guest.out and
vm.json.  Writes OUTDIR/results.ktap (one top-level test per guest program,
its own KTAP nested under it), OUTDIR/results.json and
OUTDIR/results.junit.xml (checks/junit.py), prints a table, and
exits 0 only if the VM powered off by itself, the console is clean, the
guest finished its list and every program passed or skipped with a reason.

--merge sums the results.json of several runs of one job (make fuzz splits
its calls over VMs) into OUTDIR/results.json; a run without one (its VM
never got as far as a report) counts as a failure.
"""
import collections
import json
import os
import signal
import sys

from checks import junit, ktap
from spec import console
from spec.selection import NOT_SELECTED, parse_guest_word

# Our own suite is listed test point by test point; the kernel's selftests
# (many points each) are summarised, with every point that did not pass.
DETAILED = {"shstk_clone3", "smoke", "user"}


KNOWN_FAILURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "guest", "known-failures")


def known_failures(path=KNOWN_FAILURES):
    """{(arch, program, problem): why} from guest/known-failures."""
    known = {}
    try:
        with open(path) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    arch, prog, problem, why = (x.strip() for x in line.split("|", 3))
                    known[(arch, prog, problem)] = why
    except FileNotFoundError:
        pass
    return known


def apply_known(arch, programs, known, emu="qemu", build=""):
    """Move the listed problems of each program to prog.xfail; a listed one
    that did not happen becomes a problem itself (XPASS: update the list).
    An entry's arch is "ARCH" (any emulator), "ARCH/EMU", or "ARCH/EMU/KIND"
    for one kind of build of it: the first word of vm.json's emu_build
    ("stock" or "patched" for QEMU).  A program TESTS= left out, or some
    of whose cases it did, cannot show that a listed problem is gone: no
    XPASS there."""
    kind = (build.split() or [""])[0]
    runs_as = {arch, f"{arch}/{emu}"} | ({f"{arch}/{emu}/{kind}"} if kind else set())
    for prog in programs:
        if prog.left_out:
            continue
        for (k_arch, k_prog, problem), why in known.items():
            if k_arch not in runs_as or k_prog != prog.name:
                continue
            if problem in prog.problems:
                prog.problems.remove(problem)
                prog.xfail.append((problem, why))
                # A listed failing test point no longer counts as a failure.
                for p in prog.points:
                    if problem == f"not ok {p.number} {p.name}":
                        p.result = "xfail"
                        p.reason = why
            elif not prog.cases_left_out:
                prog.problems.append(f"XPASS: listed in guest/known-failures but did not "
                                     f"happen: {problem}")


def load(outdir):
    def read(name):
        try:
            with open(os.path.join(outdir, name), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return None

    vm = json.loads(read("vm.json") or "{}")
    return vm, read("console.log") or "", read("guest.out") or ""


def series_of(vm):
    """What the booted kernel's tree had applied (vm.json, from the tree's
    stamps): {series, series_hash, local_edits}, or {} from an older run."""
    if "series" not in vm:
        return {}
    return {k: vm.get(k) for k in ("series", "series_hash", "local_edits")}


def signal_of(vm):
    """The signal the emulator died of, from its shell exit status, or None."""
    rc = vm.get("exit")
    if isinstance(rc, int) and 128 < rc < 128 + 65 and not vm.get("timeout"):
        return rc - 128
    return None


def died_of(vm):
    sig = signal_of(vm)
    if sig is None:
        return ""
    try:
        return f": killed by {signal.Signals(sig).name}"
    except ValueError:
        return f": killed by signal {sig}"


def emulator_log_tail(outdir, lines=8):
    """The last lines of what the emulator printed (vm/boot.sh adds the host
    kernel's report of a crash there)."""
    try:
        with open(os.path.join(outdir, "emulator.log"), errors="replace") as f:
            return [x.rstrip("\n") for x in f.readlines()[-lines:]]
    except FileNotFoundError:
        return []


def xstate_problems(vm, info):
    """x86: the XSAVE format the kernel chose (the guest reports its
    "x86/fpu: Enabled xstate features" line) against the one the emulator
    declares for its CPU: "compacted" means the kernel uses XSAVES."""
    want = (vm or {}).get("xstate_format")
    if not want or not info:
        return []
    got = info.get("xstate", "").partition(",")[2]
    if not got:
        return [f"the guest did not report the kernel's XSAVE format (declared {want!r})"]
    if got != want:
        return [f"the kernel chose the {got!r} XSAVE format ({info['xstate']}), "
                f"the emulator declares {want!r}"]
    return []


def kernel_ibt_problems(vm, info):
    """x86: whether the kernel runs with indirect branch tracking (the guest
    reports "on" after the kernel's "Indirect Branch Tracking enabled",
    "failed" after its "IBT selftest: Failed!", "off" otherwise) against what
    the emulator declares for its CPU."""
    want = (vm or {}).get("kernel_ibt")
    if not want or not info:
        return []
    got = info.get("kernel_ibt", "off")
    if got == "failed":
        return ["the kernel's IBT boot selftest failed: no #CP at an indirect jump "
                "to an instruction without ENDBR (\"IBT selftest: Failed!\")"]
    if got != want:
        return [f"kernel indirect branch tracking is {got}, the emulator declares {want!r}"]
    return []


def selection_problems(info, programs, done):
    """What the guest ran against what TESTS= chose (its shstk.tests= word,
    which the guest echoes): a program or case it should have run and did
    not, or one it should have left out and ran."""
    word = info.get("tests")
    if not word:
        return [f"the guest left out {p.name}, but no TESTS= chose what runs"
                for p in programs if p.left_out]
    chosen = parse_guest_word(word)
    problems = []
    for p in programs:
        if p.left_out:
            if p.name in chosen:
                problems.append(f"TESTS= chose {p.name}, but the guest left it out")
        elif p.name not in chosen:
            problems.append(f"{p.name} ran, but TESTS= did not choose it")
        elif chosen[p.name] is None and p.cases_left_out:
            problems.append(f"TESTS= chose all of {p.name}, but it left out "
                            f"{len(p.cases_left_out)} cases")
        elif chosen[p.name] and not p.cases_left_out and p.points:
            problems.append(f"TESTS= chose some cases of {p.name}, but it ran every case")
    if done:
        have = {p.name for p in programs}
        problems += [f"TESTS= chose {name}, which the guest does not have"
                     for name in chosen if name not in have]
    if programs and all(p.left_out for p in programs):
        problems.append("TESTS= left every program out")
    return problems


def selection_line(info, programs):
    """What TESTS= left out, for the report's reader, or "" for the whole
    suite: a run with a selection must never read as a whole one."""
    if not info.get("tests"):
        return ""
    left = [p.name for p in programs if p.left_out]
    cases = [f"{len(p.cases_left_out)} of {len(p.points)} cases of {p.name}"
             for p in programs if p.cases_left_out]
    out = [f"{len(left)} of {len(programs)} programs ({', '.join(left)})"] if left else []
    return (f"not the whole suite: TESTS= chose {info['tests']}, and left out "
            f"{'; '.join(out + cases) or 'nothing'}")


def judge_run(vm, console_text, guest_text):
    """Return (info, programs, run_problems) for one run."""
    info, programs, done = ktap.parse(guest_text)
    problems = []
    if not vm:
        problems.append("no vm.json: the emulator never ran to the end")
    elif vm.get("timeout"):
        problems.append(f"the guest hung: killed after the timeout ({vm.get('seconds')} s)")
    elif vm.get("exit") not in (None, vm.get("poweroff_exit", 0)):
        # An emulator may exit non-zero on a power-off (Bochs: 1, on a panic
        # too; the console decides then): vm.json says which status it is.
        problems.append(f"emulator exit status {vm.get('exit')}{died_of(vm)} "
                        f"(a power-off exits {vm.get('poweroff_exit', 0)})")
    for kind, line in console.scan(console_text):
        problems.append(f"kernel {kind}: {line}")
    if vm and not vm.get("timeout") and vm.get("exit") == vm.get("poweroff_exit", 0) and \
            not (console_text or "").strip() and not (guest_text or "").strip():
        # What a reset looks like under QEMU's -no-reboot (and Bochs's
        # reset_on_triple_fault=0): an ordinary exit, nothing printed.
        problems.append(f"the emulator ended after {vm.get('seconds')} s and neither the "
                        f"kernel nor the guest printed anything: a reset before the console "
                        f"came up (a triple fault early in boot ends so)")
    problems += xstate_problems(vm, info)
    problems += kernel_ibt_problems(vm, info)
    problems += selection_problems(info, programs, done)
    if not done:
        problems.append("the guest never reached the end of its test list")
    if not programs:
        problems.append("no guest program ran")
    # Each image lists a program once: one that ran twice means the image
    # was built wrong (two builds writing one list together, say), and its
    # points would count twice.
    runs = collections.Counter(p.name for p in programs)
    problems += [f"{name} ran {n} times: the image's test list names it more than once"
                 for name, n in runs.items() if n > 1]
    return info, programs, problems


def counts(programs, run_problems):
    """(passed, failed, skipped): test points, plus one failure for each
    program or run problem no point shows; known failures count as skipped."""
    passed = failed = skipped = 0
    for prog in programs:
        # A program TESTS= left out is one skip, as its KTAP line says.
        skipped += prog.left_out
        skipped += sum(not x.startswith("not ok ") for x, _ in prog.xfail)
        skipped += sum(p.result == "xfail" for p in prog.points)
        for p in prog.points:
            passed += p.result == "pass"
            failed += p.result == "fail"
            skipped += p.result == "skip"
        # A program can fail with every point fine (crash, timeout, bad plan).
        if prog.verdict == "fail" and not any(p.result == "fail" for p in prog.points):
            failed += 1
    return passed, failed + len(run_problems), skipped


def write_ktap(path, programs):
    with open(path, "w") as f:
        f.write(f"KTAP version 1\n1..{len(programs)}\n")
        for i, prog in enumerate(programs, 1):
            f.write(f"    # Subtest: {prog.name}\n")
            for line in prog.lines:
                f.write(f"    {line}\n")
            status = "not ok" if prog.verdict == "fail" else "ok"
            skip = " # SKIP all test points skipped" if prog.verdict == "skip" else ""
            if prog.left_out:
                skip = f" # SKIP {NOT_SELECTED}"
            f.write(f"{status} {i} {prog.name}{skip}\n")


def table(arch, emu, programs, run_problems):
    rows = []
    for prog in programs:
        if prog.left_out:
            rows.append((prog.name, "(program)", "SKIP", NOT_SELECTED))
            continue
        # The cases TESTS= left out make one row, not one each.
        left_out = prog.cases_left_out
        shown = [p for p in prog.points if p not in left_out]
        if prog.name in DETAILED or prog.verdict == "fail" and not prog.points:
            for p in shown:
                rows.append((prog.name, p.name, p.result.upper(), p.reason))
        else:
            n = {r: sum(p.result == r for p in prog.points) for r in ("pass", "fail", "skip", "xfail")}
            rows.append((prog.name, f"({len(prog.points)} points: {n['pass']} pass, "
                         f"{n['fail']} fail, {n['skip']} skip"
                         f"{', %d xfail' % n['xfail'] if n['xfail'] else ''})",
                         prog.verdict.upper(), ""))
            for p in shown:
                if p.result != "pass":
                    rows.append((prog.name, p.name, p.result.upper(), p.reason))
        if left_out:
            rows.append((prog.name, f"({len(left_out)} cases)", "SKIP", NOT_SELECTED))
        for problem in prog.problems:
            if not problem.startswith("not ok "):
                rows.append((prog.name, "(program)", "FAIL", problem))
        for problem, why in prog.xfail:
            if not problem.startswith("not ok "):     # those have their own row
                rows.append((prog.name, "(program)", "XFAIL", f"{problem}: {why}"))
    for problem in run_problems:
        rows.append(("(run)", "(vm)", "FAIL", problem))
    w_prog = max([len(r[0]) for r in rows] + [7])
    w_case = min(max([len(r[1]) for r in rows] + [4]), 60)
    out = [f"{'arch':<7} {'emu':<5} {'program':<{w_prog}} {'case':<{w_case}} result"]
    for prog, case, result, reason in rows:
        line = f"{arch:<7} {emu:<5} {prog:<{w_prog}} {case:<{w_case}} {result}"
        out.append(line + (f"  ({reason})" if reason else ""))
    return "\n".join(out)


def merge(outdir, rundirs):
    """Write OUTDIR/results.json from the runs' own; returns the failures."""
    total = {"passed": 0, "failed": 0, "skipped": 0, "runs": []}
    for d in rundirs:
        try:
            with open(os.path.join(d, "results.json")) as f:
                r = json.load(f)
        except (OSError, ValueError):
            r = {"passed": 0, "failed": 1, "skipped": 0}
        for k in ("passed", "failed", "skipped"):
            total[k] += r[k]
        total["runs"].append({"dir": d, "passed": r["passed"], "failed": r["failed"],
                              "skipped": r["skipped"]})
    if not rundirs:
        total["failed"] = 1
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(total, f, indent=1)
    junit.merge(os.path.join(outdir, "results.junit.xml"),
                [os.path.join(d, "results.junit.xml") for d in rundirs])
    print(f"{len(rundirs)} run(s): {total['passed']} passed, {total['failed']} failed, "
          f"{total['skipped']} skipped")
    return total["failed"]


def main(argv):
    if len(argv) >= 3 and argv[1] == "--merge":
        return 1 if merge(argv[2], argv[3:]) else 0
    if len(argv) != 2:
        sys.exit("usage: python3 -m checks.report OUTDIR | --merge OUTDIR RUNDIR...")
    outdir = argv[1]
    vm, console_text, guest_text = load(outdir)
    info, programs, run_problems = judge_run(vm, console_text, guest_text)
    arch, emu = vm.get("arch", "?"), vm.get("emu", "?")
    apply_known(arch, programs, known_failures(), emu, vm.get("emu_build") or "")
    passed, failed, skipped = counts(programs, run_problems)
    write_ktap(os.path.join(outdir, "results.ktap"), programs)
    junit.write(os.path.join(outdir, "results.junit.xml"),
                junit.run_suites(arch, emu, programs, run_problems, series_of(vm)))
    selection = None
    if info.get("tests"):
        selection = {"tests": info["tests"],
                     "programs_left_out": [p.name for p in programs if p.left_out],
                     "cases_left_out": {p.name: [x.name for x in p.cases_left_out]
                                        for p in programs if p.cases_left_out}}
    result = {
        "arch": arch, "emu": emu, "guest": info, "vm": vm, **series_of(vm),
        "passed": passed, "failed": failed, "skipped": skipped,
        "selection": selection,
        "run_problems": run_problems,
        "programs": [{
            "name": p.name, "rc": p.rc, "plan": p.plan, "verdict": p.verdict,
            "problems": p.problems, "metrics": p.metrics,
            "known_failures": [{"problem": x, "why": w} for x, w in p.xfail],
            "points": [vars(pt) for pt in p.points],
        } for p in programs],
    }
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
    if info:
        xstate = f", FPU state {info['xstate']}" if "xstate" in info else ""
        ibt = f", kernel IBT {info['kernel_ibt']}" if "kernel_ibt" in info else ""
        print(f"guest: kernel {info.get('kernel', '?')} on {info.get('arch', '?')}, "
              f"cpu shadow stack: {info.get('cpu_shstk', '?')}{xstate}{ibt}")
    series = series_of(vm)
    if series:
        edits = " + local changes" if series["local_edits"] else ""
        print(f"series: {series['series']}, hash {series['series_hash']}{edits}")
    print(table(arch, emu, programs, run_problems))
    if signal_of(vm) is not None:
        print(f"the emulator died{died_of(vm)}; the end of {outdir}/emulator.log:")
        for line in emulator_log_tail(outdir):
            print(f"    {line}")
    for prog in programs:
        for k, v in prog.metrics.items():
            print(f"{arch} metric {prog.name}.{k} = {v}")
    chosen = selection_line(info, programs)
    if chosen:
        print(f"{arch}/{emu}: {chosen}")
    print(f"{arch}/{emu}: {passed} passed, {failed} failed, {skipped} skipped "
          f"(vm {vm.get('seconds', '?')} s{'; chosen by TESTS=' if chosen else ''}; "
          f"logs in {outdir})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
