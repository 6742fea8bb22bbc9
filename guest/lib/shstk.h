/* SPDX-License-Identifier: GPL-2.0 */
/*
 * shstk-lab guest helpers: everything architecture specific that the guest
 * programs need, written once.  Raw system calls (so nothing returns through
 * a libc wrapper on a shadow stack it did not start on), reading the shadow
 * stack pointer, enabling shadow stacks, the token a kernel writes, and a
 * clone3() that runs a function in the child and exits.
 */
#ifndef SHSTK_LAB_SHSTK_H
#define SHSTK_LAB_SHSTK_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/audit.h>	/* AUDIT_ARCH_*, for seccomp filters */
#include <linux/sched.h>	/* struct clone_args of the patched kernel */
#include <asm/unistd.h>

#ifndef CLONE_ARGS_SIZE_VER3
#error "kernel headers without a clone_args shadow stack token: build against the patched tree"
#endif
/*
 * The token's field of struct clone_args, named shadow_stack_token up to
 * v20 of the series and shstk_token since: scripts/build/guest.sh passes
 * the name the kernel headers give the u64 at offset 88.
 */
#ifndef SHSTK_TOKEN_FIELD
#error "SHSTK_TOKEN_FIELD is not set: scripts/build/guest.sh reads it from the kernel headers"
#endif
static_assert(offsetof(struct clone_args, SHSTK_TOKEN_FIELD) == 88,
	      "the shadow stack token is the u64 at offset 88 of struct clone_args");

#ifndef __NR_map_shadow_stack
#define __NR_map_shadow_stack 453
#endif
#ifndef SHADOW_STACK_SET_TOKEN
#define SHADOW_STACK_SET_TOKEN	(1ULL << 0)
#endif
#ifndef SEGV_CPERR
#define SEGV_CPERR		10
#endif

#define SHSTK_SLOT		sizeof(uint64_t)

/*
 * A program that wants debuggers to find clone3_run()'s child and parent
 * paths defines these as global labels before including this header (and
 * then has exactly one clone3_run() call site).
 */
#ifndef SHSTK_CHILD_LABEL
#define SHSTK_CHILD_LABEL ""
#define SHSTK_PARENT_LABEL ""
#endif
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))

/* Set by the program once it has enabled shadow stacks for itself. */
extern bool shstk_enabled;

#if defined(__x86_64__)

#define SHSTK_ARCH_NAME		"x86_64"
#define ARCH_SHSTK_ENABLE	0x5001
#define ARCH_SHSTK_DISABLE	0x5002
#define ARCH_SHSTK_SHSTK	(1ULL << 0)

static inline long raw_syscall6(long nr, long a1, long a2, long a3, long a4,
				long a5, long a6)
{
	register long r10 asm("r10") = a4;
	register long r8 asm("r8") = a5;
	register long r9 asm("r9") = a6;
	long ret;

	asm volatile ("syscall"
		      : "=a"(ret)
		      : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8),
			"r"(r9)
		      : "rcx", "r11", "memory", "cc");
	return ret;
}

/* RDSSPQ is a NOP without shadow stacks, leaving the register at 0. */
static __attribute__((always_inline)) inline uint64_t read_ssp(void)
{
	uint64_t ssp = 0;

	asm volatile ("rdsspq %0" : "+r"(ssp));
	return ssp;
}

/* The token map_shadow_stack() writes: the SSP above it, 64-bit mode. */
static inline uint64_t shstk_expected_token(uint64_t token_addr)
{
	return (token_addr + SHSTK_SLOT) | 1;
}

/* The token a signal frame leaves at @addr: the SSP above it, bit 63 set. */
static inline uint64_t shstk_signal_token(uint64_t addr)
{
	return (addr + SHSTK_SLOT) | (1ULL << 63);
}

/* The call that enables shadow stacks: its number, its first argument. */
#define SHSTK_ENABLE_NR		__NR_arch_prctl
#define SHSTK_ENABLE_ARG0	ARCH_SHSTK_ENABLE
#define SHSTK_AUDIT_ARCH	AUDIT_ARCH_X86_64
/* An address with a tag in its top byte: no tagging here, so not a user one. */
#define SHSTK_TAGGED_TOKEN_ERRNO	EFAULT
#define shstk_enable_raw() \
	raw_syscall6(SHSTK_ENABLE_NR, SHSTK_ENABLE_ARG0, ARCH_SHSTK_SHSTK, 0, 0, 0, 0)

/*
 * clone3() that runs fn(arg, ssp) in the child and exits with its return
 * value, without the child ever returning through a frame of the parent.
 * ssp is the child's shadow stack pointer, read before anything is pushed;
 * it is also stored at *(uint64_t *)arg when arg is not NULL.  With fn NULL
 * the child stores it and exits at once, pushing nothing on its shadow
 * stack, so the consumed token slot stays as the kernel left it.  The child
 * first moves below the parent's red zone, in case it shares the parent's
 * stack (CLONE_VM | CLONE_VFORK without a stack).
 */
static __attribute__((always_inline)) inline long
clone3_run(struct clone_args *args, size_t size,
	   long (*fn)(void *arg, uint64_t ssp), void *arg)
{
	register long rax asm("rax") = __NR_clone3;
	register long rdi asm("rdi") = (long)args;
	register long rsi asm("rsi") = (long)size;
	register long r12 asm("r12") = (long)fn;
	register long r13 asm("r13") = (long)arg;

	asm volatile ("syscall\n\t"
		      "test %%rax, %%rax\n\t"
		      "jnz 1f\n\t"
		      SHSTK_CHILD_LABEL
		      "xor %%esi, %%esi\n\t"
		      "rdsspq %%rsi\n\t"
		      "test %%r13, %%r13\n\t"
		      "jz 2f\n\t"
		      "mov %%rsi, (%%r13)\n"
		      "2:\n\t"
		      "xor %%edi, %%edi\n\t"
		      "test %%r12, %%r12\n\t"
		      "jz 3f\n\t"
		      "lea -256(%%rsp), %%rsp\n\t"
		      "and $-16, %%rsp\n\t"
		      "mov %%r13, %%rdi\n\t"
		      "call *%%r12\n\t"
		      "mov %%rax, %%rdi\n"
		      "3:\n\t"
		      "mov %[nr_exit], %%eax\n\t"
		      "syscall\n\t"
		      "ud2\n"
		      "1:\n\t"
		      SHSTK_PARENT_LABEL
		      : "+r"(rax)
		      : "r"(rdi), "r"(rsi), "r"(r12), "r"(r13),
			[nr_exit] "i"(__NR_exit)
		      : "rcx", "r11", "memory", "cc");
	return rax;
}

#elif defined(__aarch64__)

#define SHSTK_ARCH_NAME		"arm64"
#define PR_SET_SHADOW_STACK_STATUS	75
#define PR_SHADOW_STACK_ENABLE		(1UL << 0)

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

#define SHSTK_ENABLE_NR		__NR_prctl
#define SHSTK_ENABLE_ARG0	PR_SET_SHADOW_STACK_STATUS
#define SHSTK_AUDIT_ARCH	AUDIT_ARCH_AARCH64
/* An address with a tag in its top byte: TBI makes it the one under the tag. */
#define SHSTK_TAGGED_TOKEN_ERRNO	EINVAL
#define shstk_enable_raw() \
	raw_syscall6(SHSTK_ENABLE_NR, SHSTK_ENABLE_ARG0, PR_SHADOW_STACK_ENABLE, 0, 0, 0, 0)

/* As the x86 version; x21 says whether GCSPR_EL0 may be read. */
static __attribute__((always_inline)) inline long
clone3_run(struct clone_args *args, size_t size,
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

#elif defined(__riscv) && __riscv_xlen == 64

#define SHSTK_ARCH_NAME		"riscv64"
#define PR_SET_SHADOW_STACK_STATUS	75
#define PR_SHADOW_STACK_ENABLE		(1UL << 0)

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

#define SHSTK_ENABLE_NR		__NR_prctl
#define SHSTK_ENABLE_ARG0	PR_SET_SHADOW_STACK_STATUS
#define SHSTK_AUDIT_ARCH	AUDIT_ARCH_RISCV64
/*
 * An address with a tag in its top byte: pointer masking is off unless a
 * program turns it on, so not a user one.
 */
#define SHSTK_TAGGED_TOKEN_ERRNO	EFAULT
#define shstk_enable_raw() \
	raw_syscall6(SHSTK_ENABLE_NR, SHSTK_ENABLE_ARG0, PR_SHADOW_STACK_ENABLE, 0, 0, 0, 0)

/* As the arm64 version; s3 says whether the ssp CSR may be read. */
static __attribute__((always_inline)) inline long
clone3_run(struct clone_args *args, size_t size,
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

#else
#error "shstk-lab guest programs support x86_64, arm64 and riscv64 (config/arches.ini)"
#endif

static inline long raw_syscall(long nr, long a1, long a2, long a3)
{
	return raw_syscall6(nr, a1, a2, a3, 0, 0, 0);
}

/*
 * The word at @addr of this process, read through /proc/self/mem rather
 * than loaded: a task with its shadow stack off cannot load from a shadow
 * stack page on riscv (with SSE clear the PTE encoding is reserved, and
 * Linux 7.3 retries that fault forever), and the programs read tokens from
 * both sides of enabling.  ~0 (never a token) if it cannot be read.
 */
static inline uint64_t shstk_peek(uint64_t addr)
{
	/* Opened per read: an fd kept across a fork reads the parent's memory. */
	long fd = raw_syscall(__NR_openat, -100 /* AT_FDCWD */, (long)"/proc/self/mem",
			      00 /* O_RDONLY */ | 02000000 /* O_CLOEXEC */);
	uint64_t v;
	long n;

	if (fd < 0)
		return ~0ULL;
	n = raw_syscall6(__NR_pread64, fd, (long)&v, sizeof(v), (long)addr, 0, 0);
	raw_syscall(__NR_close, fd, 0, 0);
	return n == sizeof(v) ? v : ~0ULL;
}

static inline __attribute__((noreturn)) void raw_exit(int code)
{
	for (;;)
		raw_syscall(__NR_exit, code, 0, 0);
}

/* map_shadow_stack(); returns the address or a negative errno. */
static inline long map_shadow_stack(unsigned long addr, unsigned long size,
				    unsigned int flags)
{
	return raw_syscall(__NR_map_shadow_stack, addr, size, flags);
}

/* The address of the token map_shadow_stack() put at the top. */
static inline uint64_t shstk_token_addr(unsigned long base, unsigned long size)
{
	return base + size - SHSTK_SLOT;
}

/*
 * Shadow stacks must be enabled from a function that never returns: the
 * frames below it were pushed without a shadow stack.  These helpers are
 * macros so that the enable happens in the caller's frame.
 */
#define shstk_enable() (shstk_enable_raw() == 0)

#endif /* SHSTK_LAB_SHSTK_H */
