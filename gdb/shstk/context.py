# SPDX-License-Identifier: GPL-2.0
"""shstk-context: the shadow stack state at a glance, at every stop.

In the manner of pwndbg's and GEF's context panes: the task on the selected
CPU, its shadow stack pointer and where that was read, the shadow stack VMA
holding it with the words from the pointer up (each decoded: a valid token,
a return address with its symbol, zero), and, in the clone path, the
clone3() token with the word at it and what clone3() will do with it.
make debug turns it on.  A read that fails becomes one line saying what
could not be read; the stop itself always goes on.

  shstk-context              show it now
  shstk-context on|off       show it at every stop, or not
  shstk-context words N      how many shadow stack words to show (6)
  shstk-context colour on|off|auto   ANSI colours (auto: when gdb styles
                             its own output and stdout is a terminal)
"""
import os
import time

import gdb

from shstk import archops, decode, ssp, tasks, usermem, vmas
from shstk.errors import reading, reported

# Settings, changed by the command.
SETTINGS = {"on": False, "words": 6, "colour": "auto"}
COLOURS = {"title": "1;36", "ssp": "1;33", "token": "1;32", "bad": "1;31", "note": "2"}


def _colour():
    if SETTINGS["colour"] != "auto":
        return SETTINGS["colour"] == "on"
    try:
        styled = bool(gdb.parameter("style enabled"))
    except (gdb.error, RuntimeError):
        styled = False
    return styled and os.isatty(1)


class Pane:
    """The lines of one context view; paint() colours a piece of text."""

    def __init__(self, colour):
        self.colour, self.lines = colour, []

    def paint(self, kind, text):
        return f"\x1b[{COLOURS[kind]}m{text}\x1b[0m" if self.colour else text

    def add(self, text=""):
        self.lines.append(text)

    def section(self, name, fn, *args):
        """fn(self, *args) adds the section's lines; a failed read is one
        line naming the section and what could not be read."""
        try:
            fn(self, *args)
        except (gdb.GdbError, gdb.error) as e:
            self.add(f"  {name}: {self.paint('bad', str(e))}")


def _symbol(addr):
    """'function+offset' for a code address gdb knows (the kernel or the
    guest program's symbols), else None."""
    try:
        out = gdb.execute(f"info symbol {addr:#x}", to_string=True).strip()
    except gdb.error:
        return None
    if not out or out.startswith("No symbol"):
        return None
    return out.split(" in section ")[0].replace(" + ", "+")


def _word_note(pane, arch, addr, word, ssp_value):
    notes = []
    if addr == ssp_value:
        notes.append(pane.paint("ssp", "<- ssp"))
    if word is None:
        notes.append(pane.paint("note", "page not present"))
    elif decode.token_verdict(arch, addr, word)[0]:
        notes.append(pane.paint("token", "valid token for this slot"))
    elif word == 0:
        notes.append(pane.paint("note", "zero (a consumed token, or never written)"))
    else:
        sym = _symbol(word)
        if sym:
            notes.append(f"return to {sym}")
    return "  ".join(notes)


def _shadow_stack_vma(task, value):
    """The described VMA that holds the shadow stack pointer @value: the one
    containing it, or, for an empty stack (the pointer at its top), the one
    just below."""
    for addr in (value, value - 8):
        v = vmas.find(task, addr)
        d = vmas.describe(v) if v else None
        if d and d["shadow_stack"]:
            return d
    return None


def _task_section(p, task):
    with reading("the task on the selected CPU"):
        pid, comm = int(task["pid"]), tasks.comm(task)
        on = tasks.shadow_stack_enabled(task)
    state = {True: "shadow stack enabled", False: "no shadow stack",
             None: "shadow stack state unknown"}[on]
    p.add(f"  task   pid {pid} ({comm}), {state}")


def _stack_section(p, task):
    value, source = ssp.ssp(task)
    if not value:
        p.add(f"  ssp    {'none' if value is None else '0'}  [{source}]")
        return
    p.add(f"  ssp    {p.paint('ssp', f'{value:#x}')}  [{source}]")
    with reading(f"the VMAs of pid {int(task['pid'])}"):
        d = _shadow_stack_vma(task, value)
    if d is None:
        p.add(f"  vma    {p.paint('bad', 'the pointer is in no shadow stack VMA')}")
        return
    p.add(f"  vma    {d['start']:#x}-{d['end']:#x} ({d['size']} bytes, {d['perms']}, "
          f"{','.join(d['names'])})")
    arch, mm = archops.ops().name, usermem.task_mm(task)
    end = min(d["end"], value + 8 * SETTINGS["words"])
    for addr in range(value, end, 8):
        with reading(f"the shadow stack word at {addr:#x}"):
            word = usermem.read_u64(mm, addr)
        shown = "not present" if word is None else f"{word:#018x}"
        p.add(f"    {addr:#x}  {shown}  {_word_note(p, arch, addr, word, value)}".rstrip())
    if end < d["end"]:
        p.add(p.paint("note", f"    ... {(d['end'] - end) // 8} more up to the top"))


def _clone_section(p, task):
    from shstk.commands import clone3_outcome, clone_args_in_frame, token_field, token_of
    try:
        a = clone_args_in_frame()
    except gdb.GdbError:
        return                          # not in the clone path
    with reading("the struct kernel_clone_args in this frame"):
        token = token_of(a)
        flags = int(a["flags"])
    if not token:
        p.add(f"  clone  flags {flags:#x}, no {token_field()}: the kernel picks the stack")
        return
    _, word, _, ok, why = clone3_outcome(task, token, a)
    shown = "not present" if word is None else f"{word:#x}"
    verdict = p.paint("token" if ok else "bad", "accepted" if ok else "refused")
    p.add(f"  clone  flags {flags:#x}, {token_field()} {token:#x} = {shown}")
    p.add(f"         clone3(): {verdict}: {why}")


def render(colour=None):
    """The context view of the selected CPU's task, as a string."""
    t0 = time.monotonic()
    pane = Pane(_colour() if colour is None else colour)
    pane.add(pane.paint("title", "── shstk-context " + "─" * 50))
    try:
        with reading("the task on the selected CPU"):
            task = tasks.on_cpu()
    except gdb.GdbError as e:
        pane.add(f"  task: {pane.paint('bad', str(e))}")
    else:
        for name, fn in (("task", _task_section), ("ssp", _stack_section),
                         ("clone", _clone_section)):
            pane.section(name, fn, task)
    pane.add(pane.paint("note", f"  ({time.monotonic() - t0:.2f} s; shstk-context off hides this)"))
    return "\n".join(pane.lines) + "\n"


def _on_stop(event):
    """Print the view at a stop; nothing here may end the stop."""
    if not SETTINGS["on"]:
        return
    try:
        gdb.write(render())
    except Exception as e:          # a bug of ours must not break the stop
        gdb.write(f"shstk-context: internal error, {type(e).__name__}: {e} (a bug in gdb/shstk)\n")


class ShstkContext(gdb.Command):
    """Show the shadow stack context: task, SSP, shadow stack words, clone3 token.

shstk-context              show it now
shstk-context on|off       show it at every stop, or not
shstk-context words N      how many shadow stack words to show (default 6)
shstk-context colour on|off|auto"""

    def __init__(self):
        super().__init__("shstk-context", gdb.COMMAND_DATA)

    @reported("shstk-context")
    def invoke(self, arg, from_tty):
        argv = gdb.string_to_argv(arg)
        if not argv:
            gdb.write(render())
        elif argv in (["on"], ["off"]):
            SETTINGS["on"] = argv[0] == "on"
            gdb.write(f"shstk-context: {'shown' if SETTINGS['on'] else 'not shown'} at every stop\n")
        elif len(argv) == 2 and argv[0] == "words" and argv[1].isdigit() and int(argv[1]) > 0:
            SETTINGS["words"] = int(argv[1])
        elif len(argv) == 2 and argv[0] == "colour" and argv[1] in ("on", "off", "auto"):
            SETTINGS["colour"] = argv[1]
        else:
            raise gdb.GdbError("usage: shstk-context [on|off | words N | colour on|off|auto]")


_registered = False


def register():
    global _registered
    ShstkContext()
    if not _registered:
        gdb.events.stop.connect(_on_stop)
        _registered = True
