# SPDX-License-Identifier: GPL-2.0
"""The gdb scenario (guest/shstk_gdb.c): what its run must show.

Pure Python, no gdb: gdb/check_clone3.py imports it inside gdb, the checkers
beside it here, and tests/ on the host.

The program makes five clone3() calls, each with a shadow stack token of its
own kind; the kernel refuses each at one stage of its checks, or accepts it.
Everything the run must show follows from the stage: the return, the path
through the kernel gdb sees, the steps gdb-check records, the events
bpftrace logs.  Without a shadow stack in the caller every aligned token is
refused at the same early stage, and what the other stages would have shown
is not exercised: a skip, with the reason the emulator declares.
"""
import argparse
import sys
from collections import namedtuple

EINVAL, EFAULT = 22, 14


class Stage(namedtuple("Stage", "functions ret refusal")):
    """A stage of the kernel's checks, in the order it checks a token.
    functions: where a kernel refuses at the stage; the token's value is
    checked by fork.c's shstk_validate_clone() (patches/, which also checks
    the VMA), or by the arch's arch_shstk_validate_clone() (the series as
    posted, v23)."""
    __slots__ = ()

    @property
    def function(self):
        return self.functions[0]


TOKEN_CHECKS = ("shstk_validate_clone", "arch_shstk_validate_clone")
STAGES = {
    "args": Stage(("clone3_args_valid",), -EINVAL,
                  "misaligned: refused before any task exists"),
    "caller": Stage(("copy_thread",), -EINVAL,
                    "the caller has no shadow stack: refused by the arch copy_thread hook"),
    "vma": Stage(("shstk_validate_clone",), -EFAULT,
                 "not in a writable shadow stack VMA"),
    "token": Stage(TOKEN_CHECKS, -EINVAL,
                   "not the token: the word is left as it was"),
    # ret 0 stands for the child's pid (the program prints 0 for it).
    "accepted": Stage(TOKEN_CHECKS, 0,
                      "validated and consumed: the child starts on token + 8"),
}

# token: what the program passes (guest/shstk_gdb.c makes each kind);
# stage: where the kernel stops it when the caller has a shadow stack.
Case = namedtuple("Case", "name token stage")
CASES = (
    Case("valid", "stack_token", "accepted"),
    Case("misaligned", "stack_token_minus_1", "args"),
    Case("no_token", "stack_without_token", "token"),
    Case("normal", "ordinary_memory", "vma"),
    Case("reused", "stack_token", "token"),
)
CASE_NAMES = [c.name for c in CASES]
BY_NAME = {c.name: c for c in CASES}


def stage(case, shstk_on):
    """Where the kernel stops @case (a Case or its name)."""
    case = BY_NAME.get(case, case)
    if not shstk_on and case.stage != "args":
        return "caller"
    return case.stage


def want_ret(case, shstk_on):
    """What clone3() returns: 0 for the child's pid, or -errno."""
    return STAGES[stage(case, shstk_on)].ret


def reaches_copy_thread(stage_name):
    """The arch copy_thread hook set up the child's shadow stack pointer."""
    return stage_name in ("vma", "token", "accepted")


# gdb's stops (gdb/check_clone3.py): the syscall entry, the arch copy_thread
# hook and its return, the token check as the token's value is checked
# (commands.TokenCheck) and its return,
# wake_up_new_task() and the caller's return to user space; the child's own
# first instruction is checked apart.
def gdb_path(case, shstk_on):
    """The stops @case makes, in order."""
    st = stage(case, shstk_on)
    path = ["entry"]
    if st != "args":
        path += ["alloc", "alloc_ret"]
    if st in ("token", "accepted"):
        path += ["validate", "validate_ret"]
    if st == "accepted":
        path += ["newtask"]
    return path + ["parent"]


# gdb-check's step names.
STEP_SCENARIO = "0 scenario"
STEP_ENTRY = "1 clone3 entry"
STEP_ALLOC = "2 copy_thread"
STEP_COMMANDS = "2a debug commands"
STEP_BEFORE = "3a token check: before"
STEP_AFTER = "3b token check: after"
STEP_ORACLE = "3c drgn oracle"
STEP_NEWTASK = "4 new task"
STEP_CHILD = "5 child's first user instruction"
STEP_RETURNS = "clone3 returns"
STEP_REFUSAL = "6 refusal"
STEP_REFUSAL_RET = "6 refusal: clone3 returns"
STEP_PATH = "path"
# Steps that may be a skip when the caller has a shadow stack: the live
# shadow stack pointer is not shown by every gdbstub, and not every
# emulator can dump the guest's memory for drgn.
MAY_SKIP = {STEP_CHILD, STEP_ORACLE}


def gdb_steps(case, shstk_on):
    """The steps gdb-check records for @case."""
    st = stage(case, shstk_on)
    steps = [STEP_ENTRY, STEP_PATH]
    if st != "args":
        steps += [STEP_ALLOC, STEP_COMMANDS]
    if st == "accepted":
        steps += [STEP_BEFORE, STEP_ORACLE, STEP_AFTER, STEP_NEWTASK, STEP_CHILD, STEP_RETURNS]
    else:
        steps += [STEP_REFUSAL_RET]
    if st == "token":
        steps += [STEP_REFUSAL]
    return steps


def not_exercised(shstk_on):
    """[(case, step)] a caller with a shadow stack would have shown and this
    one did not: none when it has one."""
    if shstk_on:
        return []
    return [(c.name, s) for c in CASES for s in gdb_steps(c, True)
            if s not in gdb_steps(c, False)]

# The backend of an emulator whose CPU has no user shadow stack says so, and
# why, on the kernel command line (scripts/vm/emulators/): the guest programs
# put it in their SKIP lines, and the checks take it as the declaration.
WHY_PARAM = "shstk.why="


def declared_shadow_stack(cmdline):
    """(on, why) that the emulator and CPU declare for user shadow stacks,
    from the guest's kernel command line: off with the reason when the
    backend put shstk.why=REASON there (underscores for spaces), on
    otherwise."""
    for arg in (cmdline or "").split():
        if arg.startswith(WHY_PARAM):
            return False, arg[len(WHY_PARAM):].replace("_", " ")
    return True, None


def state_word(on):
    return "on" if on else "off"


def scenario_check(program_on, declared_on, cpu_on, why=None):
    """Step 0: the program's shadow stack state against the declared one
    and the kernel's view of the CPU (None: not readable, not judged).
    (ok, expectation, problems)."""
    declared = f"declared {state_word(declared_on)}" + (f" ({why})" if why else "")
    expectation = (f"the program's shadow stack is {state_word(declared_on)}, as the emulator "
                   f"and CPU provide ({declared})")
    problems = []
    if program_on != declared_on:
        problems.append(f"the program's shadow stack is {state_word(program_on)}, "
                        f"but {declared}")
    if cpu_on is not None and cpu_on != declared_on:
        problems.append(f"the kernel sees a CPU with user shadow stacks "
                        f"{state_word(cpu_on)}, but {declared}")
    return not problems, expectation, problems


# guest/shstk_gdb.c makes each kind of token (TOKEN_KINDS) and runs CASES in
# order: scripts/build/guest.sh writes this header for it.
TOKEN_KINDS = ("stack_token", "stack_token_minus_1", "stack_without_token", "ordinary_memory")
ERRNO_NAMES = {0: "0", -EINVAL: "-EINVAL", -EFAULT: "-EFAULT"}


def c_header():
    """The cases as C, for guest/shstk_gdb.c (shstk_scenario.h)."""
    kinds = "".join(f"\tSCENARIO_{k.upper()},\n" for k in TOKEN_KINDS)
    cases = "".join(f'\t{{ "{c.name}", SCENARIO_{c.token.upper()}, '
                    f'{ERRNO_NAMES[want_ret(c, True)]}, {ERRNO_NAMES[want_ret(c, False)]} }},\n'
                    for c in CASES)
    return f"""/* SPDX-License-Identifier: GPL-2.0 */
/* Generated from spec/scenario.py by scripts/build/guest.sh: do not edit. */
#ifndef SHSTK_SCENARIO_H
#define SHSTK_SCENARIO_H

#include <errno.h>

/* The token a case passes to clone3(). */
enum scenario_token {{
{kinds}}};

/* want: what clone3() returns (0 for the child's pid), with and without a
 * shadow stack in the caller. */
struct scenario_case {{
	const char *name;
	enum scenario_token token;
	long want_with_shstk;
	long want_without_shstk;
}};

static const struct scenario_case scenario_cases[] = {{
{cases}}};

#endif /* SHSTK_SCENARIO_H */
"""


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m spec.scenario",
                                description="The gdb scenario's one description, as C.")
    p.add_argument("--c-header", action="store_true", required=True,
                   help="print shstk_scenario.h for guest/shstk_gdb.c")
    p.parse_args(argv)
    sys.stdout.write(c_header())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
