// SPDX-License-Identifier: GPL-2.0
/*
 * shstk_gdb: the scenario `make gdb-check` and `make debug` step through.
 * One clone3() with a user shadow stack, then the refused ones, in a fixed
 * order, each through the single clone3_run() call site so that the global
 * labels shstk_child_entry and shstk_parent_return mark where the child
 * starts and where the caller sees clone3()'s result.
 *
 *   1 valid      a fresh token: the child starts at token + 8
 *   2 misaligned token - 1: EINVAL before any task is made
 *   3 no_token   a shadow stack page without a token: EINVAL
 *   4 normal     a word in ordinary memory: EFAULT
 *   5 reused     the token of case 1, consumed: EINVAL
 *
 * Where shadow stacks cannot be enabled (x86 under QEMU) every case passes
 * an aligned word in ordinary memory instead, which the kernel refuses with
 * EINVAL because the caller has no shadow stack.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define SHSTK_CHILD_LABEL ".globl shstk_child_entry\nshstk_child_entry:\n\t"
#define SHSTK_PARENT_LABEL ".globl shstk_parent_return\nshstk_parent_return:\n\t"
#include "lib/shstk.h"
#include "lib/ktap.h"

#define PAGE 4096UL

bool shstk_enabled;

/*
 * struct clone_args straddles a page boundary, its shadow_stack_token on the
 * second page, so gdb reads it across two pages on every run.  On the stack
 * it did so only when ASLR put it there, and that is how a reader that
 * took the second half from the wrong physical page went unseen.
 */
static char args_pages[2 * PAGE] __attribute__((aligned(PAGE)));
#define ARGS_OFFSET (PAGE - 64)

static __attribute__((noinline)) long scenario_clone3(uint64_t token)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	static uint64_t child_ssp;
	struct clone_args *args = (struct clone_args *)(args_pages + ARGS_OFFSET);
	long pid;
	int status;

	memset(args, 0, sizeof(*args));
	args->flags = CLONE_VM;
	args->exit_signal = SIGCHLD;
	args->stack = (uint64_t)stack;
	args->stack_size = sizeof(stack);
	args->shadow_stack_token = token;
	pid = clone3_run(args, CLONE_ARGS_SIZE_VER3, NULL, &child_ssp);
	if (pid > 0) {
		waitpid(pid, &status, __WALL);
		ktap_diag("child %ld started with ssp %#lx", pid, (long)child_ssp);
		return 0;
	}
	return pid;
}

struct scenario {
	const char *name;
	uint64_t token;
	long want;		/* what clone3() must return */
};

static uint64_t map_token(unsigned long flags)
{
	long base = map_shadow_stack(0, PAGE, flags);

	return base < 0 && base > -4096 ? 0 : shstk_token_addr(base, PAGE);
}

int main(void)
{
	static uint64_t normal[PAGE / 8] __attribute__((aligned(4096)));
	uint64_t fallback = (uint64_t)&normal[PAGE / 8 - 1];
	uint64_t valid = fallback, no_token = fallback;
	long valid_want = -EINVAL, normal_want = -EINVAL;
	struct scenario cases[5];
	int i;

	shstk_enabled = shstk_enable();
	if (shstk_enabled) {
		valid = map_token(SHADOW_STACK_SET_TOKEN);
		no_token = map_token(0);
		valid_want = 0;
		normal_want = -EFAULT;
	}
	cases[0] = (struct scenario){ "valid", valid, valid_want };
	cases[1] = (struct scenario){ "misaligned", valid - 1, -EINVAL };
	cases[2] = (struct scenario){ "no_token", no_token, -EINVAL };
	cases[3] = (struct scenario){ "normal", fallback, normal_want };
	cases[4] = (struct scenario){ "reused", valid, -EINVAL };

	ktap_plan(ARRAY_SIZE(cases));
	ktap_diag("shadow stack %s", shstk_enabled ? "enabled" : "not available");
	for (i = 0; i < (int)ARRAY_SIZE(cases); i++) {
		long ret = scenario_clone3(cases[i].token);

		ktap_diag("%s: token %#lx -> %ld (want %ld)", cases[i].name,
			  (long)cases[i].token, ret, cases[i].want);
		ktap_result(ret == cases[i].want, cases[i].name, NULL);
	}
	ktap_finish();
}
