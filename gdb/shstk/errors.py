# SPDX-License-Identifier: GPL-2.0
"""Failed reads as sentences: what could not be read, and why.

gdb prints a gdb.GdbError raised by a command or a convenience function as
its message alone; any other exception as a Python traceback.  The helpers
read through reading(), which names the thing being read, and every
command and function goes through reported(), which makes sure nothing
but a message reaches gdb.
"""
import contextlib
import functools

import gdb


@contextlib.contextmanager
def reading(what):
    """Turn a gdb error inside into gdb.GdbError("cannot read WHAT: WHY")."""
    try:
        yield
    except gdb.GdbError:
        raise
    except gdb.error as e:          # gdb.MemoryError is one
        raise gdb.GdbError(f"cannot read {what}: {e}") from None


def reported(name):
    """For invoke() of a command or function called @name: every failure
    ends as a message that starts with @name."""
    def wrap(invoke):
        @functools.wraps(invoke)
        def checked(*args, **kwargs):
            try:
                return invoke(*args, **kwargs)
            except (gdb.GdbError, gdb.error) as e:
                raise gdb.GdbError(f"{name}: {e}") from None
            except Exception as e:   # a bug of ours: still a message, and which
                raise gdb.GdbError(f"{name}: internal error, {type(e).__name__}: {e} "
                                   f"(a bug in gdb/shstk)") from None
        return checked
    return wrap
