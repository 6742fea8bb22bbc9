# SPDX-License-Identifier: GPL-2.0
"""make gdb-check: a scripted, checked step-through of clone3() with a user
shadow stack, run by gdb in batch mode against the emulator's gdbstub.

The guest runs guest/shstk_gdb.c, whose clone3() calls spec/scenario.py
describes (the cases, their order, where the kernel stops each and what it
returns).  At every stop one handler reads the kernel's and the program's
state by name, checks it against the scenario, and appends one JSON line to
the step log; scripts/gdb-check.sh and checks/gdbsteps.py judge the log.

Configuration comes from the environment (set by scripts/gdb-check.sh):
see shstk/session.py, SHSTK_EMU and SHSTK_EMU_BREAKPOINTS (scripts/lib/vm.sh export_gdb_env), and
SHSTK_STEPS, the JSON-lines step log.
Importing this file does nothing; gdb runs it as a script (main()).
"""
import json
import os
import re
import struct
import sys
import time

import gdb

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
# The VM layer's QMP client, for the dump drgn reads.
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts", "vm"))
from spec import scenario  # noqa: E402

PROG_COMM = "shstk_gdb"
# The context view is drawn at every stop of make debug: it has to be quick
# (0.5 s is the goal under QEMU; this bound only catches a slow one).
CONTEXT_SECONDS = 2.0
# struct clone_args: the token is the u64 at offset 88 (VER3).
TOKEN_OFFSET = 88
HEX = {"token", "token_word", "ssp", "word_before", "word_after", "expected_word"}


def debug_verdict(stage):
    """What shstk-clone-args's verdict (decode.clone3_verdict) says at
    @stage of the kernel's checks: make debug must tell the user what the
    kernel does."""
    from shstk.commands import token_check
    return {"accepted": "clone3(): accepted",
            "caller": "EINVAL in copy_thread()",
            "vma": "EFAULT in shstk_validate_clone()",
            "token": f"EINVAL in {token_check().function}()"}[stage]


def helpers():
    """gdb/shstk's modules, importable only once the kernel's scripts are
    loaded (session.attach())."""
    from shstk import decode, ssp, tasks, usermem, vmas
    return decode, ssp, tasks, usermem, vmas


def ops():
    """The target's ArchOps (gdb/shstk/archops.py): its registers, function
    names and what its copy_thread hook returns."""
    from shstk import archops
    return archops.ops()


class Run:
    """One gdb-check run: the step log, the emulator, the stops that hit,
    and the caller's shadow stack state once step 0 has read it."""

    def __init__(self, log, arch, emu, breakpoints="hardware"):
        # breakpoints: how the emulator's gdbstub must break on user code,
        # as its backend declares it (scripts/vm/emulators/, scripts/lib/vm.sh
        # export_gdb_env): "hardware", or "software-by-address".
        self.log, self.arch, self.emu, self.breakpoints = log, arch, emu, breakpoints
        self.hits = []
        # The stops counted, for next_stop() to tell one reported again:
        # the last, and every one since the last clone3() entry.
        self.last_stop = None
        self.since_entry = set()
        _, _, tasks, _, _ = helpers()
        self.program = tasks.ProgramStops(PROG_COMM)
        self.shstk_on = None
        self.why = None

    def _write(self, entry, facts):
        entry.update({k: (f"{v:#x}" if isinstance(v, int) and k in HEX else v)
                      for k, v in facts.items()})
        self.log.write(json.dumps(entry) + "\n")
        self.log.flush()

    def record(self, step, case, location, expectation, ok, **facts):
        self._write({"step": step, "case": case, "location": location,
                     "expectation": expectation, "verdict": "pass" if ok else "fail"}, facts)
        gdb.write(f"[gdb-check] {'PASS' if ok else 'FAIL'} {case}: {step}: {expectation}\n")
        return ok

    def skip(self, step, case, location, expectation, reason, **facts):
        """A step that was not exercised, and why: neither a pass nor a failure."""
        self._write({"step": step, "case": case, "location": location,
                     "expectation": expectation, "verdict": "skip", "reason": reason}, facts)
        gdb.write(f"[gdb-check] SKIP {case}: {step}: {expectation}: {reason}\n")
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


def first_arg():
    """The first argument of the hook gdb stopped in (the new task)."""
    from shstk import archops
    return archops.first_arg()


def ss_vmas(task):
    _, _, _, _, vmas = helpers()
    return [f"{d['start']:#x}-{d['end']:#x}" for d in map(vmas.describe, vmas.vmas(task))
            if d["shadow_stack"]]


# One handler per stop: (run, case) -> whether its checks held.

def on_entry(run, case):
    """Step 0 at the first call, then step 1: clone_args as the caller
    passed them, read from its memory."""
    decode, _, tasks, usermem, vmas = helpers()
    task = tasks.on_cpu()
    ok = True
    if run.shstk_on is None:
        ok &= check_scenario(run, case.name, task)
    uargs, size = ops().syscall_args()
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
    return ok & run.record(scenario.STEP_ENTRY, case.name, ops().clone3_entry, expect, good,
                           pid=int(task["pid"]), token=token, token_word=word or 0, detail=why,
                           in_shadow_stack_vma=in_ss, shadow_stack_vmas=ss_vmas(task),
                           struct_size=size)


def check_scenario(run, case, task):
    """Step 0: the program's shadow stack state is what this emulator and CPU
    are declared to provide (scripts/vm/emulators/ puts shstk.why= on the
    kernel command line where they have none), and what the kernel found on
    the CPU."""
    _, _, tasks, usermem, _ = helpers()
    addr = int(gdb.parse_and_eval("(unsigned long)&shstk_enabled"))
    raw = usermem.read_bytes(usermem.task_mm(task), addr, 1)
    run.shstk_on = program_on = bool(raw and raw[0])
    declared_on, run.why = scenario.declared_shadow_stack(tasks.kernel_cmdline())
    try:
        cpu_on = tasks.cpu_has_shadow_stack()
    except gdb.error as e:
        gdb.write(f"[gdb-check] could not read the kernel's CPU features: {e}\n")
        cpu_on = None
    good, expect, problems = scenario.scenario_check(program_on, declared_on, cpu_on, run.why)
    return run.record(scenario.STEP_SCENARIO, case, PROG_COMM, expect, good,
                      shadow_stack_enabled=program_on, declared=declared_on,
                      cpu_shadow_stack=cpu_on, reason=run.why, problems=problems)


def on_alloc(run, case):
    """The arch copy_thread hook's entry: make debug's commands here."""
    Return(run, "alloc_ret")
    case.alloc_task = first_arg().dereference()
    return check_commands(run, case)


def check_commands(run, case):
    """make debug's own commands, run at the same stop: what they print must
    agree with what this script read (they share the readers, not the
    formatting, and nothing else runs them unattended)."""
    from shstk.commands import token_field
    out = gdb.execute("shstk-clone-args", to_string=True)
    want = [f"{token_field()} {case.token:#x}",
            debug_verdict(scenario.stage(case.name, run.shstk_on))]
    if scenario.stage(case.name, run.shstk_on) == "accepted":
        want += ["valid token", "in a shadow stack VMA"]
        out += gdb.execute("shstk-vmas", to_string=True)
        want.append("<- shadow stack")
    missing = [w for w in want if w not in out]
    view = gdb.execute("shstk-context", to_string=True)
    accepted = scenario.stage(case.name, run.shstk_on) == "accepted"
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
    it must show @token_line ("shstk_token 0x...") and the verdict, have done every read (a failed one
    is a line "  SECTION: cannot read WHAT: WHY"), and be quick (its own
    timing, in its footer).  (problems, seconds)."""
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
    arch = ops()
    ret = arch.returned(arch.shstk_alloc_bits)
    token, facts = case.token, {}
    if scenario.stage(case.name, run.shstk_on) == "caller":
        expect = "refuses the token: the caller has no shadow stack (-EINVAL)"
        good = ret == -scenario.EINVAL
    else:
        expect, good, facts = arch.alloc_result(ret, case.alloc_task, token)
    return run.record(scenario.STEP_ALLOC, case.name, arch.shstk_alloc, expect, good,
                      ret=ret, token=token, **facts)


def on_validate(run, case):
    """Step 3a: the word before the kernel's token check looks at it (the
    check's hook, where the architecture has one: commands.TokenCheck)."""
    from shstk.commands import token_check
    decode, _, _, usermem, _ = helpers()
    check = token_check()
    Return(run, "validate_ret", callers=check.verdict_callers, function=check.function)
    if check.value_hook:
        # The hook's one argument is the token's address: this case's, or
        # this stop is not its call.  The task is copy_thread's.
        at = int(first_arg()) & (2**64 - 1)
        if at != case.token:
            raise gdb.GdbError(f"{check.value_hook}() was called for {at:#x}, "
                               f"not this call's token {case.token:#x}")
        vtask = case.alloc_task
        if vtask is None:
            raise gdb.GdbError("no copy_thread stop came before the token check")
    else:
        vtask = first_arg().dereference()
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
    """Step 3c: drgn, reading a dump of the guest taken at this stop, finds
    the shadow stack VMAs and the token word the helpers read
    (checks/oracle.py).  The dump is kept only when they disagree."""
    from checks import oracle
    import qmp
    from shstk import vmas
    expect = "drgn, from a dump of the guest at this stop, reads the helpers' " \
        "shadow stack VMAs and token word"
    qmp_path = os.environ.get("SHSTK_QMP")
    if not qmp_path:
        return run.skip(scenario.STEP_ORACLE, case.name, "drgn", expect,
                        f"{run.emu} has no QMP to dump the guest's memory with")
    try:
        import drgn
    except ImportError as e:
        return run.record(scenario.STEP_ORACLE, case.name, "drgn", expect, False,
                          error=f"no drgn in gdb's Python (the toolbox's python3-drgn): {e}")
    helper_vmas = ss_vmas(vtask)
    core = os.path.join(os.path.dirname(os.environ["SHSTK_STEPS"]), "vmcore")
    t0 = time.monotonic()
    try:
        qmp.dump_guest_memory(qmp_path, core)
        dumped = time.monotonic() - t0
        drgn_vmas, drgn_word, no_word = oracle.read_with_drgn(
            core, os.environ["SHSTK_VMLINUX"], int(case.mm), case.token,
            vmas.shadow_stack_bit())
    except (OSError, qmp.QMPError, drgn.FaultError, drgn.MissingDebugInfoError,
            ValueError, LookupError) as e:
        return run.record(scenario.STEP_ORACLE, case.name, "drgn", expect, False,
                          error=f"{type(e).__name__}: {e}", core=core)
    problems = oracle.compare(helper_vmas, case.word_before, drgn_vmas, drgn_word)
    if not problems:
        _remove(core)
    if no_word:
        # drgn reads a user address through the mm's page tables, which it
        # walks only on the architectures it has page table code for: the
        # VMAs are still checked, and the step says the word is not.
        expect = "drgn, from a dump of the guest at this stop, reads the helpers' " \
            f"shadow stack VMAs (not the token word: {no_word})"
    return run.record(scenario.STEP_ORACLE, case.name, "drgn", expect, not problems,
                      problems=problems, helper_vmas=helper_vmas, drgn_vmas=drgn_vmas,
                      token=case.token, token_word=drgn_word if drgn_word is not None else "not read",
                      dump_seconds=round(dumped, 2),
                      seconds=round(time.monotonic() - t0, 2),
                      core=core if problems else None)


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def on_validate_ret(run, case):
    """Step 3b (consumed) or 6 (refused, the word unchanged)."""
    from shstk.commands import token_check
    _, _, _, usermem, _ = helpers()
    function = token_check().function
    ret = ops().returned(32)      # the check's int
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
    _, ssp, _, _, _ = helpers()
    new = gdb.parse_and_eval("p").dereference()
    value, source = ssp.ssp(new)
    return run.record(scenario.STEP_NEWTASK, case.name, "wake_up_new_task",
                      "the new task's saved shadow stack pointer is token + 8",
                      value == case.token + 8, new_pid=int(new["pid"]), ssp=value or 0,
                      token=case.token, source=source, shadow_stack_vmas=ss_vmas(new))


def on_child(run, case):
    """Step 5: the child's live shadow stack pointer, where the gdbstub
    shows one; a skip, with the reason, where it does not."""
    decode, ssp, tasks, _, _ = helpers()
    try:
        pid = int(tasks.on_cpu()["pid"])
    except gdb.error:
        pid = None   # user mode on riscv: see ArchOps.address_space()
    name = ssp.live_register()
    where = "shstk_child_entry"
    if name is None:
        return run.skip(scenario.STEP_CHILD, case.name, where,
                        "the live shadow stack pointer is token + 8",
                        f"the {run.emu} gdbstub shows no shadow stack pointer register "
                        f"({ops().ssp_register}); step 4 checked "
                        f"the saved one", pid=pid, token=case.token)
    live = ops().reg(name) & (2**64 - 1)
    return run.record(scenario.STEP_CHILD, case.name, where, f"the live {name} is token + 8",
                      live == case.token + 8, pid=pid, ssp=live, token=case.token)


def on_parent(run, case):
    """What the caller gets back from clone3()."""
    ret = ops().reg(ops().return_register)
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


class Stop(gdb.Breakpoint):
    """A breakpoint that stops only for the guest program and says it hit."""

    def __init__(self, run, name, spec, hardware=False):
        kind = gdb.BP_HARDWARE_BREAKPOINT if hardware else gdb.BP_BREAKPOINT
        super().__init__(spec, type=kind, internal=True)
        self.run, self.name = run, name
        from shstk import archops
        archops.keep_described_locations(self)
        archops.keep_entry_locations(self)

    def stop(self):
        ours = self.run.program.ours()
        if ours is None:
            # Say so: a stop skipped here shows up later as a missing step.
            gdb.write("[gdb-check] could not tell whose stop this is: the task on the CPU "
                      "cannot be read, and no address space of the program's to match\n")
            return False
        if ours:
            self.run.hits.append(self.name)
        return ours


class Return(gdb.FinishBreakpoint):
    """The return of the function in the newest frame, or of its caller
    @callers frames up, which must be @function where given; goes once it
    hit."""

    def __init__(self, run, name, callers=0, function=None):
        frame = gdb.newest_frame()
        for _ in range(callers):
            frame = frame.older()
        if function is not None and (frame is None or frame.type() == gdb.INLINE_FRAME
                                     or frame.name() != function):
            got = "no frame" if frame is None else f"{frame.name()}()"
            raise gdb.GdbError(f"{callers} frame(s) up from this stop is {got}, not an "
                               f"out-of-line {function}(): its return is not the verdict")
        super().__init__(frame, internal=True)
        self.run, self.name = run, name

    def stop(self):
        self.run.hits.append(self.name)
        return True

    def out_of_scope(self):
        self.run.hits.append(self.name + ":lost")


def system_map(vmlinux):
    """{name: address} of the functions in the kernel's System.map."""
    with open(os.path.join(os.path.dirname(vmlinux), "System.map")) as f:
        return {name: int(addr, 16) for addr, kind, name in
                (line.split()[:3] for line in f) if kind in "Tt"}


def set_breakpoints(run):
    """The stops of the scenario.  A gdbstub that breaks "by address"
    (Bochs) gets a kernel function by its address: resolving a name makes
    gdb read the code (to skip an endbr64), and Bochs's gdbstub crashes on a
    read it cannot translate, as every kernel address is while the CPU is
    still in real mode.  The address comes from System.map: the debug info
    may also describe a __weak default the linker dropped (v23's
    arch_shstk_validate_clone()), and gdb may pick that one.  User
    addresses: hardware breakpoints where the stub has them (QEMU: no write
    into the program's text); Bochs's matches both kinds by address, but
    only reports software ones with the PC gdb expects."""
    from shstk.commands import token_check
    by_address = run.breakpoints == "software-by-address"
    addrs = system_map(os.environ["SHSTK_VMLINUX"]) if by_address else None

    def at(function):
        return f"*{addrs[function]:#x}" if addrs else function

    Stop(run, "entry", at(ops().clone3_entry))
    Stop(run, "alloc", at(ops().shstk_alloc))
    Stop(run, "validate", at(token_check().stop))
    Stop(run, "newtask", at("wake_up_new_task"))
    hardware = run.breakpoints == "hardware"
    Stop(run, "child", "*shstk_child_entry", hardware)
    Stop(run, "parent", "*shstk_parent_return", hardware)


def where_now():
    """The vCPU, the task (or, from a riscv user-mode stop, the address
    space), the PC and the stack pointer of this stop: what tells a new
    event from the same one reported again."""
    _, _, tasks, _, _ = helpers()
    try:
        who = ("pid", int(tasks.on_cpu()["pid"]))
    except (gdb.error, gdb.GdbError):
        space = ops().address_space()
        if space is None:
            raise
        who = ("address space", space)
    return (gdb.selected_thread().num, who, int(gdb.parse_and_eval("$pc")),
            int(gdb.parse_and_eval("$sp")))


def is_repeat(run, here):
    """Whether the stop @here is one already counted, reported again.  make
    test saw QEMU's gdbstub do that twice over: the first clone3() entry
    twice in a row (11.1 with two vCPUs, 10.2 with one), and on riscv the
    parent's return once more after the child's first instruction, the vCPU
    still at the same PC (its step over the breakpoint was cut short by the
    other vCPU's stop).  Every stop but the entry happens at most once per
    clone3() call, so one seen again with the same vCPU, task, PC and stack
    pointer since the last entry is that; an entry is one when nothing else
    came between."""
    if here is None:
        return False
    if here[0] == "entry":
        return here == run.last_stop
    return here in run.since_entry


def next_stop(run):
    """Continue to the next stop of ours; its name.  A stop reported again
    (is_repeat) is said in the log and not counted; anything else that
    repeats is a stop of its own, and a path failure."""
    while True:
        run.hits.clear()
        gdb.execute("continue")
        if not run.hits:
            raise gdb.GdbError("stopped, but not at one of ours")
        hit = run.hits[-1]
        try:
            here = (hit,) + where_now()
        except (gdb.error, gdb.GdbError):
            here = None
        if not is_repeat(run, here):
            break
        kind, who = here[2]
        who = f"{kind} {who}" if kind == "pid" else f"{kind} {who:#x}"
        gdb.write(f"[gdb-check] note: {hit} reported again by vCPU {here[1]}, {who}, "
                  f"PC {here[3]:#x} and stack pointer as when it was counted; "
                  f"not a new stop\n")
    run.last_stop = here
    if hit == "entry":
        run.since_entry.clear()
    if here is not None:
        run.since_entry.add(here)
    if hit in ("alloc_ret", "validate_ret"):
        for b in gdb.breakpoints():
            if isinstance(b, Return) and b.name == hit:
                b.delete()
    return hit


def run_case(run, name):
    """Follow one clone3() from its entry to the caller's return (and, for
    an accepted token, the child's first instruction), checking every stop:
    a stop whose state cannot be read is a failed step, not the end."""
    case = Case(name)
    ok = True
    while not case.done(run):
        hit = next_stop(run)
        case.seen.append(hit)
        try:
            if hit in HANDLERS:
                ok &= HANDLERS[hit](run, case)
            else:
                ok &= on_lost(run, case, hit)
        except (gdb.error, gdb.GdbError) as e:
            ok &= run.record("internal", name, hit, "the stop's state can be read", False,
                             error=str(e))
    path = [h for h in case.seen if h != "child"]
    want_path = scenario.gdb_path(name, run.shstk_on)
    ok &= run.record(scenario.STEP_PATH, name, "kernel", " -> ".join(want_path),
                     path == want_path, seen=" -> ".join(case.seen))
    return ok


def main():
    from shstk import session
    session.attach()
    _, _, tasks, _, _ = helpers()
    with open(os.environ["SHSTK_STEPS"], "w") as log:
        run = Run(log, tasks.arch(), os.environ.get("SHSTK_EMU", "qemu"),
                  os.environ.get("SHSTK_EMU_BREAKPOINTS", "hardware"))
        try:
            set_breakpoints(run)
            ok = True
            for name in scenario.CASE_NAMES:
                ok &= run_case(run, name)
            for name, step in scenario.not_exercised(run.shstk_on):
                run.skip(step, name, "kernel", "not exercised: the caller has no shadow stack",
                         run.why or "the program could not enable shadow stacks")
            log.write(json.dumps({"step": "verdict", "verdict": "pass" if ok else "fail"}) + "\n")
        finally:
            for b in gdb.breakpoints():
                b.delete()
            # The guest finishes its program and powers off on its own.
            gdb.execute("detach")


if __name__ == "__main__":
    main()
