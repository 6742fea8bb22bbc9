# SPDX-License-Identifier: GPL-2.0
"""The architecture table, config/arches.ini, for Python.

    from config import arches
    a = arches.get("aarch64")        # by name or alias
    a.name, a.elf_machine, a.syscall_args, ...

No gdb and no third-party modules: the host checks, the build helpers and
the gdb helpers all read it.
"""
import configparser
import os

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "arches.ini")

# Keys read as something other than a string.
_INTS = ("elf_machine", "shstk_alloc_bits", "vm_shadow_stack_bit")
_LISTS = ("aliases", "syscall_args")


class UnknownArch(ValueError):
    pass


class Arch:
    """One section of the table, its keys as attributes."""

    def __init__(self, name, section):
        self.name = name
        for key, value in section.items():
            if key in _INTS:
                value = int(value, 0)
            elif key in _LISTS:
                value = tuple(value.split())
            setattr(self, key, value)

    def __repr__(self):
        return f"Arch({self.name!r})"


def _load(path=TABLE):
    parser = configparser.ConfigParser(interpolation=None)
    with open(path) as f:
        parser.read_file(f)
    return {name: Arch(name, parser[name]) for name in parser.sections()}


_table = None


def _arches():
    global _table
    if _table is None:
        _table = _load()
    return _table


def names(all=False):
    """The supported architectures of the table, in its order; with @all,
    also the ones in progress (usable with ARCH= only)."""
    return [n for n, a in _arches().items() if all or a.status == "supported"]


def get(name):
    """The Arch called @name (or one of its aliases); UnknownArch, naming
    the known ones, for any other."""
    for arch in _arches().values():
        if name == arch.name or name in arch.aliases:
            return arch
    raise UnknownArch(f"unknown ARCH {name!r} (use {' or '.join(names())})")


def by_field(field, value):
    """The Arch whose @field is @value (say gdb_arch), or UnknownArch."""
    for arch in _arches().values():
        if getattr(arch, field, None) == value:
            return arch
    raise UnknownArch(f"no architecture in {os.path.basename(TABLE)} has {field} {value!r}")
