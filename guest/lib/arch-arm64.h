/* SPDX-License-Identifier: GPL-2.0 */
/*
 * arm64's part of lib/shstk.h: the Guarded Control Stack (GCS), enabled
 * with prctl(PR_SET_SHADOW_STACK_STATUS).  Included by lib/shstk.h only.
 */
#ifndef SHSTK_LAB_ARCH_H
#define SHSTK_LAB_ARCH_H

#ifndef SHSTK_LAB_SHSTK_H
#error "include lib/shstk.h, which includes this header for its architecture"
#endif

#include <sys/auxv.h>

#define SHSTK_ARCH_NAME		"arm64"
#define PR_SET_SHADOW_STACK_STATUS	75
#define PR_SHADOW_STACK_ENABLE		(1UL << 0)

/* The call that enables shadow stacks: its number and arguments. */
#define SHSTK_ENABLE_NR		__NR_prctl
#define SHSTK_ENABLE_ARG0	PR_SET_SHADOW_STACK_STATUS
#define SHSTK_ENABLE_ARG1	PR_SHADOW_STACK_ENABLE
#define SHSTK_AUDIT_ARCH	AUDIT_ARCH_AARCH64
/* An address with a tag in its top byte: TBI makes it the one under the tag. */
#define SHSTK_TAGGED_TOKEN_ERRNO	EINVAL

/* Where user addresses end (48-bit VAs). */
#define SHSTK_USER_ADDR_END	0x0001000000000000ULL
/* An address in the kernel's image. */
#define SHSTK_KERNEL_ADDR	0xffff800080000000ULL

/* The CPU offers GCS: HWCAP_GCS, bit 32 of AT_HWCAP. */
static inline bool shstk_cpu_has(void)
{
	return getauxval(AT_HWCAP) & (1UL << 32);
}

static inline long raw_syscall6(long nr, long a1, long a2, long a3, long a4,
				long a5, long a6)
{
	register long x8 asm("x8") = nr;
	register long x0 asm("x0") = a1;
	register long x1 asm("x1") = a2;
	register long x2 asm("x2") = a3;
	register long x3 asm("x3") = a4;
	register long x4 asm("x4") = a5;
	register long x5 asm("x5") = a6;

	asm volatile ("svc #0"
		      : "+r"(x0)
		      : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
		      : "memory", "cc");
	return x0;
}

/*
 * GCSPR_EL0, by its encoding so that any assembler takes it.  Only read it
 * with GCS enabled: the read is not guaranteed to work otherwise.
 */
static __attribute__((always_inline)) inline uint64_t read_ssp(void)
{
	uint64_t ssp;

	asm volatile ("mrs %0, S3_3_C2_C5_1" : "=r"(ssp));
	return ssp;
}

/* The cap token map_shadow_stack() writes: the slot's page, valid bit. */
static inline uint64_t shstk_expected_token(uint64_t token_addr)
{
	return (token_addr & ~0xfffULL) | 1;
}

/* The cap a signal frame leaves at @addr: its page, without the valid bit. */
static inline uint64_t shstk_signal_token(uint64_t addr)
{
	return addr & ~0xfffULL;
}

/* As the x86 version: a GCS fault (SEGV_CPERR), else SIGILL. */
asm (".pushsection .text\n"
	".globl shstk_forged_return\n"
	"shstk_forged_return:\n"
	"	adr x30, 1f\n"
	"	ret\n"
	"1:	udf #0\n"
	".popsection\n");

/* As the x86 version; x21 says whether GCSPR_EL0 may be read. */
static __attribute__((always_inline)) inline long
clone3_run(struct shstk_clone_args *args, size_t size,
	   long (*fn)(void *arg, uint64_t ssp), void *arg)
{
	register long x8 asm("x8") = __NR_clone3;
	register long x0 asm("x0") = (long)args;
	register long x1 asm("x1") = (long)size;
	register long x19 asm("x19") = (long)fn;
	register long x20 asm("x20") = (long)arg;
	register long x21 asm("x21") = shstk_enabled;

	asm volatile ("svc #0\n\t"
		      "cbnz x0, 1f\n\t"
		      SHSTK_CHILD_LABEL
		      "mov x1, xzr\n\t"
		      "cbz x21, 2f\n\t"
		      "mrs x1, S3_3_C2_C5_1\n"
		      "2:\n\t"
		      "cbz x20, 3f\n\t"
		      "str x1, [x20]\n"
		      "3:\n\t"
		      "mov x0, xzr\n\t"
		      "cbz x19, 4f\n\t"
		      "sub x9, sp, #256\n\t"
		      "and sp, x9, #-16\n\t"
		      "mov x0, x20\n\t"
		      "blr x19\n"
		      "4:\n\t"
		      "mov x8, %[nr_exit]\n\t"
		      "svc #0\n\t"
		      "udf #0\n"
		      "1:\n\t"
		      SHSTK_PARENT_LABEL
		      : "+r"(x0), "+r"(x1)
		      : "r"(x8), "r"(x19), "r"(x20), "r"(x21),
			[nr_exit] "i"(__NR_exit)
		      : "x9", "x30", "memory", "cc");
	return x0;
}

#endif /* SHSTK_LAB_ARCH_H */
