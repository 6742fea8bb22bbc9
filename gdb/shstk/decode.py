# SPDX-License-Identifier: GPL-2.0
"""What a shadow stack token and a VMA's flags mean, per architecture.

No gdb here: these functions take plain integers, so tests/ checks them on
the host without a VM.
"""

SLOT = 8

# VMA flag bits by name, as the kernel's vma_flag_t enum numbers them; the
# shadow stack bit is arch-specific (VM_HIGH_ARCH_5 on x86, _6 on arm64).
VMA_BITS = {"READ": 0, "WRITE": 1, "EXEC": 2, "SHARED": 3, "MAYREAD": 4, "MAYWRITE": 5,
            "MAYEXEC": 6, "MAYSHARE": 7, "GROWSDOWN": 8}
SHADOW_STACK_BIT = {"x86_64": 32 + 5, "arm64": 32 + 6}


# Where the kernel keeps "the CPU has user shadow stacks": (array, bits per
# element, bit number).  x86: X86_FEATURE_USER_SHSTK (11*32+23) of the u32
# boot_cpu_data.x86_capability[]; arm64: KERNEL_HWCAP_GCS, bit 32 of the
# unsigned long elf_hwcap[] bitmap (HWCAP_GCS is 1 << 32).
CPU_SHADOW_STACK = {"x86_64": ("boot_cpu_data.x86_capability", 32, 11 * 32 + 23),
                    "arm64": ("elf_hwcap", 64, 32)}

# The names a gdbstub gives the live user shadow stack pointer: QEMU's
# GCSPR_EL0 (system registers feature); gdb's x86 CET feature calls it
# pl3_ssp.
SSP_REGISTERS = {"arm64": ("GCSPR_EL0",), "x86_64": ("pl3_ssp",)}


def cpu_feature_word(arch):
    """(expression of the element, bit in it) that says whether the CPU has
    user shadow stacks, as the kernel recorded it at boot."""
    array, width, bit = CPU_SHADOW_STACK[arch]
    return f"{array}[{bit // width}]", bit % width


def live_ssp_register(arch, names):
    """The register among @names (what the gdbstub shows) that holds the live
    user shadow stack pointer, or None."""
    return next((n for n in SSP_REGISTERS[arch] if n in names), None)


def expected_token(arch, addr):
    """The token map_shadow_stack() writes for a slot at @addr."""
    if arch == "x86_64":
        return (addr + SLOT) | 1             # the SSP above it, 64-bit mode
    if arch == "arm64":
        return (addr & ~0xfff) | 1           # GCS cap: the slot's page, valid
    raise ValueError(f"unknown arch {arch!r}")


def token_verdict(arch, addr, word):
    """Why the word at @addr is or is not a token clone3() accepts."""
    if addr % SLOT:
        return False, "misaligned: clone3() refuses it with EINVAL"
    if word is None:
        return False, "not mapped: clone3() refuses it with EFAULT"
    want = expected_token(arch, addr)
    if word == want:
        return True, "valid token"
    if word == 0:
        return False, "zero: consumed, or never a token (EINVAL)"
    return False, f"not a token: expected {want:#x} (EINVAL)"


def vma_flags(flags, arch, shadow_stack_bit=None):
    """The flag names set in a VMA's vm_flags, "ss" for a shadow stack."""
    ss_bit = SHADOW_STACK_BIT[arch] if shadow_stack_bit is None else shadow_stack_bit
    names = [n.lower() for n, b in VMA_BITS.items() if flags >> b & 1]
    if flags >> ss_bit & 1:
        names.append("ss")
    return names


def is_shadow_stack(flags, arch, shadow_stack_bit=None):
    """A writable shadow stack mapping: what clone3() requires of a token."""
    ss_bit = SHADOW_STACK_BIT[arch] if shadow_stack_bit is None else shadow_stack_bit
    return bool(flags >> ss_bit & 1) and bool(flags >> VMA_BITS["WRITE"] & 1)


def perms(flags):
    """The rwxp column of /proc/PID/maps."""
    return "".join(c if flags >> VMA_BITS[n] & 1 else "-"
                   for c, n in (("r", "READ"), ("w", "WRITE"), ("x", "EXEC"))) + \
        ("s" if flags >> VMA_BITS["SHARED"] & 1 else "p")


def pt_indexes(addr, levels=4, page_shift=12, bits_per_level=9):
    """Page table indexes of @addr, top level first (4 KiB pages, 4 levels)."""
    return [(addr >> (page_shift + bits_per_level * (levels - 1 - i))) & ((1 << bits_per_level) - 1)
            for i in range(levels)]


def page_pieces(addr, size, page_size=4096):
    """[addr, addr + size) cut at page boundaries: (address, length) pieces,
    each inside one page, lowest first."""
    pieces = []
    end = addr + size
    while addr < end:
        n = min(end, (addr // page_size + 1) * page_size) - addr
        pieces.append((addr, n))
        addr += n
    return pieces
