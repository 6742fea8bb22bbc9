# SPDX-License-Identifier: GPL-2.0
"""The gdb scenario (guest/shstk_gdb.c): what its run must show.

Pure Python, no gdb: gdb/check_clone3.py imports it inside gdb, the checkers
beside it here, and tests/ on the host.
"""

# The backend of an emulator whose CPU has no user shadow stack says so, and
# why, on the kernel command line (scripts/emulators/): the guest programs
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
