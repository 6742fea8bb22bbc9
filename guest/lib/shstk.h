/* SPDX-License-Identifier: GPL-2.0 */
/*
 * shstk-lab guest helpers: everything architecture specific that the guest
 * programs need, written once, in the architecture's header below.  Raw
 * system calls (so nothing returns through a libc wrapper on a shadow stack
 * it did not start on), reading the shadow stack pointer, enabling shadow
 * stacks, the token a kernel writes, and a clone3() that runs a function in
 * the child and exits.
 */
#ifndef SHSTK_LAB_SHSTK_H
#define SHSTK_LAB_SHSTK_H

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>	/* AUDIT_ARCH_*, for seccomp filters */
#include <linux/sched.h>	/* the kernel's struct clone_args, checked below */
#include <asm/unistd.h>

/*
 * struct clone_args as the series has it, the token the u64 at offset 88,
 * written out here as the clone3 selftests do: the programs then build
 * against the headers of any tree, with or without the series.
 */
struct shstk_clone_args {
	__aligned_u64 flags;
	__aligned_u64 pidfd;
	__aligned_u64 child_tid;
	__aligned_u64 parent_tid;
	__aligned_u64 exit_signal;
	__aligned_u64 stack;
	__aligned_u64 stack_size;
	__aligned_u64 tls;
	__aligned_u64 set_tid;
	__aligned_u64 set_tid_size;
	__aligned_u64 cgroup;
	__aligned_u64 shstk_token;
};

#ifndef CLONE_ARGS_SIZE_VER3
#define CLONE_ARGS_SIZE_VER3	96
#endif
static_assert(sizeof(struct shstk_clone_args) == CLONE_ARGS_SIZE_VER3,
	      "struct clone_args with the token is CLONE_ARGS_SIZE_VER3 long");

/*
 * scripts/build/guest.sh passes the name the kernel headers give the token
 * (shadow_stack_token up to v20 of the series, shstk_token since), so that
 * the layout above is checked against the kernel's; or, for headers without
 * it, SHSTK_NO_TOKEN, the reason every case that passes a token skips with.
 */
#if defined(SHSTK_TOKEN_FIELD)
static_assert(offsetof(struct clone_args, SHSTK_TOKEN_FIELD) ==
	      offsetof(struct shstk_clone_args, shstk_token),
	      "the kernel's token is the u64 at offset 88 of struct clone_args");
static_assert(sizeof(struct clone_args) >= CLONE_ARGS_SIZE_VER3,
	      "the kernel's struct clone_args ends at or after the token");
#elif defined(SHSTK_NO_TOKEN)
static_assert(sizeof(struct clone_args) == offsetof(struct shstk_clone_args, shstk_token),
	      "a struct clone_args without the token ends where the token would start");
#else
#error "scripts/build/guest.sh passes SHSTK_TOKEN_FIELD or SHSTK_NO_TOKEN, from the kernel headers"
#endif

/* Why the kernel built with these headers takes no token, or NULL. */
static inline const char *shstk_token_missing(void)
{
#ifdef SHSTK_NO_TOKEN
	return SHSTK_NO_TOKEN;
#else
	return NULL;
#endif
}

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

/*
 * Whether the /proc/cpuinfo line that starts with @field lists @flag, the
 * words of the line being separated by spaces or (riscv's isa string) by
 * underscores.
 */
static inline bool shstk_cpuinfo_has(const char *field, const char *flag)
{
	size_t field_len = strlen(field), flag_len = strlen(flag), cap = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");
	char *line = NULL, *p;
	bool found = false;

	while (f && !found && getline(&line, &cap, f) > 0) {
		if (strncmp(line, field, field_len) || !strchr(" \t:", line[field_len]))
			continue;
		p = strchr(line, ':');
		while (p && !found && (p = strstr(p + 1, flag)))
			found = strchr(" _", p[-1]) && strchr(" _\n", p[flag_len]);
	}
	free(line);
	if (f)
		fclose(f);
	return found;
}

/*
 * The architecture's part, one header per architecture of
 * config/arches.ini.  Each defines SHSTK_ARCH_NAME; raw_syscall6(); the
 * shadow stack pointer, read_ssp(); the tokens the kernel writes,
 * shstk_expected_token() (map_shadow_stack()'s) and shstk_signal_token() (a
 * signal frame's); the call that enables shadow stacks, SHSTK_ENABLE_NR and
 * SHSTK_ENABLE_ARG0/1, with SHSTK_AUDIT_ARCH for a seccomp filter on it;
 * shstk_cpu_has(), whether the CPU offers user shadow stacks; clone3_run();
 * shstk_forged_return(); SHSTK_TAGGED_TOKEN_ERRNO, what clone3() returns for
 * a token address with a tag in its top byte; and SHSTK_USER_ADDR_END and
 * SHSTK_KERNEL_ADDR, where user addresses end and one of the kernel's.
 */
#if defined(__x86_64__)
#include "arch-x86_64.h"
#elif defined(__aarch64__)
#include "arch-arm64.h"
#elif defined(__riscv) && __riscv_xlen == 64
#include "arch-riscv64.h"
#else
#error "shstk-lab guest programs support x86_64, arm64 and riscv64 (config/arches.ini)"
#endif

/* Returns through a return address it overwrote: see the arch header. */
void shstk_forged_return(void);

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
 * A new shadow stack of @size from map_shadow_stack(@flags): the address of
 * its top slot, the token's with SHADOW_STACK_SET_TOKEN, or 0 if it cannot
 * be mapped.  *base, if given, gets the address of the mapping.
 */
static inline uint64_t shstk_map_token(unsigned long size, unsigned int flags,
				       unsigned long *base)
{
	long addr = map_shadow_stack(0, size, flags);

	if (addr < 0 && addr > -4096)
		return 0;
	if (base)
		*base = addr;
	return shstk_token_addr(addr, size);
}

/*
 * Why a case that needs shadow stacks skips on a CPU without them, with the
 * reason the emulator declares (init's SHSTK_LAB_NO_SHSTK_WHY) if there is
 * one.
 */
static inline const char *shstk_no_cpu_reason(void)
{
	const char *why = getenv("SHSTK_LAB_NO_SHSTK_WHY");
	static char reason[256];

	snprintf(reason, sizeof(reason), "CPU has no user shadow stack%s%s%s",
		 why ? " (" : "", why ? why : "", why ? ")" : "");
	return reason;
}

/*
 * Shadow stacks must be enabled from a function that never returns: the
 * frames below it were pushed without a shadow stack.  These helpers are
 * macros so that the enable happens in the caller's frame.
 */
#define shstk_enable_raw() \
	raw_syscall6(SHSTK_ENABLE_NR, SHSTK_ENABLE_ARG0, SHSTK_ENABLE_ARG1, 0, 0, 0, 0)
#define shstk_enable() (shstk_enable_raw() == 0)

#endif /* SHSTK_LAB_SHSTK_H */
