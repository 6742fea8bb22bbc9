// SPDX-License-Identifier: GPL-2.0
/*
 * shstk_gdb: the scenario `make gdb-check`, `make trace` and `make debug`
 * step through.  One clone3() with a user shadow stack, then the refused
 * ones, in a fixed order, each through the single clone3_run() call site so
 * that the global labels shstk_child_entry and shstk_parent_return mark
 * where the child starts and where the caller sees clone3()'s result.
 *
 * The cases, their tokens and what clone3() must return are described once,
 * in spec/scenario.py, which the gdb script and the checkers read too;
 * scripts/build/guest.sh writes them as shstk_scenario.h for this program.
 * Here is only how each kind of token is made.
 *
 * Where shadow stacks cannot be enabled (x86 under QEMU) every kind but the
 * misaligned one is an aligned word in ordinary memory, which the kernel
 * refuses with EINVAL because the caller has no shadow stack.
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
#include "shstk_scenario.h"

#define PAGE 4096UL

bool shstk_enabled;

/*
 * struct shstk_clone_args straddles a page boundary, its token field on the
 * second page, so gdb reads it across two pages on every run, where on the
 * stack it would do so only when ASLR put it there: a reader that takes
 * the second half from the wrong physical page cannot go unseen.
 */
static char args_pages[2 * PAGE] __attribute__((aligned(PAGE)));
#define ARGS_OFFSET (PAGE - 64)

static __attribute__((noinline)) long scenario_clone3(uint64_t token)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	static uint64_t child_ssp;
	struct shstk_clone_args *args = (struct shstk_clone_args *)(args_pages + ARGS_OFFSET);
	long pid;
	int status;

	memset(args, 0, sizeof(*args));
	args->flags = CLONE_VM;
	args->exit_signal = SIGCHLD;
	args->stack = (uint64_t)stack;
	args->stack_size = sizeof(stack);
	args->shstk_token = token;
	pid = clone3_run(args, CLONE_ARGS_SIZE_VER3, NULL, &child_ssp);
	if (pid > 0) {
		waitpid(pid, &status, __WALL);
		ktap_diag("child %ld started with ssp %#lx", pid, (long)child_ssp);
		return 0;
	}
	return pid;
}

int main(void)
{
	static uint64_t normal[PAGE / 8] __attribute__((aligned(4096)));
	uint64_t ordinary = (uint64_t)&normal[PAGE / 8 - 1];
	uint64_t tokens[] = {
		[SCENARIO_STACK_TOKEN] = ordinary,
		[SCENARIO_STACK_WITHOUT_TOKEN] = ordinary,
		[SCENARIO_ORDINARY_MEMORY] = ordinary,
	};
	const char *why = getenv("SHSTK_LAB_NO_SHSTK_WHY");
	size_t i;

	shstk_enabled = shstk_enable();
	if (shstk_enabled) {
		tokens[SCENARIO_STACK_TOKEN] = shstk_map_token(PAGE, SHADOW_STACK_SET_TOKEN, NULL);
		tokens[SCENARIO_STACK_WITHOUT_TOKEN] = shstk_map_token(PAGE, 0, NULL);
	}
	tokens[SCENARIO_STACK_TOKEN_MINUS_1] = tokens[SCENARIO_STACK_TOKEN] - 1;

	ktap_plan(ARRAY_SIZE(scenario_cases));
	if (shstk_enabled)
		ktap_diag("shadow stack enabled");
	else
		ktap_diag("shadow stack not available: %s",
			  why ? why : "enabling shadow stacks failed");
	for (i = 0; i < ARRAY_SIZE(scenario_cases); i++) {
		const struct scenario_case *c = &scenario_cases[i];
		uint64_t token = tokens[c->token];
		long want = shstk_enabled ? c->want_with_shstk : c->want_without_shstk;
		long ret;

		if (shstk_token_missing()) {
			ktap_result(0, c->name, shstk_token_missing());
			continue;
		}
		ret = scenario_clone3(token);
		ktap_diag("%s: token %#lx -> %ld (want %ld)", c->name, (long)token, ret, want);
		ktap_result(ret == want, c->name, NULL);
	}
	ktap_finish();
}
