# SPDX-License-Identifier: GPL-2.0
"""A stand-in for gdb's Python API and the kernel's scripts/gdb modules
(linux.*): enough of them to import gdb/shstk on the host and drive its
commands with reads that succeed or fail, as a test decides.

Memory is a dict of objects by address: a Value of pointer type reads
through it, and an address with nothing there fails as gdb does ("Cannot
access memory at address 0x248").  Expressions gdb would evaluate are looked
up in a dict of their exact text.  install() puts the modules in sys.modules
(there is no real gdb module on the host); reset() starts a test afresh.
"""
import os
import shlex
import sys
import types

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from config import arches  # noqa: E402

# What the target's frames say their architecture is, per table arch (the
# kernel's utils.is_target_arch() looks for its argument in that name).
GDB_ARCH = {a: arches.get(a).gdb_arch for a in arches.names(all=True)}
TYPE_CODE_PTR, TYPE_CODE_STRUCT, TYPE_CODE_INT = 1, 3, 8


class error(RuntimeError):
    """gdb.error"""


class MemoryError(error):  # noqa: A001  (gdb's own name)
    """gdb.MemoryError"""


class GdbError(Exception):
    """gdb.GdbError: gdb prints its message, never a traceback."""


class Field:
    def __init__(self, name, bitpos):
        self.name, self.bitpos = name, bitpos


class Type:
    def __init__(self, name, sizeof=8, code=TYPE_CODE_STRUCT, target=None, fields=()):
        self.name, self.sizeof, self.code, self._target = name, sizeof, code, target
        self.tag = name[len("struct "):] if name.startswith("struct ") else None
        self._fields = list(fields)

    def fields(self):
        return self._fields

    def pointer(self):
        return Type(self.name + " *", 8, TYPE_CODE_PTR, self)

    def target(self):
        return self._target

    def strip_typedefs(self):
        return self


LONG = Type("long", 8, TYPE_CODE_INT)


def struct_type(name, sizeof=64):
    return STATE.types.setdefault(f"struct {name}", Type(f"struct {name}", sizeof))


class Value:
    """An integer or pointer (value), or a struct (fields, at address)."""

    def __init__(self, value=0, type=None, address=None, fields=None):
        self._value, self._address, self._fields = value, address, fields
        self.type = type or (LONG if fields is None else Type("struct anon"))

    def __int__(self):
        if self._fields is not None:
            raise error("Cannot convert value to long.")
        if isinstance(self._value, BaseException):
            raise self._value
        return self._value

    __index__ = __int__

    def __bool__(self):
        return bool(int(self))

    def __getitem__(self, name):
        if self.type.code == TYPE_CODE_PTR:
            return self.dereference()[name]
        if self._fields is None:
            raise error("Attempt to extract a component of a value that is not a structure.")
        if name not in self._fields:
            raise error(f"There is no member named {name}.")
        v = self._fields[name]
        if isinstance(v, BaseException):
            raise v
        return v if isinstance(v, Value) else Value(v)

    def dereference(self):
        addr = int(self)
        obj = STATE.memory.get(addr)
        if obj is None:
            raise MemoryError(f"Cannot access memory at address {addr:#x}")
        if isinstance(obj, BaseException):
            raise obj
        return obj

    def cast(self, type):
        return Value(int(self), type)

    def string(self):
        if isinstance(self._value, BaseException):
            raise self._value
        return self._value

    @property
    def address(self):
        return None if self._address is None else Value(self._address, self.type.pointer())

    def __add__(self, n):
        return Value(int(self) + int(n), self.type)


def struct(name, address, sizeof=64, **fields):
    """A struct @name at @address, put in memory (fields: ints, Values, or
    an exception that reading the field raises)."""
    v = Value(type=struct_type(name, sizeof), address=address, fields=fields)
    STATE.memory[address] = v
    return v


def pointer(obj_or_addr, name=None, address=None):
    """A pointer to a struct in memory (or to an address, typed @name)."""
    if isinstance(obj_or_addr, Value):
        return Value(obj_or_addr._address, obj_or_addr.type.pointer(), address=address)
    return Value(obj_or_addr, struct_type(name).pointer(), address=address)


class Thread:
    def __init__(self, num):
        self.num = num

    def switch(self):
        STATE.thread = self


class Inferior:
    def threads(self):
        return STATE.threads

    def read_memory(self, addr, n):
        data = STATE.bytes.get(addr)
        if data is None or isinstance(data, BaseException):
            raise data or MemoryError(f"Cannot access memory at address {addr:#x}")
        return memoryview(data[:n])


class Register:
    def __init__(self, name):
        self.name = name


NORMAL_FRAME, INLINE_FRAME = 0, 1


class Frame:
    def __init__(self, name="copy_thread", variables=None, registers=(), older=None):
        self._name, self.variables, self._registers = name, variables or {}, registers
        self._older = older

    def name(self):
        return self._name

    def older(self):
        return self._older

    def type(self):
        return NORMAL_FRAME

    def read_var(self, name):
        if name not in self.variables:
            raise ValueError(f"Variable '{name}' not found.")
        v = self.variables[name]
        if isinstance(v, BaseException):
            raise v
        return v

    def architecture(self):
        frame = self

        class Arch:
            def registers(self, group="all"):
                return [Register(n) for n in frame._registers]
        return Arch()

    def block(self):
        return []


class Command:
    def __init__(self, name, command_class=None, *args):
        self.name = name
        STATE.commands[name] = self


class Function:
    def __init__(self, name):
        self.name = name
        STATE.functions[name] = self


class State:
    def __init__(self, arch="x86_64"):
        self.arch = arch
        self.memory = {}       # address -> Value (struct) or exception
        self.bytes = {}        # address -> bytes, for read_memory
        self.symbols = {}      # exact expression -> Value, int, or exception
        self.types = {}
        # The kernel's global symbols that code looks up by name: the
        # default series has the token check's arch hook.
        self.global_symbols = {"arch_shstk_clone_token"}
        self.out = []
        self.commands = {}
        self.functions = {}
        self.threads = [Thread(1)]
        self.thread = self.threads[0]
        self.frame = Frame()
        self.current_task = None    # what linux.cpus.get_current_task returns
        self.tasks_by_pid = {}
        self.breakpoints = []       # every gdb.Breakpoint made
        self.described = set()      # code addresses the debug info covers
        self.locations = {}         # breakpoint spec -> the addresses it resolves to
        # code address -> its functions, innermost (inlined) first, as
        # (name, first address) pairs: what gdb.block_for_pc walks
        self.code_functions = {}
        self.convenience = {}       # gdb.set_convenience_variable's
        self.parameters = {"style enabled": False}


STATE = State()


def block_for_pc(pc):
    """The innermost block at @pc: one per function of STATE.code_functions,
    each the superblock of the one inlined in it."""
    block = None
    for name, start in reversed(STATE.code_functions.get(pc, ())):
        block = types.SimpleNamespace(function=types.SimpleNamespace(name=name), start=start,
                                      superblock=block)
    return block


def parse_and_eval(expr):
    try:
        return Value(int(expr, 0))
    except ValueError:
        pass
    if expr not in STATE.symbols:
        raise error(f'No symbol "{expr}" in current context.')
    v = STATE.symbols[expr]
    if isinstance(v, BaseException):
        raise v
    if callable(v):
        return v()
    return v if isinstance(v, Value) else Value(v)


def execute(command, from_tty=False, to_string=False):
    name, _, arg = command.partition(" ")
    if name not in STATE.commands:
        raise error(f'Undefined command: "{name}".')
    start = len(STATE.out)
    STATE.commands[name].invoke(arg, from_tty)
    if to_string:
        text = "".join(STATE.out[start:])
        del STATE.out[start:]
        return text
    return None


def selected_frame():
    if STATE.frame is None:
        raise error("No frame selected.")
    return STATE.frame


# The uapi struct clone_args of the series since v21: twelve u64s.
CLONE_ARGS = Type("struct clone_args", 96, fields=[
    Field(n, 64 * i) for i, n in enumerate(
        ("flags", "pidfd", "child_tid", "parent_tid", "exit_signal", "stack", "stack_size",
         "tls", "set_tid", "set_tid_size", "cgroup", "shstk_token"))])


def lookup_global_symbol(name):
    """A symbol of STATE.global_symbols, or None."""
    return types.SimpleNamespace(name=name) if name in STATE.global_symbols else None


def lookup_type(name):
    if name == CLONE_ARGS.name:
        return STATE.types.get(name, CLONE_ARGS)
    return STATE.types.get(name) or Type(name)


def STATE_setter(attr):
    """A gdb function that stores into the current STATE's dict @attr."""
    def store(name, value):
        getattr(STATE, attr)[name] = value
    return store


def _gdb_module():
    gdb = types.ModuleType("gdb")
    gdb.error, gdb.MemoryError, gdb.GdbError = error, MemoryError, GdbError
    gdb.Value = Value
    gdb.Command, gdb.Function = Command, Function
    gdb.COMMAND_DATA, gdb.COMMAND_USER = 1, 13
    gdb.TYPE_CODE_PTR, gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_INT = \
        TYPE_CODE_PTR, TYPE_CODE_STRUCT, TYPE_CODE_INT
    gdb.BP_BREAKPOINT, gdb.BP_HARDWARE_BREAKPOINT = 1, 2
    gdb.NORMAL_FRAME, gdb.INLINE_FRAME = NORMAL_FRAME, INLINE_FRAME
    gdb.parse_and_eval = parse_and_eval
    gdb.execute = execute
    gdb.write = lambda text: STATE.out.append(text)
    gdb.string_to_argv = shlex.split
    gdb.selected_frame = selected_frame
    gdb.newest_frame = selected_frame
    gdb.selected_inferior = Inferior
    gdb.selected_thread = lambda: STATE.thread
    gdb.lookup_type = lookup_type
    gdb.lookup_global_symbol = lookup_global_symbol
    gdb.breakpoints = lambda: []
    gdb.parameter = lambda name: STATE.parameters.get(name)
    gdb.find_pc_line = lambda pc: types.SimpleNamespace(
        pc=pc, symtab="file.c" if pc in STATE.described else None)
    gdb.set_convenience_variable = STATE_setter("convenience")
    gdb.block_for_pc = block_for_pc

    class Event:
        def __init__(self):
            self.handlers = []

        def connect(self, fn):
            self.handlers.append(fn)

        def fire(self, event=None):
            for fn in self.handlers:
                fn(event)
    gdb.events = types.SimpleNamespace(stop=Event(), new_objfile=Event())

    class Breakpoint:
        def __init__(self, spec, type=1, internal=False):
            self.spec, self.type = spec, type
            self.location = spec
            # What gdb resolved the spec to: the test's, one address each.
            self.locations = [types.SimpleNamespace(address=a, enabled=True)
                              for a in STATE.locations.get(spec, ())]
            STATE.breakpoints.append(self)

        def delete(self):
            pass

    gdb.Breakpoint = Breakpoint
    gdb.FinishBreakpoint = Breakpoint
    return gdb


def _linux_modules():
    linux = types.ModuleType("linux")
    linux.__path__ = []

    utils = types.ModuleType("linux.utils")

    class CachedType:
        def __init__(self, name):
            self.name = name

        def get_type(self):
            return STATE.types.get(self.name) or struct_type(self.name[len("struct "):])

    utils.CachedType = CachedType
    utils.is_target_arch = lambda a: a in GDB_ARCH.get(STATE.arch, STATE.arch)
    utils.get_ulong_type = lambda: Type("unsigned long", 8, TYPE_CODE_INT)

    cpus = types.ModuleType("linux.cpus")

    def get_current_cpu():
        return STATE.thread.num - 1

    def get_current_task(cpu):
        t = STATE.current_task
        if callable(t):
            t = t(cpu)
        if isinstance(t, BaseException):
            raise t
        return t

    def per_cpu(var_ptr, cpu):
        return parse_and_eval(f"per_cpu({var_ptr._value}, {cpu})")

    cpus.get_current_cpu, cpus.get_current_task, cpus.per_cpu = \
        get_current_cpu, get_current_task, per_cpu

    tasks = types.ModuleType("linux.tasks")

    def get_task_by_pid(pid):
        t = STATE.tasks_by_pid.get(pid)
        if isinstance(t, BaseException):
            raise t
        return t

    tasks.get_task_by_pid = get_task_by_pid

    constants = types.ModuleType("linux.constants")
    mapletree = types.ModuleType("linux.mapletree")
    xarray = types.ModuleType("linux.xarray")
    xarray.xa_is_node = lambda e: False
    xarray.xa_is_zero = lambda e: False
    mods = {"linux": linux, "linux.utils": utils, "linux.cpus": cpus, "linux.tasks": tasks,
            "linux.constants": constants, "linux.mapletree": mapletree, "linux.xarray": xarray}
    for name, mod in mods.items():
        if "." in name:
            setattr(linux, name.split(".")[1], mod)
    return mods


def install():
    """Put the stand-ins in sys.modules and gdb/ on the path; idempotent."""
    if "gdb" not in sys.modules:
        sys.modules["gdb"] = _gdb_module()
        sys.modules.update(_linux_modules())
    # gdb/ for shstk, scripts/vm for the QMP client, as gdb/check_clone3.py
    # puts them on the path.
    for path in (os.path.join(TOP, "scripts", "vm"), os.path.join(TOP, "gdb")):
        if path not in sys.path:
            sys.path.insert(0, path)
    return sys.modules["gdb"]


def reset(arch="x86_64"):
    """A fresh target: no memory, no symbols, one CPU, the commands kept."""
    global STATE
    commands, functions = STATE.commands, STATE.functions
    STATE = State(arch)
    STATE.commands, STATE.functions = commands, functions
    # What gdb/shstk read from the last target's kernel goes with it.
    loaded = sys.modules.get("shstk.commands")
    if loaded is not None:
        loaded.forget_kernel()
    return STATE
