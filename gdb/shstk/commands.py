# SPDX-License-Identifier: GPL-2.0
"""The shstk-* commands and $shstk_* convenience functions.

Each says what it could not read and why, as a gdb error message
(errors.reported): none ends in a Python traceback.
"""
from collections import namedtuple

import gdb

from shstk import decode, ssp, tasks, usermem, vmas
from shstk.errors import reading, reported


def _task_arg(argv, index):
    """The task named by argv[index] (a pid expression), or the one on the
    selected CPU."""
    if len(argv) > index:
        with reading(f"the pid {argv[index]!r}"):
            pid = int(gdb.parse_and_eval(argv[index]))
        return tasks.by_pid(pid)
    with reading("the task on the selected CPU"):
        return tasks.on_cpu()


def _pid(task):
    with reading("the task's pid"):
        return int(task["pid"])


def _vma_of(task, addr):
    """describe()d VMA holding @addr in @task, or None."""
    with reading(f"the VMAs of pid {_pid(task)} (its mm's maple tree)"):
        v = vmas.find(task, addr)
        return vmas.describe(v) if v else None


def _word_at(task, addr):
    """The word at user address @addr of @task, None if its page is not
    present."""
    with reading(f"pid {_pid(task)}'s page tables for {addr:#x}"):
        return usermem.read_u64(usermem.task_mm(task), addr)


# What each task's clone3() found at its token while in copy_thread(),
# before the token is checked: (struct kernel_clone_args address, token,
# the new task) of a valid one, by pid.
_valid_in_copy_thread = {}


def _clone_frames():
    """(whether the selected frame is copy_thread() or called from it, the
    new task as copy_thread() and copy_process() name it, or None)."""
    frame, in_copy_thread = gdb.selected_frame(), False
    while frame is not None:
        if frame.name() == "copy_thread":
            in_copy_thread = True
        if frame.name() in ("copy_thread", "copy_process"):
            try:
                return in_copy_thread, int(frame.read_var("p"))
            except (ValueError, gdb.error):
                return in_copy_thread, None
        frame = frame.older()
    return in_copy_thread, None


def clone3_outcome(caller, token, args=None):
    """What clone3() does with @token from @caller, read once for
    shstk-clone-args and the context view alike: (VMA holding it as
    describe()d or None, the word there or None, whether the caller has
    shadow stacks enabled or None, accepted, why).  With @args, the call's
    struct kernel_clone_args: a zero word where this call found a valid
    token in copy_thread() is the token it consumed, not one it refuses."""
    with reading(f"the shadow stack state of pid {_pid(caller)}"):
        caller_on = tasks.shadow_stack_enabled(caller)
    d = _vma_of(caller, token)
    word = _word_at(caller, token & ~7)
    ok, why = decode.clone3_verdict(tasks.arch(), token, word,
                                    None if d is None else d["shadow_stack"], caller_on,
                                    token_check().function)
    if args is not None:
        with reading("the frames of this clone"):
            in_copy_thread, child = _clone_frames()
        call, pid = (int(args.address), token, child), _pid(caller)
        if in_copy_thread:
            _valid_in_copy_thread[pid] = call if ok else None
        elif (not ok and word == 0 and child is not None
              and _valid_in_copy_thread.get(pid) == call):
            ok, why = True, ("consumed by this clone3() (valid in its copy_thread()): "
                             "the child starts on token + 8")
    return d, word, caller_on, ok, why


def _token_line(task, addr, d, word):
    """shstk-token's line for the token at @addr of @task, from the VMA
    @d holding it and the @word there, as already read."""
    _, why = decode.token_verdict(tasks.arch(), addr, word)
    shown = "not present" if word is None else f"{word:#018x}"
    return f"pid {_pid(task)}: [{addr:#x}] = {shown}: {why}; {_where(d)}\n"


def _where(d):
    if d is None:
        return "not in any VMA"
    kind = "a shadow stack" if d["shadow_stack"] else "a non-shadow-stack"
    return f"in {kind} VMA {d['start']:#x}-{d['end']:#x}"


class ShstkVmas(gdb.Command):
    """List a task's VMAs, marking the shadow stack ones.

shstk-vmas [PID]    (default: the task on the selected CPU)
Walks the task's mm maple tree; "ss" marks VMA_SHADOW_STACK."""

    def __init__(self):
        super().__init__("shstk-vmas", gdb.COMMAND_DATA)

    @reported("shstk-vmas")
    def invoke(self, arg, from_tty):
        task = _task_arg(gdb.string_to_argv(arg), 0)
        pid = _pid(task)
        with reading(f"the VMAs of pid {pid} (its mm's maple tree)"):
            described = [vmas.describe(v) for v in vmas.vmas(task)]
        gdb.write(f"pid {pid} ({tasks.comm(task)})\n")
        gdb.write(f"{'start':>18} {'end':>18} {'size':>10} perm  flags\n")
        for d in described:
            mark = "  <- shadow stack" if d["shadow_stack"] else \
                "  <- shadow stack flag, not writable: clone3() refuses it" if "ss" in d["names"] else ""
            gdb.write(f"{d['start']:#18x} {d['end']:#18x} {d['size']:>10} {d['perms']}  "
                      f"{d['flags']:#x} {','.join(d['names'])}{mark}\n")


class ShstkToken(gdb.Command):
    """Read and decode the 8-byte word at a user address of a task.

shstk-token ADDR [PID]   (default: the task on the selected CPU)
Says whether the word is a valid shadow stack token for that address on
this architecture, and whether the address is in a shadow stack VMA."""

    def __init__(self):
        super().__init__("shstk-token", gdb.COMMAND_DATA)

    @reported("shstk-token")
    def invoke(self, arg, from_tty):
        argv = gdb.string_to_argv(arg)
        if not argv:
            raise gdb.GdbError("usage: shstk-token ADDR [PID]")
        with reading(f"the address {argv[0]!r}"):
            addr = int(gdb.parse_and_eval(argv[0])) & (2**64 - 1)
        task = _task_arg(argv, 1)
        gdb.write(_token_line(task, addr, _vma_of(task, addr), _word_at(task, addr & ~7)))


class ShstkSsp(gdb.Command):
    """Show a task's user shadow stack pointer and where it was read.

shstk-ssp [PID]   (default: the task on the selected CPU)"""

    def __init__(self):
        super().__init__("shstk-ssp", gdb.COMMAND_DATA)

    @reported("shstk-ssp")
    def invoke(self, arg, from_tty):
        task = _task_arg(gdb.string_to_argv(arg), 0)
        value, source = ssp.ssp(task)
        shown = "unknown" if value is None else f"{value:#x}"
        gdb.write(f"pid {_pid(task)} ({tasks.comm(task)}): {shown}  [{source}]\n")


_token_field = None


def token_field():
    """The name of the shadow stack token's field, from the kernel's DWARF:
    the u64 at offset 88 of struct clone_args, which kernel_clone_args
    names alike (shadow_stack_token up to v20 of the series, shstk_token
    since v21)."""
    global _token_field
    if _token_field is None:
        with reading("struct clone_args in the kernel's debug information"):
            fields = gdb.lookup_type("struct clone_args").strip_typedefs().fields()
        names = [f.name for f in fields if f.bitpos == 88 * 8]
        if not names:
            raise gdb.GdbError("struct clone_args has no shadow stack token (no field at "
                               "offset 88): this kernel does not have the series")
        _token_field = names[0]
    return _token_field


# Where the kernel checks a token's value.  function: the one that returns
# the verdict (0, or -EINVAL for a word that is not the token), with the new
# task first and the kernel_clone_args as "args" among its parameters;
# value_hook: the architecture's hook it calls just before it reads the
# word, None where the architecture does the whole check.
class TokenCheck(namedtuple("TokenCheck", "function value_hook")):
    @property
    def stop(self):
        """Where to stop just before the word is read."""
        return self.value_hook or self.function

    @property
    def verdict_callers(self):
        """How many frames above that stop the verdict's function is."""
        return 1 if self.value_hook else 0


# patches/ since "fork: Check and consume the shadow stack token in one
# place": fork.c's shstk_validate_clone() also checks the VMA, so only its
# hook is reached by the tokens whose value is checked.
CORE_CHECK = TokenCheck("shstk_validate_clone", "arch_shstk_clone_token")
# The series as posted (v23) and patches/ before it: the arch's own check.
ARCH_CHECK = TokenCheck("arch_shstk_validate_clone", None)
_token_check = None


def forget_kernel(event=None):
    """Drop what was read from the kernel's debug information: another
    vmlinux may be loaded next (gdb.events.new_objfile)."""
    global _token_field, _token_check
    _token_field = _token_check = None


def token_check():
    """This kernel's TokenCheck, from its symbols."""
    global _token_check
    if _token_check is None:
        with reading("the kernel's symbols"):
            hook = gdb.lookup_global_symbol(CORE_CHECK.value_hook)
        _token_check = CORE_CHECK if hook is not None else ARCH_CHECK
    return _token_check


def token_of(args):
    """The token in a struct kernel_clone_args, as an address."""
    return int(args[token_field()]) & (2**64 - 1)


def clone_args_in_frame(frame=None):
    """The struct kernel_clone_args in scope at @frame (args or kargs)."""
    with reading("the selected frame"):
        frame = frame or gdb.selected_frame()
    for name in ("args", "kargs"):
        try:
            val = frame.read_var(name)
        except ValueError:
            continue
        except gdb.error as e:
            raise gdb.GdbError(f"cannot read {name} in {frame.name()}: {e}") from None
        if val.type.strip_typedefs().code == gdb.TYPE_CODE_PTR:
            val = val.dereference()
        if val.type.strip_typedefs().tag == "kernel_clone_args":
            return val
    raise gdb.GdbError("no struct kernel_clone_args (args/kargs) in this frame: "
                       "stop in kernel_clone, copy_process or copy_thread")


class ShstkCloneArgs(gdb.Command):
    """Decode the struct kernel_clone_args in scope (clone3, copy_process).

shstk-clone-args
Prints the flags, stacks and token (shstk_token or shadow_stack_token, as
the kernel names it), the word at the token in
the calling task's memory, and what clone3() will do with it: the verdict
follows the kernel's order (alignment, the caller's shadow stack, the VMA,
the word)."""

    def __init__(self):
        super().__init__("shstk-clone-args", gdb.COMMAND_DATA)

    @reported("shstk-clone-args")
    def invoke(self, arg, from_tty):
        a = clone_args_in_frame()
        with reading("the struct kernel_clone_args in this frame"):
            token = token_of(a)
            gdb.write(f"flags {int(a['flags']):#x} exit_signal {int(a['exit_signal'])} "
                      f"stack {int(a['stack']):#x} stack_size {int(a['stack_size']):#x}\n")
        gdb.write(f"{token_field()} {token:#x}\n")
        if not token:
            return
        with reading("the task on the selected CPU (the caller)"):
            caller = tasks.on_cpu()
        # One read of the VMA and the word, for the token line and the verdict.
        d, word, caller_on, ok, why = clone3_outcome(caller, token, a)
        gdb.write(_token_line(caller, token, d, word))
        state = {True: "has", False: "has no", None: "may have a"}[caller_on]
        gdb.write(f"clone3(): {'accepted' if ok else 'refused'}: {why} "
                  f"(the caller, pid {_pid(caller)}, {state} shadow stack)\n")


class ShstkTokenWord(gdb.Function):
    """$shstk_token_word(ADDR[, PID]): the word at a user address, or -1."""

    def __init__(self):
        super().__init__("shstk_token_word")

    @reported("$shstk_token_word")
    def invoke(self, addr, pid=None):
        if pid is not None:
            task = tasks.by_pid(int(pid))
        else:
            with reading("the task on the selected CPU"):
                task = tasks.on_cpu()
        word = _word_at(task, int(addr) & (2**64 - 1))
        return -1 if word is None else word


class ShstkComm(gdb.Function):
    """$shstk_comm(): the comm of the task on the selected CPU, kernel or user
mode alike (for breakpoint conditions)."""

    def __init__(self):
        super().__init__("shstk_comm")

    @reported("$shstk_comm")
    def invoke(self):
        with reading("the task on the selected CPU"):
            return tasks.comm(tasks.on_cpu())


_registered = False


def register():
    global _registered
    ShstkVmas()
    ShstkToken()
    ShstkSsp()
    ShstkCloneArgs()
    ShstkTokenWord()
    ShstkComm()
    if not _registered:
        gdb.events.new_objfile.connect(forget_kernel)
        _registered = True
