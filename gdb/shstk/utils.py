# SPDX-License-Identifier: GPL-2.0
"""General gdb helpers of the scripted checks: where the CPU is, frames,
the kernel's System.map, QEMU's replay position.  Nothing here differs by
architecture (that is archops.py)."""
import os
import re

import gdb

U64 = 2**64 - 1


def pc():
    """The selected frame's PC, as an unsigned integer."""
    return int(gdb.parse_and_eval("$pc")) & U64


def sp():
    """The selected frame's stack pointer, as an unsigned integer."""
    return int(gdb.parse_and_eval("$sp")) & U64


def caller_frame(callers=0, function=None):
    """The newest frame, or its caller @callers frames up, which must be an
    out-of-line @function where given: a return taken anywhere else is not
    that function's verdict."""
    frame = gdb.newest_frame()
    for _ in range(callers):
        frame = frame.older()
    if function is not None and (frame is None or frame.type() == gdb.INLINE_FRAME
                                 or frame.name() != function):
        got = "no frame" if frame is None else f"{frame.name()}()"
        raise gdb.GdbError(f"{callers} frame(s) up from this stop is {got}, not an "
                           f"out-of-line {function}(): its return is not the verdict")
    return frame


def function_frame():
    """The frame of the function gdb stopped in, not of a callee inlined at
    this PC (after a stepi onto a function's first instruction gdb may
    show one there): the frame a return can be caught of."""
    frame = gdb.newest_frame()
    while frame.type() == gdb.INLINE_FRAME:
        frame = frame.older()
    return frame


def system_map(vmlinux):
    """{name: address} of the functions in the System.map beside @vmlinux."""
    with open(os.path.join(os.path.dirname(vmlinux), "System.map")) as f:
        return {name: int(addr, 16) for addr, kind, name in
                (line.split()[:3] for line in f) if kind in "Tt"}


def replay_icount():
    """The guest's instruction count at this point of a QEMU replay."""
    out = gdb.execute("monitor info replay", to_string=True)
    m = re.search(r"instruction count = (\d+)", out)
    if not m:
        raise gdb.GdbError(f"QEMU's info replay says no instruction count: {out.strip()!r}")
    return int(m.group(1))


def delete_breakpoints():
    for bp in gdb.breakpoints() or ():
        bp.delete()


def detach():
    """Let the guest run on without gdb; a target already gone is no error
    (a replay that ended closed the connection)."""
    try:
        gdb.execute("detach", to_string=True)
    except gdb.error:
        pass
