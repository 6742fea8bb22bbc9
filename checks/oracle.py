# SPDX-License-Identifier: GPL-2.0
"""An independent oracle for the gdb helpers: drgn on a dump of the guest.

gdb/shstk walks the maple tree and the page tables itself to list a task's
VMAs and read its memory.  At the token check stop of the accepted call,
make gdb-check has drgn read a dump of the guest too (gdb/shstk/coredump.py,
which shares no code with those walks) and logs both readings in step 3c,
with the verdict "pending"; judge() gives it its verdict here: the shadow
stack VMAs and the token word must be the ones the helpers read.
"""
from spec import scenario

# The verdict gdb/check_clone3.py writes for a step this file judges.
PENDING = "pending"


def compare(helper_vmas, helper_word, drgn_vmas, drgn_word):
    """What the helpers read that drgn does not: [problem], empty when
    they agree.  A @drgn_word of None (drgn could not read it) compares
    the VMAs only."""
    problems = []
    if list(helper_vmas) != list(drgn_vmas):
        problems.append(f"shadow stack VMAs: the helpers read {list(helper_vmas)}, "
                        f"drgn {list(drgn_vmas)}")
    if drgn_word is not None and helper_word != drgn_word:
        problems.append(f"token word: the helpers read {_hex(helper_word)}, drgn {drgn_word:#x}")
    return problems


def _hex(word):
    return "nothing (unmapped)" if word is None else f"{word:#x}"


def _int(value):
    """A word as the step log holds it: "0x..." or None."""
    return int(value, 16) if isinstance(value, str) else value


def judge(step):
    """@step with its verdict and problems where it is a step 3c whose
    readings await one; any other step as it is."""
    if step.get("step") != scenario.STEP_ORACLE or step.get("verdict") != PENDING:
        return step
    problems = compare(step.get("helper_vmas", []), _int(step.get("helper_word")),
                       step.get("drgn_vmas", []), _int(step.get("drgn_word")))
    return dict(step, verdict="fail" if problems else "pass", problems=problems)
