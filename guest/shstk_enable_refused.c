// SPDX-License-Identifier: GPL-2.0
/*
 * shstk_enable_refused: run a program (the clone3 selftest by default) in a
 * process that can map shadow stacks but cannot enable them, the state a
 * dynamic linker leaves when it locks shadow stacks off.  A seccomp filter,
 * which exec keeps, fails the enabling call with EPERM: on x86
 * arch_prctl(ARCH_SHSTK_ENABLE), elsewhere any prctl(PR_SET_SHADOW_STACK_STATUS)
 * (disabling too, which nothing here needs).  Every other call,
 * map_shadow_stack() among them, goes through; x32 calls are refused.
 *
 *   shstk_enable_refused [PROGRAM [ARG...]]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

#include "lib/shstk.h"

bool shstk_enabled;

/* Where scripts/build/guest.sh puts the kernel's clone3 selftest. */
#define CLONE3_SELFTEST "/tests/ksft/clone3/clone3"

static int refuse_shstk_enable(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SHSTK_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		/* x32's numbers (x86 only) would pass the test below. */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SHSTK_ENABLE_NR, 0, 3),
		/* The low word of the first argument: both values fit in it. */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SHSTK_ENABLE_ARG0, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = ARRAY_SIZE(code), .filter = code };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -errno;
	return 0;
}

int main(int argc, char *argv[])
{
	static char *const selftest[] = { CLONE3_SELFTEST, NULL };
	char *const *run = argc > 1 ? argv + 1 : selftest;
	int ret;

	ret = refuse_shstk_enable();
	if (ret) {
		printf("# shstk_enable_refused: seccomp filter: %s\n", strerror(-ret));
		return 1;
	}
	/* The filter is in place only if enabling now fails. */
	ret = shstk_enable_raw();
	if (ret != -EPERM) {
		/* No return from here: shadow stacks may be on now. */
		printf("# shstk_enable_refused: enabling returned %d under the filter, not %d\n",
		       ret, -EPERM);
		fflush(stdout);
		_exit(1);
	}
	fflush(stdout);
	execv(run[0], run);
	printf("# shstk_enable_refused: exec %s: %s\n", run[0], strerror(errno));
	return 1;
}
