# SPDX-License-Identifier: GPL-2.0
"""make gdb-check: a scripted, checked step-through of clone3() with a user
shadow stack, run by gdb in batch mode against QEMU's gdbstub.

The guest runs guest/shstk_gdb.c, whose five clone3() calls come in a fixed
order (valid, misaligned, no_token, normal, reused).  At every stop this
script reads the kernel's and the program's state by name, checks it, and
appends one JSON line to the step log; scripts/gdb-check.sh and
checks/gdbsteps.py judge the log.

Configuration comes from the environment (set by scripts/gdb-check.sh):
see shstk/session.py, and SHSTK_STEPS, the JSON-lines step log.
"""
import json
import os
import struct
import sys

import gdb

HERE = os.path.dirname(os.path.abspath(__file__))
PROG_COMM = "shstk_gdb"
CASES = ["valid", "misaligned", "no_token", "normal", "reused"]
EINVAL, EFAULT = 22, 14
# struct clone_args: shadow_stack_token is the u64 at offset 88 (VER3).
TOKEN_OFFSET = 88

sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from checks import scenario  # noqa: E402
from shstk import session  # noqa: E402

session.attach()

from shstk import decode, ssp, tasks, usermem, vmas  # noqa: E402  (after the kernel's scripts)

ARCH = tasks.arch()
log = open(os.environ["SHSTK_STEPS"], "w")
last_hit = []


def record(step, case, location, expectation, ok, **facts):
    entry = {"step": step, "case": case, "location": location,
             "expectation": expectation, "verdict": "pass" if ok else "fail"}
    entry.update({k: (f"{v:#x}" if isinstance(v, int) and k in HEX else v)
                  for k, v in facts.items()})
    log.write(json.dumps(entry) + "\n")
    log.flush()
    gdb.write(f"[gdb-check] {'PASS' if ok else 'FAIL'} {case}: {step}: {expectation}\n")
    return ok


def skip(step, case, location, expectation, reason, **facts):
    """A step that was not exercised, and why: neither a pass nor a failure."""
    entry = {"step": step, "case": case, "location": location,
             "expectation": expectation, "verdict": "skip", "reason": reason}
    entry.update({k: (f"{v:#x}" if isinstance(v, int) and k in HEX else v)
                  for k, v in facts.items()})
    log.write(json.dumps(entry) + "\n")
    log.flush()
    gdb.write(f"[gdb-check] SKIP {case}: {step}: {expectation}: {reason}\n")
    return True


HEX = {"token", "token_word", "ssp", "word_before", "word_after", "expected_word"}


def ours():
    try:
        return tasks.comm(tasks.on_cpu()) == PROG_COMM
    except gdb.error as e:
        # Say so: a stop skipped here shows up later as a missing step.
        gdb.write(f"[gdb-check] could not tell whose stop this is: {e}\n")
        return False


EMU = os.environ.get("SHSTK_EMU", "qemu")


def system_map():
    """{name: address} of the functions in the kernel's System.map."""
    path = os.path.join(os.path.dirname(os.environ["SHSTK_VMLINUX"]), "System.map")
    with open(path) as f:
        return {name: int(addr, 16) for addr, kind, name in
                (line.split()[:3] for line in f) if kind in "Tt"}


def at(function):
    """A breakpoint spec for @function.  On Bochs, its address: resolving a
    function name makes gdb read the code (to skip an endbr64), and Bochs's
    gdbstub crashes on a read it cannot translate, as every kernel address is
    while the CPU is still in real mode.  The address comes from System.map:
    the debug info also describes the __weak arch_shstk_validate_clone() the
    linker dropped, and gdb may pick that one."""
    if EMU != "bochs":
        return function
    return f"*{system_map()[function]:#x}"


class Stop(gdb.Breakpoint):
    """A breakpoint that stops only for the guest program and says it hit."""

    def __init__(self, name, spec, hardware=False):
        kind = gdb.BP_HARDWARE_BREAKPOINT if hardware else gdb.BP_BREAKPOINT
        super().__init__(spec if spec.startswith("*") else at(spec), type=kind, internal=True)
        self.name = name

    def stop(self):
        if not ours():
            return False
        last_hit.append(self.name)
        return True


class Return(gdb.FinishBreakpoint):
    """The return of the function in the newest frame."""

    def __init__(self, name):
        super().__init__(gdb.newest_frame(), internal=True)
        self.name = name

    def stop(self):
        last_hit.append(self.name)
        return True

    def out_of_scope(self):
        last_hit.append(self.name + ":lost")


def first_arg():
    """The first argument of the function gdb stopped in (the new task, for
    the hooks here), whatever the architecture's code calls it."""
    frame = gdb.selected_frame()
    for sym in frame.block():
        if sym.is_argument:
            return sym.value(frame)
    raise gdb.GdbError(f"{frame.name()} has no arguments")


def reg(name):
    return int(gdb.parse_and_eval(f"(long)${name}"))


def syscall_args():
    """(uargs, size) of clone3 at the syscall wrapper's entry."""
    regs = gdb.parse_and_eval("regs")
    if ARCH == "arm64":
        return int(regs["regs"][0]), int(regs["regs"][1])
    return int(regs["di"]), int(regs["si"])


def ss_vmas(task):
    return [f"{d['start']:#x}-{d['end']:#x}" for d in map(vmas.describe, vmas.vmas(task))
            if d["shadow_stack"]]


alloc_fn = "gcs_alloc_thread_stack" if ARCH == "arm64" else "shstk_alloc_thread_stack"
entry_fn = "__arm64_sys_clone3" if ARCH == "arm64" else "__x64_sys_clone3"
Stop("entry", entry_fn)
Stop("alloc", alloc_fn)
Stop("validate", "arch_shstk_validate_clone")
Stop("newtask", "wake_up_new_task")
# User addresses: hardware breakpoints on QEMU (no write into the program's
# text); Bochs's gdbstub matches both kinds by address, but only reports
# software ones with the PC gdb expects.
HW = EMU == "qemu"
Stop("child", "*shstk_child_entry", hardware=HW)
Stop("parent", "*shstk_parent_return", hardware=HW)


SHSTK_ON = None
DECLARED = {}


def shstk_enabled_in(task):
    """The guest program's own shstk_enabled flag, read from its memory."""
    addr = int(gdb.parse_and_eval("(unsigned long)&shstk_enabled"))
    raw = usermem.read_bytes(usermem.task_mm(task), addr, 1)
    return bool(raw and raw[0])


def want_ret(case):
    if not SHSTK_ON:
        return -EINVAL          # every token refused: no shadow stack
    return {"valid": 0, "misaligned": -EINVAL, "no_token": -EINVAL,
            "normal": -EFAULT, "reused": -EINVAL}[case]


def expected_path(case):
    """The stops a case must make, in order (the child's own stop, which
    may come before or after the caller's, is checked apart)."""
    if case == "misaligned":
        return ["entry", "parent"]
    if not SHSTK_ON or case == "normal":
        return ["entry", "alloc", "alloc_ret", "parent"]
    if case == "valid":
        return ["entry", "alloc", "alloc_ret", "validate", "validate_ret", "newtask", "parent"]
    return ["entry", "alloc", "alloc_ret", "validate", "validate_ret", "parent"]


def run_case(case):
    """Follow one clone3() from its entry to the caller's return (and, for
    the valid case, the child's first instruction), checking every stop."""
    global SHSTK_ON
    ok = True
    seen = []
    token = 0
    st = {}
    while True:
        need_child = case == "valid" and SHSTK_ON
        if "parent" in seen and (not need_child or "child" in seen):
            break
        last_hit.clear()
        gdb.execute("continue")
        if not last_hit:
            raise gdb.GdbError("stopped, but not at one of ours")
        hit = last_hit[-1]
        seen.append(hit)
        task = tasks.on_cpu()
        pid = int(task["pid"])
        if hit == "entry":
            if SHSTK_ON is None:
                SHSTK_ON = shstk_enabled_in(task)
                ok &= check_scenario(case, SHSTK_ON)
            uargs, size = syscall_args()
            mm = usermem.task_mm(task)
            raw = usermem.read_bytes(mm, uargs, size) if 0 < size <= 4096 else None
            token = struct.unpack_from("<Q", raw, TOKEN_OFFSET)[0] if raw and size >= 96 else 0
            word = usermem.read_u64(mm, token & ~7) if token else None
            v = vmas.find(task, token) if token else None
            in_ss = bool(v and vmas.describe(v)["shadow_stack"])
            valid, why = decode.token_verdict(ARCH, token, word)
            if case == "valid" and SHSTK_ON:
                expect, good = "the token lies in a shadow stack VMA and holds a valid token", \
                    in_ss and valid
            else:
                expect, good = "clone_args read from the caller's memory", raw is not None
            ok &= record(scenario.STEP_ENTRY, case, entry_fn, expect, good, pid=pid, token=token,
                         token_word=word or 0, detail=why, in_shadow_stack_vma=in_ss,
                         shadow_stack_vmas=ss_vmas(task), struct_size=size)
        elif hit == "alloc":
            st["alloc_task"] = first_arg().dereference()
            ok &= check_commands(case, token)
            Return("alloc_ret")
        elif hit == "alloc_ret":
            # gcs_alloc_thread_stack() returns int, shstk_alloc_thread_stack()
            # unsigned long (an address, or an error as a negative value).
            ret = last_return_value("alloc_ret", 32 if ARCH == "arm64" else 64)
            if not SHSTK_ON:
                expect, good = "refuses the token: the caller has no shadow stack (-EINVAL)", \
                    ret == -EINVAL
                facts = {}
            elif ARCH == "arm64":
                child_ssp = int(st["alloc_task"]["thread"]["gcspr_el0"]) & (2**64 - 1)
                expect = "returns 0; the new task's thread.gcspr_el0 is token + 8"
                good = ret == 0 and child_ssp == token + 8
                facts = {"ssp": child_ssp}
            else:
                expect, good = "returns token + 8, the new task's SSP", ret == token + 8
                facts = {}
            ok &= record(scenario.STEP_ALLOC, case, alloc_fn, expect, good,
                         ret=ret, token=token, **facts)
        elif hit == "validate":
            vtask = first_arg().dereference()
            st["vmm"] = usermem.task_mm(vtask)
            st["before"] = usermem.read_u64(st["vmm"], token)
            expected = decode.expected_token(ARCH, token)
            if case == "valid":
                ok &= record(scenario.STEP_BEFORE, case, "arch_shstk_validate_clone",
                             "the word in the child's mm is the valid token",
                             st["before"] == expected, token=token, word_before=st["before"],
                             expected_word=expected, new_pid=int(vtask["pid"]))
            Return("validate_ret")
        elif hit == "validate_ret":
            ret = last_return_value("validate_ret", 32)
            after = usermem.read_u64(st["vmm"], token)
            if case == "valid":
                ok &= record(scenario.STEP_AFTER, case, "arch_shstk_validate_clone",
                             "returns 0 and the word is now 0 (consumed)",
                             ret == 0 and after == 0, ret=ret, token=token,
                             word_before=st["before"], word_after=after)
            else:
                ok &= record(scenario.STEP_REFUSAL, case, "arch_shstk_validate_clone",
                             "refuses a word that is not the token: -EINVAL, word unchanged",
                             ret == -EINVAL and after == st["before"], ret=ret, token=token,
                             word_before=st["before"], word_after=after)
        elif hit == "newtask":
            new = gdb.parse_and_eval("p").dereference()
            value, source = ssp.ssp(new)
            ok &= record(scenario.STEP_NEWTASK, case, "wake_up_new_task",
                         "the new task's saved shadow stack pointer is token + 8",
                         value == token + 8, new_pid=int(new["pid"]), ssp=value or 0,
                         token=token, source=source, shadow_stack_vmas=ss_vmas(new))
        elif hit == "child":
            ok &= check_child_ssp(case, pid, token)
        elif hit == "parent":
            ret = reg("x0" if ARCH == "arm64" else "rax")
            want = want_ret(case)
            good = ret > 0 if want == 0 else ret == want
            step = scenario.STEP_RETURNS if want == 0 else scenario.STEP_REFUSAL_RET
            ok &= record(step, case, "shstk_parent_return",
                         f"the caller gets {'the child pid' if want == 0 else want}",
                         good, ret=ret)
        elif hit.endswith(":lost"):
            ok &= record("internal", case, hit, "the function returned where gdb saw it", False)
    path = [h for h in seen if h != "child"]
    want_path = expected_path(case)
    ok &= record(scenario.STEP_PATH, case, "kernel", " -> ".join(want_path), path == want_path,
                 seen=" -> ".join(seen))
    return ok


def check_scenario(case, program_on):
    """Step 0: the program's shadow stack state is what this emulator and CPU
    are declared to provide (scripts/emulators/ puts shstk.why= on the
    kernel command line where they have none), and what the kernel found on
    the CPU."""
    declared_on, why = scenario.declared_shadow_stack(tasks.kernel_cmdline())
    try:
        cpu_on = tasks.cpu_has_shadow_stack()
    except gdb.error as e:
        gdb.write(f"[gdb-check] could not read the kernel's CPU features: {e}\n")
        cpu_on = None
    DECLARED["why"] = why
    good, expect, problems = scenario.scenario_check(program_on, declared_on, cpu_on, why)
    return record(scenario.STEP_SCENARIO, case, PROG_COMM, expect, good, shadow_stack_enabled=program_on,
                  declared=declared_on, cpu_shadow_stack=cpu_on, reason=why, problems=problems)


def check_child_ssp(case, pid, token):
    """Step 5: the child's live shadow stack pointer, where the gdbstub shows
    one; a skip, with the reason, where it does not."""
    name = ssp.live_register()
    step, where = scenario.STEP_CHILD, "shstk_child_entry"
    if name is None:
        return skip(step, case, where, "the live shadow stack pointer is token + 8",
                    f"the {EMU} gdbstub shows no shadow stack pointer register "
                    f"({' or '.join(decode.SSP_REGISTERS[ARCH])}); step 4 checked the saved one",
                    pid=pid, token=token)
    live = reg(name) & (2**64 - 1)
    return record(step, case, where, f"the live {name} is token + 8", live == token + 8,
                  pid=pid, ssp=live, token=token)


# What shstk-clone-args's verdict (decode.clone3_verdict) says at each stage
# of the kernel's checks: make debug must tell the user what the kernel does.
DEBUG_VERDICT = {"accepted": "clone3(): accepted",
                 "caller": "EINVAL in copy_thread()",
                 "vma": "EFAULT in shstk_validate_clone()",
                 "token": "EINVAL in arch_shstk_validate_clone()"}


def check_commands(case, token):
    """make debug's own commands, run at the same stop: what they print must
    agree with what this script read (they share the readers, not the
    formatting, and nothing else runs them unattended)."""
    out = gdb.execute("shstk-clone-args", to_string=True)
    want = [f"shadow_stack_token {token:#x}", DEBUG_VERDICT[scenario.stage(case, SHSTK_ON)]]
    if case == "valid" and SHSTK_ON:
        want += ["valid token", "in a shadow stack VMA"]
        out += gdb.execute("shstk-vmas", to_string=True)
        want.append("<- shadow stack")
    missing = [w for w in want if w not in out]
    return record(scenario.STEP_COMMANDS, case, "shstk-clone-args, shstk-token, shstk-vmas",
                  "the commands decode the same token: " + "; ".join(want), not missing,
                  missing=missing, output=out.strip().splitlines())


def last_return_value(name, bits):
    """The value the function just returned, from the ABI's return register
    (x0 or rax), as a @bits-wide signed integer; the finish breakpoint goes."""
    for b in gdb.breakpoints():
        if isinstance(b, Return) and b.name == name:
            b.delete()
    v = reg("x0" if ARCH == "arm64" else "rax") & ((1 << bits) - 1)
    return v - (1 << bits) if v >> (bits - 1) else v


def main():
    ok = True
    for case in CASES:
        ok &= run_case(case)
    for case, step in scenario.not_exercised(SHSTK_ON):
        skip(step, case, "kernel", "not exercised: the caller has no shadow stack",
             DECLARED.get("why") or "the program could not enable shadow stacks")
    return ok


try:
    result = main()
    log.write(json.dumps({"step": "verdict", "verdict": "pass" if result else "fail"}) + "\n")
finally:
    log.close()
    for b in gdb.breakpoints():
        b.delete()
    # The guest finishes its program and powers off on its own.
    gdb.execute("detach")
