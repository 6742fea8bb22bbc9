/* SPDX-License-Identifier: GPL-2.0 */
/*
 * riscv64's part of lib/shstk.h: Zicfiss shadow stacks, enabled with
 * prctl(PR_SET_SHADOW_STACK_STATUS).  Included by lib/shstk.h only.
 */
#ifndef SHSTK_LAB_ARCH_H
#define SHSTK_LAB_ARCH_H

#ifndef SHSTK_LAB_SHSTK_H
#error "include lib/shstk.h, which includes this header for its architecture"
#endif

#define SHSTK_ARCH_NAME		"riscv64"
#define PR_SET_SHADOW_STACK_STATUS	75
#define PR_SHADOW_STACK_ENABLE		(1UL << 0)

/* The call that enables shadow stacks: its number and arguments. */
#define SHSTK_ENABLE_NR		__NR_prctl
#define SHSTK_ENABLE_ARG0	PR_SET_SHADOW_STACK_STATUS
#define SHSTK_ENABLE_ARG1	PR_SHADOW_STACK_ENABLE
#define SHSTK_AUDIT_ARCH	AUDIT_ARCH_RISCV64
/*
 * An address with a tag in its top byte: pointer masking is off unless a
 * program turns it on, so not a user one.
 */
#define SHSTK_TAGGED_TOKEN_ERRNO	EFAULT

/*
 * Where user addresses end: Sv57's, the highest (the kernel takes the
 * largest mode the CPU offers, Sv57 on QEMU's "max", unless told less), so
 * shadow stacks may sit far above Sv39's 1 << 38.
 */
#define SHSTK_USER_ADDR_END	0x0100000000000000ULL
/* An address in the kernel's image. */
#define SHSTK_KERNEL_ADDR	0xffffffff80000000ULL

/*
 * The CPU offers user shadow stacks: the /proc/cpuinfo line init reads too
 * (config/arches.ini's cpuinfo_field and cpuinfo_flag) lists them.
 */
static inline bool shstk_cpu_has(void)
{
	return shstk_cpuinfo_has("isa", "zicfiss");
}

static inline long raw_syscall6(long nr, long a1, long a2, long a3, long a4,
				long a5, long a6)
{
	register long r_a7 asm("a7") = nr;
	register long r_a0 asm("a0") = a1;
	register long r_a1 asm("a1") = a2;
	register long r_a2 asm("a2") = a3;
	register long r_a3 asm("a3") = a4;
	register long r_a4 asm("a4") = a5;
	register long r_a5 asm("a5") = a6;

	asm volatile ("ecall"
		      : "+r"(r_a0)
		      : "r"(r_a7), "r"(r_a1), "r"(r_a2), "r"(r_a3), "r"(r_a4),
			"r"(r_a5)
		      : "memory");
	return r_a0;
}

/*
 * The ssp CSR, by its number (0x011) so that any assembler takes it.  Only
 * read it with shadow stacks enabled: with them off (envcfg.SSE clear) the
 * read is an illegal instruction.
 */
static __attribute__((always_inline)) inline uint64_t read_ssp(void)
{
	uint64_t ssp;

	asm volatile ("csrr %0, 0x11" : "=r"(ssp));
	return ssp;
}

/* The token map_shadow_stack() writes: the address just above the slot. */
static inline uint64_t shstk_expected_token(uint64_t token_addr)
{
	return token_addr + SHSTK_SLOT;
}

/*
 * The token a signal frame leaves at @addr: the same as above, riscv has
 * one format for both (create_rstor_token()).
 */
static inline uint64_t shstk_signal_token(uint64_t addr)
{
	return addr + SHSTK_SLOT;
}

/*
 * As the x86 version, but returns are checked only where the code says so:
 * push the real return address (sspush ra), replace it and check it
 * (sspopchk ra), as a function built with -fcf-protection=return does.  By
 * encoding, so that any assembler takes them.
 */
asm (".pushsection .text\n"
	".globl shstk_forged_return\n"
	"shstk_forged_return:\n"
	"	.4byte 0xce104073\n"		/* sspush ra */
	"	lla ra, 1f\n"
	"	.4byte 0xcdc0c073\n"		/* sspopchk ra */
	"	ret\n"
	"1:	unimp\n"
	".popsection\n");

/* As the arm64 version; s3 says whether the ssp CSR may be read. */
static __attribute__((always_inline)) inline long
clone3_run(struct shstk_clone_args *args, size_t size,
	   long (*fn)(void *arg, uint64_t ssp), void *arg)
{
	register long r_a7 asm("a7") = __NR_clone3;
	register long r_a0 asm("a0") = (long)args;
	register long r_a1 asm("a1") = (long)size;
	register long r_s1 asm("s1") = (long)fn;
	register long r_s2 asm("s2") = (long)arg;
	register long r_s3 asm("s3") = shstk_enabled;

	asm volatile ("ecall\n\t"
		      "bnez a0, 1f\n\t"
		      SHSTK_CHILD_LABEL
		      "li a1, 0\n\t"
		      "beqz s3, 2f\n\t"
		      "csrr a1, 0x11\n"
		      "2:\n\t"
		      "beqz s2, 3f\n\t"
		      "sd a1, 0(s2)\n"
		      "3:\n\t"
		      "li a0, 0\n\t"
		      "beqz s1, 4f\n\t"
		      "addi sp, sp, -256\n\t"
		      "andi sp, sp, -16\n\t"
		      "mv a0, s2\n\t"
		      "jalr s1\n"
		      "4:\n\t"
		      "li a7, %[nr_exit]\n\t"
		      "ecall\n\t"
		      "unimp\n"
		      "1:\n\t"
		      SHSTK_PARENT_LABEL
		      : "+r"(r_a0), "+r"(r_a1)
		      : "r"(r_a7), "r"(r_s1), "r"(r_s2), "r"(r_s3),
			[nr_exit] "i"(__NR_exit)
		      : "ra", "memory");
	return r_a0;
}

#endif /* SHSTK_LAB_ARCH_H */
