# SPDX-License-Identifier: GPL-2.0
"""The architecture gdb is attached to, as one object: ops().

One class per architecture, in the manner of the kernel's
scripts/gdb/linux/mm.py page-ops classes.  The facts (register and
function names, the VMA bit, ...) come from config/arches.ini and read as
attributes (ops().ssp_register); what gdb has to do differently on an
architecture is a method here: which task a CPU runs, a task's shadow
stack pointer, the user page table walk, what the copy_thread hook
returns.  An architecture the table does not know, or one with no class
here, is an error that names it.
"""
import gdb

from linux import constants, cpus, utils

from config import arches
from shstk import coredump, decode
from shstk.errors import reading

task_type = utils.CachedType("struct task_struct")
PAGE_SHIFT = 12
U64 = 2**64 - 1


def as_struct(task):
    """@task as a struct task_struct, from a pointer to one or one."""
    if task.type.strip_typedefs().code == gdb.TYPE_CODE_PTR:
        return task.dereference()
    return task


def on_thread(cpu, fn):
    """fn() evaluated with gdb's thread for @cpu selected (QEMU: CPU n is
    thread n + 1), the selection restored afterwards."""
    prev = gdb.selected_thread()
    for t in gdb.selected_inferior().threads():
        if t.num == cpu + 1:
            t.switch()
            break
    else:
        raise gdb.GdbError(f"no gdb thread for CPU {cpu}")
    try:
        return fn()
    finally:
        prev.switch()


def first_arg():
    """The first argument of the function gdb stopped in, whatever the
    architecture's code calls it (the clone3 wrapper's pt_regs has no name
    gdb can look up on every arch; copy_thread's task is called p or t)."""
    frame = gdb.selected_frame()
    for sym in frame.block():
        if sym.is_argument:
            return sym.value(frame)
    raise gdb.GdbError(f"{frame.name()} has no arguments")


def is_pointer_to(value, tag):
    """Whether @value (or None) is a pointer to struct @tag."""
    if value is None:
        return False
    t = value.type.strip_typedefs()
    return t.code == gdb.TYPE_CODE_PTR and t.target().strip_typedefs().tag == tag


def keep_described_locations(bp):
    """Leave enabled only the locations of @bp that the debug info
    describes, when it has some.  riscv's GCC puts a function's ftrace NOPs
    (-fpatchable-function-entry) under its ELF symbol but starts the DWARF
    function after them; gdb makes a location for each address, and every
    call would stop twice, the first time with no frame to read.  Returns
    the addresses of the locations it disabled."""
    locations = bp.locations
    described = {loc.address for loc in locations if gdb.find_pc_line(loc.address).symtab}
    if len(locations) < 2 or not described:
        return []
    dropped = [loc.address for loc in locations if loc.address not in described]
    for loc in locations:
        loc.enabled = loc.address in described
    return dropped


def _entry_of(addr, name):
    """The first address of the function @name (or of its inlined copy)
    whose code @addr is in, or None if @addr is in no function @name."""
    block = gdb.block_for_pc(addr)
    while block is not None:
        if block.function is not None and block.function.name == name:
            return block.start
        block = block.superblock
    return None


def keep_entry_locations(bp):
    """For a breakpoint on a function by name: if gdb put some of its
    enabled locations at the function's first described instruction, leave
    only those.  gdb skips a function's prologue when it can read the code
    as it sets the breakpoint (a VM restored from a snapshot) and cannot
    when the CPU has no kernel mapping yet (one paused at its first
    instruction), so the same breakpoint stops at the entry in one and
    after the prologue in the other.  On riscv64, with the code readable,
    it made two locations of __riscv_sys_clone3: its entry, and one after
    the prologue of the inlined __se_sys_clone3, whose registers no longer
    hold the entry's.  Returns the addresses of the locations it disabled."""
    name = bp.location or ""
    if not name or name.startswith("*"):
        return []
    enabled = [loc for loc in bp.locations if loc.enabled]
    entries = {loc.address for loc in enabled if _entry_of(loc.address, name) == loc.address}
    if not entries or len(entries) == len(enabled):
        return []
    dropped = [loc.address for loc in enabled if loc.address not in entries]
    for loc in enabled:
        loc.enabled = loc.address in entries
    return dropped


def live_register_names():
    """The registers the gdbstub shows for the selected frame."""
    return {r.name for r in gdb.selected_frame().architecture().registers()}


class ArchOps:
    """What the architectures share; the table's facts as attributes."""

    # The task_struct fields, outermost first, of the word whose bit 0 says
    # the task has user shadow stacks enabled (what copy_thread tests before
    # taking a token).
    SHSTK_MODE = ()
    # Where a task that is not running keeps its shadow stack pointer.
    SAVED_SSP = None

    def __init__(self, facts):
        self.facts = facts

    def __getattr__(self, key):
        if key == "facts":
            raise AttributeError(key)
        return getattr(self.facts, key)

    def reg(self, name):
        """Register @name of the selected thread, as a signed integer."""
        return int(gdb.parse_and_eval(f"(long)${name}"))

    def returned(self, bits):
        """The value the function just returned, as a @bits-wide signed
        integer."""
        v = self.reg(self.return_register) & ((1 << bits) - 1)
        return v - (1 << bits) if v >> (bits - 1) else v

    def syscall_args(self):
        """The first two arguments of the syscall, read from the pt_regs
        that the function gdb stopped in (the clone3 wrapper) takes first.
        Where the stop has no debug info naming that parameter (an address
        before the function's DWARF range, see keep_described_locations),
        the argument register holds it: gdb stops at the wrapper's entry,
        before the register is overwritten."""
        try:
            regs = first_arg()
        except (RuntimeError, gdb.GdbError):
            regs = None
        if not is_pointer_to(regs, "pt_regs"):
            regs = gdb.parse_and_eval(f"(struct pt_regs *)${self.arg_register}")
        gdb.set_convenience_variable("shstk_regs", regs)
        return [int(gdb.parse_and_eval(f"$shstk_regs->{f}")) & U64
                for f in self.facts.syscall_args]

    def address_space(self):
        """What identifies the user address space of the selected CPU
        where kernel memory cannot be read from a stop in user mode, or
        None where it can (the task's comm says whose stop it is)."""
        return None

    def shadow_stack_enabled(self, task):
        """Whether @task has user shadow stacks enabled, or None if this
        kernel has no field for it."""
        try:
            value = task
            for field in self.SHSTK_MODE:
                value = value[field]
            return bool(int(value) & 1)
        except gdb.MemoryError:
            raise
        except gdb.error:
            return None

    def live_register(self):
        """The register the gdbstub shows the live user shadow stack pointer
        in, or None (Bochs, and x86 under QEMU=stock)."""
        return decode.live_ssp_register(self.name, live_register_names())

    def notes(self):
        """Lines about this CPU for make debug's first stop."""
        return []

    def alloc_result(self, ret, task, token):
        """What the copy_thread hook returned for a token it took:
        (expectation, held, facts).  By default the hook returns the new
        SSP (an unsigned long; an error as a negative value)."""
        return "returns token + 8, the new task's SSP", ret == token + 8, {}

    # The user page table walk (usermem.py): levels, the output address in
    # a descriptor, whether a descriptor above the last level maps a block,
    # and the kernel's linear map.
    def pt_levels(self):
        raise NotImplementedError

    def pt_out_addr(self, desc):
        raise NotImplementedError

    def pt_is_block(self, desc):
        raise NotImplementedError

    def phys_to_virt(self, pa):
        raise NotImplementedError

    # The kernel's fixed-offset maps, [(virtual start, size, physical
    # start)], that drgn must be told of to read a dump QEMU wrote with
    # physical addresses only (coredump.py), from the drgn program @prog and
    # the dump's vmcoreinfo @info.
    def direct_maps(self, prog, info):
        raise NotImplementedError


class X86_64Ops(ArchOps):
    SHSTK_MODE = ("thread", "features")     # ARCH_SHSTK_SHSTK
    SAVED_SSP = "the CET user state of its XSAVE buffer"
    ADDR_MASK = 0x000ffffffffff000

    def task_on_cpu(self, cpu):
        # The kernel's helper returns the per-CPU current_task itself, a
        # pointer; its .address is that per-CPU slot, not the task (the fpu
        # beside that slot is not a task's: its fpstate is NULL).
        return as_struct(cpus.get_current_task(cpu))

    def ssp(self, task, cpu):
        """(value or None, where it came from): the live $pl3_ssp where the
        CPU running @task holds its FPU registers, else the XSAVE buffer."""
        pid = int(task["pid"])
        has_register = cpu is not None and self.live_register() == "pl3_ssp"
        if has_register:
            live = self._live_ssp(task, cpu)
            if live is not None:
                return live
        value, where = self.saved_ssp(task)
        if has_register:
            where += f"; current: CPU {cpu} does not hold pid {pid}'s FPU registers"
        elif cpu is not None and value is not None:
            where += f"; stale: pid {pid} is running on CPU {cpu}, its live SSP is in an MSR"
        return value, where

    @staticmethod
    def fpu(task):
        """The task's struct fpu, which x86 keeps right after its task_struct
        (x86_task_fpu()): @task must be the struct, not a pointer to it."""
        task = as_struct(task)
        return gdb.Value(int(task.address) + task.type.sizeof).cast(
            gdb.lookup_type("struct fpu").pointer())

    def saved_ssp(self, task):
        """(SSP or None, where it came from or why there is none), from the
        CET user state of the task's XSAVE buffer.  The buffer is compacted
        when the CPU has XSAVES (xcomp_bv bit 63), and only then can it
        hold the CET user state, a supervisor component."""
        pid = int(task["pid"])
        with reading(f"the struct fpu of pid {pid} (after its task_struct)"):
            fpstate = self.fpu(task)["fpstate"]
            fpstate_addr = int(fpstate)
        if fpstate_addr == 0:
            return None, (f"pid {pid} has no FPU state yet (fpu.fpstate is NULL): a task "
                          f"being made gets it in copy_thread() (fpu_clone()); ask again after")
        with reading(f"the XSAVE header of pid {pid} (fpstate {fpstate_addr:#x})"):
            xsave = fpstate["regs"]["xsave"]
            xfeatures = int(xsave["header"]["xfeatures"]) & U64
            xcomp_bv = int(xsave["header"]["xcomp_bv"]) & U64
            base = int(xsave.address)
        with reading("the kernel's XSAVE layout (xstate_sizes, xstate_flags, xstate_offsets)"):
            off, how = decode.xsave_offset(
                decode.XFEATURE_CET_USER, xcomp_bv,
                lambda i: _xstate_table("xstate_sizes", i),
                lambda i: _xstate_table("xstate_flags", i) & 2,     # XSTATE_FLAG_ALIGNED64
                lambda i: _xstate_table("xstate_offsets", i))
        if off is None:
            return None, f"no CET user state in pid {pid}'s XSAVE buffer: {how}"
        if not xfeatures >> decode.XFEATURE_CET_USER & 1:
            return 0, (f"CET user state of pid {pid} in its init state (XSAVE {how}): "
                       f"no shadow stack enabled")
        with reading(f"the CET user state of pid {pid} at {base + off:#x}"):
            cet = gdb.Value(base + off).cast(gdb.lookup_type("struct cet_user_state").pointer())
            value = int(cet["user_ssp"]) & U64
        return value, f"CET user state in pid {pid}'s XSAVE buffer ({how})"

    def _live_ssp(self, task, cpu):
        """(value, where) from $pl3_ssp of @cpu, which @task runs on: the
        live SSP at CPL 3; in the kernel IA32_PL3_SSP, where the CPU keeps
        the user SSP.  Linux loads a task's CET user state lazily, so in the
        kernel the MSR is @task's only while the CPU holds its FPU registers
        (the kernel's fpregs_state_valid()); None otherwise, and the XSAVE
        buffer is current."""
        def read():
            return (int(gdb.parse_and_eval("(unsigned long)$pl3_ssp")) & U64,
                    int(gdb.parse_and_eval("$cs")) & 3)
        with reading(f"$pl3_ssp of CPU {cpu}"):
            value, cpl = on_thread(cpu, read)
        if cpl == 3:
            return value, f"$pl3_ssp of CPU {cpu}, the live SSP: the CPU runs user code"
        pid = int(task["pid"])
        with reading(f"whose FPU registers CPU {cpu} holds (fpu_fpregs_owner_ctx)"):
            owner = int(cpus.per_cpu(gdb.parse_and_eval("&fpu_fpregs_owner_ctx"), cpu).dereference())
            fpu = self.fpu(task)
            mine = owner == int(fpu) and int(fpu["last_cpu"]) == cpu
        if not mine:
            return None
        return value, (f"$pl3_ssp of CPU {cpu}, IA32_PL3_SSP, where the CPU keeps the user SSP "
                       f"while in the kernel (CPU {cpu} holds pid {pid}'s FPU registers)")

    def notes(self):
        expr, bit = decode.cpu_feature_word(self.name, decode.X86_XSAVES)
        try:
            xsaves = bool(int(gdb.parse_and_eval(expr)) >> bit & 1)
        except gdb.error:
            return []
        if xsaves:
            return []
        return ["  saved shadow stack pointer: this CPU has no XSAVES, so the kernel "
                "saves the standard XSAVE format, which holds no CET state"]

    def pt_levels(self):
        """4, or 5 with LA57 in use."""
        try:
            if int(gdb.parse_and_eval("ptrs_per_p4d")) > 1:
                return 5
        except gdb.error:
            pass
        return 4

    def pt_out_addr(self, desc):
        return desc & self.ADDR_MASK

    def pt_is_block(self, desc):
        return bool(desc & 0x80)             # PS: a large page

    def phys_to_virt(self, pa):
        return (pa + int(gdb.parse_and_eval("page_offset_base"))) & U64

    # Enough for any guest RAM here: a read past the RAM the dump holds fails.
    DIRECT_MAP_SIZE = 1 << 46

    def direct_maps(self, prog, info):
        """The direct map of all RAM from page_offset_base (randomized,
        4- or 5-level); the kernel image drgn maps itself (phys_base)."""
        return [(int(prog["page_offset_base"]), self.DIRECT_MAP_SIZE, 0)]


class Arm64Ops(ArchOps):
    SHSTK_MODE = ("thread", "gcs_el0_mode")  # PR_SHADOW_STACK_ENABLE
    SAVED_SSP = "thread.gcspr_el0"
    ADDR_MASK = 0x0000fffffffff000

    def task_on_cpu(self, cpu):
        # The kernel's lx_current() reads SP_EL0, which holds the user stack
        # pointer while the CPU is in EL0; there the per-CPU __entry_task,
        # set at every context switch, names the task instead.
        sp_el0 = int(on_thread(cpu, lambda: gdb.parse_and_eval("(unsigned long)$SP_EL0")))
        if sp_el0 >> 63:
            return gdb.Value(sp_el0).cast(task_type.get_type().pointer()).dereference()
        ptr = cpus.per_cpu(gdb.parse_and_eval("&__entry_task"), cpu)
        return ptr.dereference().dereference()

    def alloc_result(self, ret, task, token):
        """gcs_alloc_thread_stack() returns 0 and allocates no GCS for a
        token it took.  Where the new task's thread.gcspr_el0 becomes
        token + 8 is the series' choice (here, or when the token is
        consumed, as v23 does): step 4 holds the new task to it."""
        thread = task["thread"]
        base, size = int(thread["gcs_base"]), int(thread["gcs_size"])
        child_ssp = int(thread["gcspr_el0"]) & U64
        return ("returns 0 and allocates no GCS (thread.gcs_base and gcs_size 0)",
                ret == 0 and base == 0 and size == 0,
                {"ssp": child_ssp, "gcs_base": base, "gcs_size": size})

    def ssp(self, task, cpu):
        """A task on a CPU has its live GCSPR_EL0 in that CPU's registers
        (QEMU shows it, read-only); any other has it in thread.gcspr_el0,
        saved at its last context switch (set by copy_thread for a new
        one)."""
        if cpu is not None:
            with reading(f"$GCSPR_EL0 of CPU {cpu}"):
                value = int(on_thread(cpu, lambda: gdb.parse_and_eval("(unsigned long)$GCSPR_EL0")))
            return value & U64, f"live $GCSPR_EL0 of CPU {cpu}"
        with reading(f"thread.gcspr_el0 of pid {int(task['pid'])}"):
            value = int(task["thread"]["gcspr_el0"]) & U64
        return value, "thread.gcspr_el0 (saved at the last context switch)"

    @staticmethod
    def _tcr():
        return int(gdb.parse_and_eval("(unsigned long)$TCR_EL1"))

    def pt_levels(self):
        """From TCR_EL1.T0SZ (4 KiB granule: 39 bits 3 levels, 48 4, 52 5)."""
        va_bits = 64 - (self._tcr() & 0x3f)
        return -(-(va_bits - PAGE_SHIFT) // 9)

    def pt_out_addr(self, desc):
        if self._tcr() >> 59 & 1:
            # FEAT_LPA2 (TCR_EL1.DS): OA[51:50] sit in descriptor bits [9:8].
            return (desc & 0x0003fffffffff000) | ((desc >> 8 & 3) << 50)
        return desc & self.ADDR_MASK

    def pt_is_block(self, desc):
        return not desc & 2                  # bit 1 clear: a block

    def phys_to_virt(self, pa):
        va_bits = getattr(constants, "LX_CONFIG_ARM64_VA_BITS", 48)
        page_offset = (2**64 - (1 << va_bits)) & U64
        memstart = int(gdb.parse_and_eval("memstart_addr")) & U64
        return ((pa - memstart) | page_offset) & U64

    def direct_maps(self, prog, info):
        """The kernel image and the linear map, from vmcoreinfo's
        kimage_voffset, PHYS_OFFSET and VA_BITS."""
        va_bits = coredump.number(info, "VA_BITS")
        start, end = prog.symbol("_text").address, prog.symbol("_end").address
        return [(start, end - start, start - coredump.number(info, "kimage_voffset")),
                ((-(1 << va_bits)) & U64, 1 << (va_bits - 1),
                 coredump.number(info, "PHYS_OFFSET"))]


class Riscv64Ops(ArchOps):
    SHSTK_MODE = ("thread_info", "user_cfi_state", "ubcfi_en")
    SAVED_SSP = "thread_info.user_cfi_state.user_shdw_stk"

    def address_space(self):
        """The page table root satp points to (its PPN; the ASID can be
        reassigned).  QEMU's riscv gdbstub translates with the CPU's
        current privilege, so a stop in user mode cannot read kernel
        memory, not even the running task: satp is what tells whose code
        it is, and is the same in the kernel for the task's own mm."""
        return int(gdb.parse_and_eval("(unsigned long)$satp")) & (2**44 - 1)

    def task_on_cpu(self, cpu):
        # The kernel's helper reads $tp (in the kernel) or $sscratch (in
        # user mode) of the selected thread: select @cpu's first.
        return on_thread(cpu, lambda: as_struct(cpus.get_current_task(cpu)))

    def ssp(self, task, cpu):
        """The live ssp CSR while the CPU running @task is in user mode;
        otherwise thread_info.user_cfi_state.user_shdw_stk, which the
        kernel saves at every entry from user mode (and zeroes the CSR), so
        it is current for any task in the kernel or not running."""
        if cpu is not None and self.live_register() == "ssp":
            def read():
                return (int(gdb.parse_and_eval("(unsigned long)$ssp")) & U64,
                        int(gdb.parse_and_eval("$priv")) & 3)
            with reading(f"$ssp of CPU {cpu}"):
                value, priv = on_thread(cpu, read)
            if priv == 0:
                return value, f"live $ssp of CPU {cpu}: the CPU runs user code"
        with reading(f"thread_info.user_cfi_state of pid {int(task['pid'])}"):
            value = int(task["thread_info"]["user_cfi_state"]["user_shdw_stk"]) & U64
        return value, "thread_info.user_cfi_state.user_shdw_stk (saved at kernel entry)"

    def pt_levels(self):
        """Sv39, Sv48 or Sv57, as the kernel chose at boot."""
        for name, levels in (("pgtable_l5_enabled", 5), ("pgtable_l4_enabled", 4)):
            try:
                if int(gdb.parse_and_eval(name)):
                    return levels
            except gdb.error:
                pass
        return 3

    def pt_out_addr(self, desc):
        return (desc >> 10 & (2**44 - 1)) << PAGE_SHIFT   # the PPN, bits 53:10

    def pt_is_block(self, desc):
        return bool(desc & 0xe)              # R, W or X: a leaf

    def phys_to_virt(self, pa):
        return (pa + int(gdb.parse_and_eval("kernel_map.va_pa_offset"))) & U64

    def direct_maps(self, prog, info):
        """The kernel image and the linear map, from vmcoreinfo's
        KERNEL_LINK_ADDR, va_kernel_pa_offset, PAGE_OFFSET, phys_ram_base
        and VA_BITS."""
        link = coredump.number(info, "KERNEL_LINK_ADDR")
        end = prog.symbol("_end").address
        return [(link, end - link, link - coredump.number(info, "va_kernel_pa_offset")),
                (coredump.number(info, "PAGE_OFFSET"), 1 << (coredump.number(info, "VA_BITS") - 2),
                 coredump.number(info, "phys_ram_base"))]


def _xstate_table(name, i):
    return int(gdb.parse_and_eval(f"{name}[{i}]")) & 0xffffffff


# Table name -> class.  A new architecture: its section in config/arches.ini
# and its class here.
CLASSES = {"x86_64": X86_64Ops, "arm64": Arm64Ops, "riscv64": Riscv64Ops}
_ops = {}


def ops():
    """The ArchOps of the target gdb is attached to."""
    for facts in map(arches.get, arches.names(all=True)):
        if utils.is_target_arch(facts.gdb_arch):
            break
    else:
        raise gdb.GdbError(f"shstk-lab: no entry in config/arches.ini for gdb's architecture "
                           f"(knows {', '.join(arches.names())})")
    if facts.name not in CLASSES:
        raise gdb.GdbError(f"shstk-lab: config/arches.ini has {facts.name}, but gdb/shstk/archops.py "
                           f"has no class for it")
    if facts.name not in _ops:
        _ops[facts.name] = CLASSES[facts.name](facts)
    return _ops[facts.name]
