# SPDX-License-Identifier: GPL-2.0
"""The shstk-* commands and $shstk_* convenience functions."""
import gdb

from shstk import decode, ssp, tasks, usermem, vmas


def _task_arg(argv, index):
    return tasks.by_pid(int(gdb.parse_and_eval(argv[index]))) if len(argv) > index \
        else tasks.on_cpu()


class ShstkVmas(gdb.Command):
    """List a task's VMAs, marking the shadow stack ones.

shstk-vmas [PID]    (default: the task on the selected CPU)
Walks the task's mm maple tree; "ss" marks VMA_SHADOW_STACK."""

    def __init__(self):
        super().__init__("shstk-vmas", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        task = _task_arg(gdb.string_to_argv(arg), 0)
        gdb.write(f"pid {int(task['pid'])} ({tasks.comm(task)})\n")
        gdb.write(f"{'start':>18} {'end':>18} {'size':>10} perm  flags\n")
        for v in vmas.vmas(task):
            d = vmas.describe(v)
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

    def invoke(self, arg, from_tty):
        argv = gdb.string_to_argv(arg)
        if not argv:
            raise gdb.GdbError("usage: shstk-token ADDR [PID]")
        addr = int(gdb.parse_and_eval(argv[0])) & (2**64 - 1)
        task = _task_arg(argv, 1)
        word = usermem.read_u64(usermem.task_mm(task), addr & ~7)
        ok, why = decode.token_verdict(tasks.arch(), addr, word)
        v = vmas.find(task, addr)
        where = "not in any VMA"
        if v:
            d = vmas.describe(v)
            where = f"in {'a shadow stack' if d['shadow_stack'] else 'a non-shadow-stack'} VMA " \
                    f"{d['start']:#x}-{d['end']:#x}"
        shown = "unmapped" if word is None else f"{word:#018x}"
        gdb.write(f"pid {int(task['pid'])}: [{addr:#x}] = {shown}: {why}; {where}\n")


class ShstkSsp(gdb.Command):
    """Show a task's user shadow stack pointer and where it was read.

shstk-ssp [PID]   (default: the task on the selected CPU)"""

    def __init__(self):
        super().__init__("shstk-ssp", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        task = _task_arg(gdb.string_to_argv(arg), 0)
        value, source = ssp.ssp(task)
        shown = "unknown" if value is None else f"{value:#x}"
        gdb.write(f"pid {int(task['pid'])} ({tasks.comm(task)}): {shown}  [{source}]\n")


def clone_args_in_frame(frame=None):
    """The struct kernel_clone_args in scope at @frame (args or kargs)."""
    frame = frame or gdb.selected_frame()
    for name in ("args", "kargs"):
        try:
            val = frame.read_var(name)
        except ValueError:
            continue
        if val.type.strip_typedefs().code == gdb.TYPE_CODE_PTR:
            val = val.dereference()
        if val.type.strip_typedefs().tag == "kernel_clone_args":
            return val
    raise gdb.GdbError("no struct kernel_clone_args (args/kargs) in this frame: "
                       "stop in kernel_clone, copy_process or copy_thread")


class ShstkCloneArgs(gdb.Command):
    """Decode the struct kernel_clone_args in scope (clone3, copy_process).

shstk-clone-args
Prints the flags, stacks and shadow_stack_token, and decodes the token word
in the calling task's memory."""

    def __init__(self):
        super().__init__("shstk-clone-args", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        a = clone_args_in_frame()
        token = int(a["shadow_stack_token"])
        gdb.write(f"flags {int(a['flags']):#x} exit_signal {int(a['exit_signal'])} "
                  f"stack {int(a['stack']):#x} stack_size {int(a['stack_size']):#x}\n")
        gdb.write(f"shadow_stack_token {token:#x}\n")
        if token:
            gdb.execute(f"shstk-token {token:#x}")


class ShstkTokenWord(gdb.Function):
    """$shstk_token_word(ADDR[, PID]): the word at a user address, or -1."""

    def __init__(self):
        super().__init__("shstk_token_word")

    def invoke(self, addr, pid=None):
        task = tasks.by_pid(int(pid)) if pid is not None else tasks.on_cpu()
        word = usermem.read_u64(usermem.task_mm(task), int(addr) & (2**64 - 1))
        return -1 if word is None else word


class ShstkComm(gdb.Function):
    """$shstk_comm(): the comm of the task on the selected CPU, kernel or user
mode alike (for breakpoint conditions)."""

    def __init__(self):
        super().__init__("shstk_comm")

    def invoke(self):
        return tasks.comm(tasks.on_cpu())


def register():
    ShstkVmas()
    ShstkToken()
    ShstkSsp()
    ShstkCloneArgs()
    ShstkTokenWord()
    ShstkComm()
