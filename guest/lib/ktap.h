/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal KTAP v1 output for the guest programs: a plan, one line per test
 * point ("ok N name", "not ok N name", "ok N name # SKIP reason", kselftest's
 * "ok N name # XFAIL reason" for a failure the kernel is known to have) and
 * "# " diagnostics.  Lines of the form "# metric: NAME=VALUE" are
 * measurements the host collects into results.json.
 */
#ifndef SHSTK_LAB_KTAP_H
#define SHSTK_LAB_KTAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned int ktap_seq, ktap_failed, ktap_skipped, ktap_passed, ktap_xfailed;

static inline void ktap_plan(unsigned int n)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("KTAP version 1\n1..%u\n", n);
}

static inline __attribute__((format(printf, 1, 2))) void ktap_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
}

static inline void ktap_result(int ok, const char *name, const char *skip)
{
	ktap_seq++;
	if (skip) {
		ktap_skipped++;
		printf("ok %u %s # SKIP %s\n", ktap_seq, name, skip);
	} else if (ok) {
		ktap_passed++;
		printf("ok %u %s\n", ktap_seq, name);
	} else {
		ktap_failed++;
		printf("not ok %u %s\n", ktap_seq, name);
	}
}

/* A failure the kernel is known to have, and why: not counted as one. */
static inline void ktap_result_xfail(const char *name, const char *why)
{
	ktap_seq++;
	ktap_xfailed++;
	printf("ok %u %s # XFAIL %s\n", ktap_seq, name, why);
}

static inline __attribute__((noreturn)) void ktap_finish(void)
{
	printf("# totals: pass:%u fail:%u skip:%u", ktap_passed, ktap_failed, ktap_skipped);
	if (ktap_xfailed)
		printf(" xfail:%u", ktap_xfailed);
	putchar('\n');
	fflush(stdout);
	exit(ktap_failed ? 1 : 0);
}

#endif /* SHSTK_LAB_KTAP_H */
