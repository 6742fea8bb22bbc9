# SPDX-License-Identifier: GPL-2.0
"""make gdb-check's run (gdb/check_clone3.py): the scenario's breakpoints,
each clone3() call followed from its entry to the caller's return, the
step log written from start to verdict.  What each stop checks is
clone3stops.py's."""
import json
import os

import gdb

from spec import scenario
from shstk import archops, clone3stops, stepcheck, tasks, utils
from shstk.clone3stops import Case, Run
from shstk.commands import token_check


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
    by_address = run.breakpoints == "software-by-address"
    addrs = utils.system_map(os.environ["SHSTK_VMLINUX"]) if by_address else None

    def at(function):
        return f"*{addrs[function]:#x}" if addrs else function

    ops = archops.ops()
    stops = run.stops
    stepcheck.ProgramStop(stops, "entry", at(ops.clone3_entry))
    stepcheck.ProgramStop(stops, "alloc", at(ops.shstk_alloc))
    stepcheck.ProgramStop(stops, "validate", at(token_check().stop))
    stepcheck.ProgramStop(stops, "newtask", at("wake_up_new_task"))
    hardware = run.breakpoints == "hardware"
    stepcheck.ProgramStop(stops, "child", "*shstk_child_entry", hardware)
    stepcheck.ProgramStop(stops, "parent", "*shstk_parent_return", hardware)


def next_stop(run):
    """Continue to the next stop of the program (stepcheck.Stops.next); its
    name."""
    hit = run.stops.next()
    if hit is None:
        raise gdb.GdbError("stopped, but not at one of ours")
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
            if hit in clone3stops.HANDLERS:
                ok &= clone3stops.HANDLERS[hit](run, case)
            else:
                ok &= clone3stops.on_lost(run, case, hit)
        except (gdb.error, gdb.GdbError) as e:
            ok &= run.record("internal", name, hit, "the stop's state can be read", False,
                             error=str(e))
    path = [h for h in case.seen if h != "child"]
    want_path = scenario.gdb_path(name, run.shstk_on)
    ok &= run.record(scenario.STEP_PATH, name, "kernel", " -> ".join(want_path),
                     path == want_path, seen=" -> ".join(case.seen))
    return ok


def main():
    """The whole run, gdb attached (session.attach()): the step log
    SHSTK_STEPS, then the guest let go to finish its program."""
    with open(os.environ["SHSTK_STEPS"], "w") as f:
        run = Run(f, tasks.arch(), os.environ.get("SHSTK_EMU", "qemu"),
                  os.environ.get("SHSTK_EMU_BREAKPOINTS", "hardware"))
        try:
            set_breakpoints(run)
            ok = True
            for name in scenario.CASE_NAMES:
                ok &= run_case(run, name)
            for name, step in scenario.not_exercised(run.shstk_on):
                run.skip(step, name, "kernel", "not exercised: the caller has no shadow stack",
                         run.why or "the program could not enable shadow stacks")
            # gdb's own steps; checks/gdbsteps.py adds checks/oracle.py's
            # verdict on the pending one.
            f.write(json.dumps({"step": "verdict", "verdict": "pass" if ok else "fail"}) + "\n")
        finally:
            utils.delete_breakpoints()
            # The guest finishes its program and powers off on its own.
            gdb.execute("detach")
