/* SPDX-License-Identifier: GPL-2.0 */
/*
 * x86_64's part of lib/shstk.h: CET user shadow stacks, enabled with
 * arch_prctl(ARCH_SHSTK_ENABLE).  Included by lib/shstk.h only.
 */
#ifndef SHSTK_LAB_ARCH_H
#define SHSTK_LAB_ARCH_H

#ifndef SHSTK_LAB_SHSTK_H
#error "include lib/shstk.h, which includes this header for its architecture"
#endif

#define SHSTK_ARCH_NAME		"x86_64"
#define ARCH_SHSTK_ENABLE	0x5001
#define ARCH_SHSTK_DISABLE	0x5002
#define ARCH_SHSTK_SHSTK	(1ULL << 0)
#define ARCH_SHSTK_WRSS		(1ULL << 1)

/* The call that enables shadow stacks: its number and arguments. */
#define SHSTK_ENABLE_NR		__NR_arch_prctl
#define SHSTK_ENABLE_ARG0	ARCH_SHSTK_ENABLE
#define SHSTK_ENABLE_ARG1	ARCH_SHSTK_SHSTK
#define SHSTK_AUDIT_ARCH	AUDIT_ARCH_X86_64
/* An address with a tag in its top byte: no tagging here, so not a user one. */
#define SHSTK_TAGGED_TOKEN_ERRNO	EFAULT

/* Where user addresses end (TASK_SIZE with 4-level paging). */
#define SHSTK_USER_ADDR_END	0x00007ffffffff000ULL
/* An address in the kernel's text. */
#define SHSTK_KERNEL_ADDR	0xffffffff81000000ULL

/*
 * The CPU offers user shadow stacks: the /proc/cpuinfo line init reads too
 * (config/arches.ini's cpuinfo_field and cpuinfo_flag) lists them.
 */
static inline bool shstk_cpu_has(void)
{
	return shstk_cpuinfo_has("flags", "user_shstk");
}

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

/*
 * shstk_forged_return() overwrites its own return address and returns: with
 * a shadow stack that is a control protection fault (SIGSEGV, SEGV_CPERR);
 * without one it lands on an undefined instruction (SIGILL).
 */
asm (".pushsection .text\n"
	".globl shstk_forged_return\n"
	"shstk_forged_return:\n"
	"	lea 1f(%rip), %rax\n"
	"	mov %rax, (%rsp)\n"
	"	ret\n"
	"1:	ud2\n"
	".popsection\n");

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
clone3_run(struct shstk_clone_args *args, size_t size,
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

#endif /* SHSTK_LAB_ARCH_H */
