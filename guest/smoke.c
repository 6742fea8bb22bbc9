// SPDX-License-Identifier: GPL-2.0
/*
 * smoke: is the series in the booted kernel?  clone3() with the 96-byte
 * struct (CLONE_ARGS_SIZE_VER3) and a zero token must create a child; a
 * misaligned token must be refused with EINVAL, which an unpatched kernel
 * cannot do (it refuses the unknown field with E2BIG).  Built for a tree
 * without the series, the second case skips.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "lib/shstk.h"
#include "lib/ktap.h"

bool shstk_enabled;

static long smoke_clone3(uint64_t token)
{
	struct shstk_clone_args args;
	long pid;
	int status;

	memset(&args, 0, sizeof(args));
	args.exit_signal = SIGCHLD;
	args.shstk_token = token;
	pid = clone3_run(&args, CLONE_ARGS_SIZE_VER3, NULL, NULL);
	if (pid > 0 && (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
			WEXITSTATUS(status)))
		return -1000;
	return pid > 0 ? 0 : pid;
}

int main(void)
{
	long ret;

	ktap_plan(2);
	ret = smoke_clone3(0);
	ktap_diag("clone3(size 96, token 0) = %ld", ret);
	ktap_result(ret == 0, "clone3_size96_zero_token_ok", NULL);
	if (shstk_token_missing()) {
		ktap_result(0, "clone3_misaligned_token_einval", shstk_token_missing());
		ktap_finish();
	}
	ret = smoke_clone3(0x1001);
	ktap_diag("clone3(size 96, token 0x1001) = %ld (want %d)", ret, -EINVAL);
	ktap_result(ret == -EINVAL, "clone3_misaligned_token_einval", NULL);
	ktap_finish();
}
