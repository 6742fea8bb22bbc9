# SPDX-License-Identifier: GPL-2.0
"""make gdb-check's stops (gdb/check_clone3.py): at each, what the kernel
and the program hold, read by name and checked against spec/scenario.py,
one step log line per check.

One handler per stop, HANDLERS[name](run, case), returning whether its
checks held; Run is what they share (the log, the stops, the caller's
shadow stack state once step 0 has read it), Case what one clone3() call's
stops have read so far.
"""
import os
import re
import struct
import time

import gdb

from spec import scenario
from shstk import archops, coredump, decode, ssp, stepcheck, tasks, usermem, utils, vmas
from shstk.commands import token_check, token_field

PROG_COMM = "shstk_gdb"
# The context view is drawn at every stop of make debug: it has to be quick
# (0.5 s is the goal under QEMU; this bound only catches a slow one).
CONTEXT_SECONDS = 2.0
# struct clone_args: the token is the u64 at offset 88 (VER3).
TOKEN_OFFSET = 88
HEX = {"token", "token_word", "ssp", "word_before", "word_after", "expected_word",
       "helper_word", "drgn_word"}
# The verdict of a step whose readings checks/oracle.py compares: gdb/
# reads, checks/ judges.
PENDING = "pending"


class Run:
    """One gdb-check run: the step log (a file), the emulator, the
    program's stops, and the caller's shadow stack state once step 0 has
    read it."""

    def __init__(self, f, arch, emu, breakpoints="hardware"):
        # breakpoints: how the emulator's gdbstub must break on user code,
        # as its backend declares it (scripts/vm/emulators/, scripts/lib/entry.sh
        # shstk_export_gdb_env): "hardware", or "software-by-address".
        self.arch, self.emu, self.breakpoints = arch, emu, breakpoints
        self.log = stepcheck.StepLog(f, "[gdb-check]", HEX)
        self.stops = stepcheck.Stops(PROG_COMM, self.log.say, round_start="entry")
        self.shstk_on = None
        self.why = None

    def _write(self, step, case, location, expectation, verdict, facts, say):
        self.log.write(dict({"step": step, "case": case, "location": location,
                             "expectation": expectation, "verdict": verdict}, **facts),
                       f"{say} {case}: {step}: {expectation}")

    def record(self, step, case, location, expectation, ok, **facts):
        self._write(step, case, location, expectation, "pass" if ok else "fail", facts,
                    "PASS" if ok else "FAIL")
        return ok

    def skip(self, step, case, location, expectation, reason, **facts):
        """A step that was not exercised, and why: neither a pass nor a failure."""
        self._write(step, case, location, expectation, "skip", dict(reason=reason, **facts),
                    "SKIP")
        return True

    def pending(self, step, case, location, expectation, judge, **facts):
        """A step whose readings @judge (a file of checks/) compares."""
        self._write(step, case, location, expectation, PENDING, facts,
                    f"READ (judged by {judge})")
        return True


class Case:
    """One clone3() call being followed: what its stops have read so far."""

    def __init__(self, name):
        self.name = name
        self.seen = []
        self.token = 0
        self.alloc_task = None
        self.mm = None
        self.word_before = None

    def done(self, run):
        need_child = scenario.stage(self.name, run.shstk_on) == "accepted"
        return "parent" in self.seen and (not need_child or "child" in self.seen)


def debug_verdict(stage):
    """What shstk-clone-args's verdict (decode.clone3_verdict) says at
    @stage of the kernel's checks: make debug must tell the user what the
    kernel does."""
    return {"accepted": "clone3(): accepted",
            "caller": "EINVAL in copy_thread()",
            "vma": "EFAULT in shstk_validate_clone()",
            "token": f"EINVAL in {token_check().function}()"}[stage]


def ss_vmas(task):
    return [f"{d['start']:#x}-{d['end']:#x}" for d in map(vmas.describe, vmas.vmas(task))
            if d["shadow_stack"]]


def on_entry(run, case):
    """Step 0 at the first call, then step 1: clone_args as the caller
    passed them, read from its memory."""
    task = tasks.on_cpu()
    ok = True
    if run.shstk_on is None:
        ok &= check_scenario(run, case.name, task)
    ops = archops.ops()
    uargs, size = ops.syscall_args()
    mm = usermem.task_mm(task)
    raw = usermem.read_bytes(mm, uargs, size) if 0 < size <= 4096 else None
    token = struct.unpack_from("<Q", raw, TOKEN_OFFSET)[0] if raw and size >= 96 else 0
    case.token = token
    word = usermem.read_u64(mm, token & ~7) if token else None
    v = vmas.find(task, token) if token else None
    in_ss = bool(v and vmas.describe(v)["shadow_stack"])
    valid, why = decode.token_verdict(run.arch, token, word)
    if scenario.stage(case.name, run.shstk_on) == "accepted":
        expect, good = "the token lies in a shadow stack VMA and holds a valid token", \
            in_ss and valid
    else:
        expect, good = "clone_args read from the caller's memory", raw is not None
    return ok & run.record(scenario.STEP_ENTRY, case.name, ops.clone3_entry, expect, good,
                           pid=int(task["pid"]), token=token, token_word=word or 0, detail=why,
                           in_shadow_stack_vma=in_ss, shadow_stack_vmas=ss_vmas(task),
                           struct_size=size)


def check_scenario(run, case, task):
    """Step 0: the program's shadow stack state is what this emulator and CPU
    are declared to provide (scripts/vm/emulators/ puts shstk.why= on the
    kernel command line where they have none), and what the kernel found on
    the CPU."""
    addr = int(gdb.parse_and_eval("(unsigned long)&shstk_enabled"))
    raw = usermem.read_bytes(usermem.task_mm(task), addr, 1)
    run.shstk_on = program_on = bool(raw and raw[0])
    declared_on, run.why = scenario.declared_shadow_stack(tasks.kernel_cmdline())
    try:
        cpu_on = tasks.cpu_has_shadow_stack()
    except gdb.error as e:
        run.log.say(f"could not read the kernel's CPU features: {e}")
        cpu_on = None
    good, expect, problems = scenario.scenario_check(program_on, declared_on, cpu_on, run.why)
    return run.record(scenario.STEP_SCENARIO, case, PROG_COMM, expect, good,
                      shadow_stack_enabled=program_on, declared=declared_on,
                      cpu_shadow_stack=cpu_on, reason=run.why, problems=problems)


def on_alloc(run, case):
    """The arch copy_thread hook's entry: make debug's commands here."""
    stepcheck.ReturnStop(run.stops, "alloc_ret", utils.caller_frame())
    case.alloc_task = archops.first_arg().dereference()
    return check_commands(run, case)


def check_commands(run, case):
    """make debug's own commands, run at the same stop: what they print must
    agree with what this script read (they share the readers, not the
    formatting, and nothing else runs them unattended)."""
    out = gdb.execute("shstk-clone-args", to_string=True)
    accepted = scenario.stage(case.name, run.shstk_on) == "accepted"
    want = [f"{token_field()} {case.token:#x}",
            debug_verdict(scenario.stage(case.name, run.shstk_on))]
    if accepted:
        want += ["valid token", "in a shadow stack VMA"]
        out += gdb.execute("shstk-vmas", to_string=True)
        want.append("<- shadow stack")
    missing = [w for w in want if w not in out]
    view = gdb.execute("shstk-context", to_string=True)
    problems, seconds = context_problems(view, f"{token_field()} {case.token:#x}", accepted)
    missing += problems
    return run.record(scenario.STEP_COMMANDS, case.name,
                      "shstk-clone-args, shstk-token, shstk-vmas, shstk-context",
                      "the commands decode the same token: " + "; ".join(want) +
                      "; the context view shows it, every read done", not missing,
                      missing=missing, context_seconds=seconds,
                      output=(out + view).strip().splitlines())


def context_problems(view, token_line, accepted):
    """What is wrong with make debug's context view at a copy_thread stop:
    it must show @token_line ("shstk_token 0x...") and the verdict, have
    done every read (a failed one is a line "  SECTION: cannot read WHAT:
    WHY"), and be quick (its own timing, in its footer).
    (problems, seconds)."""
    verdict = "accepted" if accepted else "refused"
    problems = [w for w in (token_line, f"clone3(): {verdict}")
                if w not in view]
    problems += [f"no failed read: {line.strip()}" for line in view.splitlines()
                 if re.match(r"\s+[a-z]+: cannot read ", line) or "internal error" in line]
    m = re.search(r"\(([0-9.]+) s; shstk-context off", view)
    seconds = float(m.group(1)) if m else None
    if seconds is None or seconds > CONTEXT_SECONDS:
        problems.append(f"the view in at most {CONTEXT_SECONDS} s (took {seconds})")
    return problems, seconds


def on_alloc_ret(run, case):
    """Step 2: what the arch copy_thread hook returned.
    gcs_alloc_thread_stack() returns int, shstk_alloc_thread_stack()
    unsigned long (an address, or an error as a negative value)."""
    ops = archops.ops()
    ret = ops.returned(ops.shstk_alloc_bits)
    token, facts = case.token, {}
    if scenario.stage(case.name, run.shstk_on) == "caller":
        expect = "refuses the token: the caller has no shadow stack (-EINVAL)"
        good = ret == -scenario.EINVAL
    else:
        expect, good, facts = ops.alloc_result(ret, case.alloc_task, token)
    return run.record(scenario.STEP_ALLOC, case.name, ops.shstk_alloc, expect, good,
                      ret=ret, token=token, **facts)


def on_validate(run, case):
    """Step 3a: the word before the kernel's token check looks at it (the
    check's hook, where the architecture has one: commands.TokenCheck)."""
    check = token_check()
    stepcheck.ReturnStop(run.stops, "validate_ret",
                         utils.caller_frame(check.verdict_callers, check.function))
    if check.value_hook:
        # The hook's one argument is the token's address: this case's, or
        # this stop is not its call.  The task is copy_thread's.
        at = int(archops.first_arg()) & utils.U64
        if at != case.token:
            raise gdb.GdbError(f"{check.value_hook}() was called for {at:#x}, "
                               f"not this call's token {case.token:#x}")
        vtask = case.alloc_task
        if vtask is None:
            raise gdb.GdbError("no copy_thread stop came before the token check")
    else:
        vtask = archops.first_arg().dereference()
    case.mm = usermem.task_mm(vtask)
    case.word_before = usermem.read_u64(case.mm, case.token)
    if scenario.stage(case.name, run.shstk_on) != "accepted":
        return True
    expected = decode.expected_token(run.arch, case.token)
    ok = run.record(scenario.STEP_BEFORE, case.name, check.stop,
                    "the word in the child's mm is the valid token",
                    case.word_before == expected, token=case.token,
                    word_before=case.word_before, expected_word=expected,
                    new_pid=int(vtask["pid"]))
    return ok & check_oracle(run, case, vtask)


def check_oracle(run, case, vtask):
    """Step 3c: drgn's reading of a dump of the guest taken at this stop
    (coredump.py) beside the helpers' shadow stack VMAs and token word,
    for checks/oracle.py to compare.  The dump is kept only when the two
    readings differ."""
    expect = "drgn, from a dump of the guest at this stop, reads the helpers' " \
        "shadow stack VMAs and token word"
    qmp_path = os.environ.get("SHSTK_QMP")
    if not qmp_path:
        return run.skip(scenario.STEP_ORACLE, case.name, "drgn", expect,
                        f"{run.emu} has no QMP to dump the guest's memory with")
    helper_vmas = ss_vmas(vtask)
    core = os.path.join(os.path.dirname(os.environ["SHSTK_STEPS"]), "vmcore")
    t0 = time.monotonic()
    try:
        got = coredump.read(qmp_path, core, os.environ["SHSTK_VMLINUX"], int(case.mm),
                            case.token, vmas.shadow_stack_bit(), archops.ops().direct_maps)
    except ImportError as e:
        return run.record(scenario.STEP_ORACLE, case.name, "drgn", expect, False,
                          error=f"no drgn in gdb's Python (the toolbox's python3-drgn): {e}")
    except coredump.Unreadable as e:
        return run.record(scenario.STEP_ORACLE, case.name, "drgn", expect, False,
                          error=str(e), core=core)
    drgn_word = got["drgn_word"]
    differ = helper_vmas != got["drgn_vmas"] or drgn_word not in (None, case.word_before)
    if not differ:
        _remove(core)
    if got["no_word"]:
        # drgn reads a user address through the mm's page tables, which it
        # walks only on the architectures it has page table code for: the
        # VMAs are still checked, and the step says the word is not.
        expect = "drgn, from a dump of the guest at this stop, reads the helpers' " \
            f"shadow stack VMAs (not the token word: {got['no_word']})"
    return run.pending(scenario.STEP_ORACLE, case.name, "drgn", expect, "checks/oracle.py",
                       helper_vmas=helper_vmas, drgn_vmas=got["drgn_vmas"],
                       helper_word=case.word_before, drgn_word=drgn_word,
                       token=case.token,
                       token_word=drgn_word if drgn_word is not None else "not read",
                       dump_seconds=round(got["dump_seconds"], 2),
                       seconds=round(time.monotonic() - t0, 2),
                       core=core if differ else None)


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def on_validate_ret(run, case):
    """Step 3b (consumed) or 6 (refused, the word unchanged)."""
    function = token_check().function
    ret = archops.ops().returned(32)      # the check's int
    after = usermem.read_u64(case.mm, case.token)
    facts = {"ret": ret, "token": case.token, "word_before": case.word_before,
             "word_after": after}
    if scenario.stage(case.name, run.shstk_on) == "accepted":
        # make debug's view after "finish" must call it this call's
        # consumption, not a zero it would refuse.
        view = gdb.execute("shstk-context", to_string=True)
        facts["view_says_consumed"] = "clone3(): accepted: consumed by this clone3()" in view
        return run.record(scenario.STEP_AFTER, case.name, function,
                          "returns 0, the word is now 0 (consumed), and the context view says so",
                          ret == 0 and after == 0 and facts["view_says_consumed"], **facts)
    return run.record(scenario.STEP_REFUSAL, case.name, function,
                      "refuses a word that is not the token: -EINVAL, word unchanged",
                      ret == -scenario.EINVAL and after == case.word_before, **facts)


def on_newtask(run, case):
    """Step 4: the new task's saved shadow stack pointer."""
    new = gdb.parse_and_eval("p").dereference()
    value, source = ssp.ssp(new)
    return run.record(scenario.STEP_NEWTASK, case.name, "wake_up_new_task",
                      "the new task's saved shadow stack pointer is token + 8",
                      value == case.token + 8, new_pid=int(new["pid"]), ssp=value or 0,
                      token=case.token, source=source, shadow_stack_vmas=ss_vmas(new))


def on_child(run, case):
    """Step 5: the child's live shadow stack pointer, where the gdbstub
    shows one; a skip, with the reason, where it does not."""
    try:
        pid = int(tasks.on_cpu()["pid"])
    except gdb.error:
        pid = None   # user mode on riscv: see ArchOps.address_space()
    name = ssp.live_register()
    where = "shstk_child_entry"
    ops = archops.ops()
    if name is None:
        return run.skip(scenario.STEP_CHILD, case.name, where,
                        "the live shadow stack pointer is token + 8",
                        f"the {run.emu} gdbstub shows no shadow stack pointer register "
                        f"({ops.ssp_register}); step 4 checked "
                        f"the saved one", pid=pid, token=case.token)
    live = ops.reg(name) & utils.U64
    return run.record(scenario.STEP_CHILD, case.name, where, f"the live {name} is token + 8",
                      live == case.token + 8, pid=pid, ssp=live, token=case.token)


def on_parent(run, case):
    """What the caller gets back from clone3()."""
    ops = archops.ops()
    ret = ops.reg(ops.return_register)
    want = scenario.want_ret(case.name, run.shstk_on)
    good = ret > 0 if want == 0 else ret == want
    step = scenario.STEP_RETURNS if want == 0 else scenario.STEP_REFUSAL_RET
    return run.record(step, case.name, "shstk_parent_return",
                      f"the caller gets {'the child pid' if want == 0 else want}", good, ret=ret)


def on_lost(run, case, hit):
    return run.record("internal", case.name, hit, "the function returned where gdb saw it", False)


HANDLERS = {"entry": on_entry, "alloc": on_alloc, "alloc_ret": on_alloc_ret,
            "validate": on_validate, "validate_ret": on_validate_ret, "newtask": on_newtask,
            "child": on_child, "parent": on_parent}
