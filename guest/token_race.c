// SPDX-License-Identifier: GPL-2.0
/*
 * token_race: one round of the clone3() token race, small enough to record
 * and replay (make replay).  Two threads of one process clone3() with the
 * same shadow stack token; exactly one must get a child, which starts with
 * its shadow stack pointer at token + 8, and the other EINVAL, the word
 * having been consumed.
 *
 * The token's clone3() is the program's only clone3_run() call site, so the
 * global labels race_child_entry and race_parent_return mark where the
 * winner's child starts and where each racer sees its result; the racers
 * themselves are made with glibc's clone().  Under QEMU's record/replay
 * the guest has one CPU: the race is interleaved by the scheduler, not run
 * in parallel (make fuzz runs it in parallel, many rounds).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define SHSTK_CHILD_LABEL ".globl race_child_entry\nrace_child_entry:\n\t"
#define SHSTK_PARENT_LABEL ".globl race_parent_return\nrace_parent_return:\n\t"
#include "lib/shstk.h"
#include "lib/ktap.h"

#define PAGE 4096UL
#define STACK (64 * 1024)

bool shstk_enabled;

struct racer {
	struct shstk_clone_args args;
	long ret;		/* its clone3(): the child's pid, or -errno */
};

static int go;		/* read and written with __atomic builtins */
static struct racer racers[2];
static char racer_stacks[2][STACK] __attribute__((aligned(16)));
static char child_stacks[2][STACK] __attribute__((aligned(16)));

static int racer_fn(void *arg)
{
	struct racer *r = arg;

	/*
	 * One CPU under record/replay: let the other racer get ready.  Raw
	 * system calls only: the racers share the caller's TLS, errno too.
	 */
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		raw_syscall(__NR_sched_yield, 0, 0, 0);
	r->ret = clone3_run(&r->args, CLONE_ARGS_SIZE_VER3, NULL, NULL);
	if (r->ret > 0)
		raw_syscall6(__NR_wait4, r->ret, 0, __WALL, 0, 0, 0);
	return 0;
}

int main(void)
{
	const char *why = getenv("SHSTK_LAB_NO_SHSTK_WHY");
	int wins = 0, einval = 0, i;
	uint64_t token, word;
	pid_t pid[2];
	long base;

	ktap_plan(1);
	if (shstk_token_missing()) {
		ktap_result(0, "race_one_token_one_winner", shstk_token_missing());
		ktap_finish();
	}
	shstk_enabled = shstk_enable();
	if (!shstk_enabled) {
		ktap_result(0, "race_one_token_one_winner",
			    why ? why : "enabling shadow stacks failed: no token to race on");
		ktap_finish();
	}
	base = map_shadow_stack(0, PAGE, SHADOW_STACK_SET_TOKEN);
	if (base < 0 && base > -4096) {
		ktap_diag("map_shadow_stack: %s", strerror(-base));
		ktap_result(0, "race_one_token_one_winner", NULL);
		ktap_finish();
	}
	token = shstk_token_addr(base, PAGE);
	ktap_diag("token %#lx, word %#lx", (long)token, (long)shstk_peek(token));

	for (i = 0; i < 2; i++) {
		racers[i].args.flags = CLONE_VM;
		racers[i].args.exit_signal = SIGCHLD;
		racers[i].args.stack = (uint64_t)child_stacks[i];
		racers[i].args.stack_size = STACK;
		racers[i].args.shstk_token = token;
		pid[i] = clone(racer_fn, racer_stacks[i] + STACK, CLONE_VM | SIGCHLD, &racers[i]);
		if (pid[i] < 0)
			ktap_diag("clone racer %d: %s", i, strerror(errno));
	}
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	for (i = 0; i < 2; i++) {
		if (pid[i] > 0)
			waitpid(pid[i], NULL, __WALL);
		ktap_diag("racer %d (pid %d): clone3() -> %ld", i, pid[i], racers[i].ret);
		wins += racers[i].ret > 0;
		einval += racers[i].ret == -EINVAL;
	}
	word = shstk_peek(token);
	ktap_diag("token word after the race %#lx", (long)word);
	ktap_result(wins == 1 && einval == 1 && word == 0, "race_one_token_one_winner", NULL);
	ktap_finish();
}
