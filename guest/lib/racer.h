/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One of two racers that clone3() with the same shadow stack token.  Run by
 * clone3_run() in a CLONE_VM child, with a struct token_racer: it spins
 * until *go is set, makes its own clone3() with args (the shared token) and
 * exits 0 if that made a child, else with the errno.  Raw system calls
 * only: the racers share their parent's memory, errno too.
 */
#ifndef SHSTK_LAB_RACER_H
#define SHSTK_LAB_RACER_H

#include <sys/wait.h>

#include "shstk.h"

struct token_racer {
	uint64_t ssp;		/* first: clone3_run() stores the entry SSP here */
	struct shstk_clone_args args;	/* the racer's clone3(), with the token */
	volatile int *go;	/* the start flag */
};

static inline long token_racer(void *arg, uint64_t ssp)
{
	struct token_racer *r = arg;
	long pid;

	while (!__atomic_load_n(r->go, __ATOMIC_ACQUIRE))
		;
	pid = clone3_run(&r->args, CLONE_ARGS_SIZE_VER3, NULL, NULL);
	if (pid > 0) {
		raw_syscall6(__NR_wait4, pid, 0, __WALL, 0, 0, 0);
		return 0;
	}
	return -pid;
}

#endif /* SHSTK_LAB_RACER_H */
