# SPDX-License-Identifier: GPL-2.0
"""What a shadow stack token and a VMA's flags mean, per architecture.

No gdb here: these functions take plain integers, so tests/ checks them on
the host without a VM.
"""

from config import arches

SLOT = 8

# VMA flag bits by name, as the kernel's vma_flag_t enum numbers them; the
# shadow stack bit is arch-specific (config/arches.ini vm_shadow_stack_bit).
VMA_BITS = {"READ": 0, "WRITE": 1, "EXEC": 2, "SHARED": 3, "MAYREAD": 4, "MAYWRITE": 5,
            "MAYEXEC": 6, "MAYSHARE": 7, "GROWSDOWN": 8}


def cpu_shadow_stack(arch):
    """Where the kernel keeps "the CPU has user shadow stacks": (array, bits
    per element, bit number), config/arches.ini cpu_shadow_stack."""
    array, width, bit = arches.get(arch).cpu_shadow_stack.split()
    return array, int(width), int(bit, 0)


# X86_FEATURE_XSAVES: with it the kernel saves the compacted XSAVE format,
# the only one with room for the CET user state (a supervisor component).
X86_XSAVES = ("boot_cpu_data.x86_capability", 32, 10 * 32 + 3)


def cpu_feature_word(arch, feature=None):
    """(expression of the element, bit in it) that says whether the CPU has
    @feature (array, bits per element, bit), by default user shadow stacks,
    as the kernel recorded it at boot."""
    array, width, bit = feature or cpu_shadow_stack(arch)
    return f"{array}[{bit // width}]", bit % width


def live_ssp_register(arch, names):
    """The register among @names (what the gdbstub shows) that holds the live
    user shadow stack pointer, or None."""
    name = arches.get(arch).ssp_register
    return name if name in names else None


def expected_token(arch, addr):
    """The token map_shadow_stack() writes for a slot at @addr
    (config/arches.ini shstk_token)."""
    where, _, bits = arches.get(arch).shstk_token.partition("|")
    where = where.strip()
    if where == "above":
        word = addr + SLOT
    elif where == "page":
        word = addr & ~0xfff
    else:
        raise ValueError(f"config/arches.ini: {arch}'s shstk_token {where!r} is "
                         f"neither 'above' nor 'page'")
    return word | int(bits or "0", 0)


def token_verdict(arch, addr, word):
    """Why the word at @addr is or is not a token clone3() accepts, from the
    word alone (None: its page is not present, so it cannot be read)."""
    if addr % SLOT:
        return False, "misaligned: clone3() refuses it with EINVAL"
    if word is None:
        return False, "page not present: the word cannot be read from here"
    want = expected_token(arch, addr)
    if word == want:
        return True, "valid token"
    if word == 0:
        return False, "zero: consumed, or never a token (EINVAL)"
    return False, f"not a token: expected {want:#x} (EINVAL)"


def clone3_verdict(arch, addr, word, vma_shadow_stack, caller_shadow_stack, checker):
    """What clone3() does with the token at @addr, in the order the kernel
    checks: (accepted, why).  @word: the word there, None if its page is not
    present; @vma_shadow_stack: None if no VMA holds @addr, else whether it
    is a writable shadow stack (is_shadow_stack); @caller_shadow_stack:
    whether the calling thread has shadow stacks enabled, None if unknown;
    @checker: the kernel function that checks the word (commands.TokenCheck)."""
    if addr % SLOT:
        return False, "misaligned: EINVAL in clone3_args_valid(), before any task is made"
    if caller_shadow_stack is False:
        return False, ("the caller has no shadow stack: EINVAL in copy_thread(), "
                       "before the token is looked at")
    unknown = "" if caller_shadow_stack else "(if the caller has a shadow stack) "
    if vma_shadow_stack is None:
        return False, unknown + "no VMA at this address: EFAULT in shstk_validate_clone()"
    if not vma_shadow_stack:
        return False, unknown + "not in a writable shadow stack VMA: EFAULT in shstk_validate_clone()"
    if word is None:
        return False, unknown + ("page not present, so gdb cannot read the word: the kernel "
                                 "faults the page in and checks it (a page never touched holds "
                                 f"0): EINVAL in {checker}()")
    ok, why = token_verdict(arch, addr, word)
    if ok:
        return True, unknown + "valid token: consumed, the child starts on token + 8"
    return False, unknown + why.removesuffix(" (EINVAL)") + \
        f": EINVAL in {checker}()"


# XSAVE layout (Intel SDM vol. 1, 13.4): the legacy area and the header come
# first; xcomp_bv bit 63 says the buffer is compacted (XSAVES/XSAVEC, each
# present component packed after the previous one, some 64-byte aligned),
# else standard (XSAVE/XSAVEOPT, each user component at its CPUID offset;
# supervisor components, CET user state among them, never there).
XSAVE_HDR_END = 512 + 64
XCOMP_BV_COMPACTED = 1 << 63
XFEATURE_CET_USER = 11
NO_OFFSET = (0, 0xffffffff, -1)


def xsave_offset(feature, xcomp_bv, size, aligned, standard_offset):
    """(offset, how) of component @feature in an XSAVE buffer whose header
    says @xcomp_bv, or (None, why not).  @size(i), @aligned(i) and
    @standard_offset(i) give the kernel's xstate_sizes[], the
    XSTATE_FLAG_ALIGNED64 bit of xstate_flags[] and xstate_offsets[]."""
    if not xcomp_bv & XCOMP_BV_COMPACTED:
        off = standard_offset(feature)
        if off in NO_OFFSET:
            return None, (f"the buffer is in the standard format (the CPU has no XSAVES), "
                          f"which has no place for supervisor component {feature}")
        return off, "standard format"
    if not xcomp_bv >> feature & 1:
        return None, f"the compacted buffer holds no component {feature} (xcomp_bv {xcomp_bv:#x})"
    off = XSAVE_HDR_END
    for i in range(2, feature + 1):
        if not xcomp_bv >> i & 1:
            continue
        if aligned(i):
            off = (off + 63) & ~63
        if i == feature:
            break
        off += size(i)
    return off, "compacted format"


def vma_flags(flags, arch, shadow_stack_bit=None):
    """The flag names set in a VMA's vm_flags, "ss" for a shadow stack."""
    ss_bit = arches.get(arch).vm_shadow_stack_bit if shadow_stack_bit is None else shadow_stack_bit
    names = [n.lower() for n, b in VMA_BITS.items() if flags >> b & 1]
    if flags >> ss_bit & 1:
        names.append("ss")
    return names


def is_shadow_stack(flags, arch, shadow_stack_bit=None):
    """A writable shadow stack mapping: what clone3() requires of a token."""
    ss_bit = arches.get(arch).vm_shadow_stack_bit if shadow_stack_bit is None else shadow_stack_bit
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
