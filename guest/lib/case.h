/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test cases declared where they are defined.  CASE(fn, properties...)
 * starts the definition of the case function fn, which KTAP names "fn",
 * with its properties as designated initializers of struct guest_case:
 *
 *	CASE(token_consumed, .needs_shstk = true)
 *	{
 *		CHECK(token, "map_shadow_stack failed");
 *		return PASS;
 *	}
 *
 * Each case leaves a pointer to its description in the section guest_cases;
 * case_list() returns them in the order of the source, by file and line,
 * which is the order the program runs and numbers them in.
 *
 * case_options() takes the program's command line: "-t GLOB", as often as
 * needed, runs only the cases whose names match one of the globs, as
 * kselftest's harness takes -t; the others are still numbered, and
 * reported skipped (make's TESTS= chooses cases this way, guest/init.sh).
 */
#ifndef SHSTK_LAB_CASE_H
#define SHSTK_LAB_CASE_H

#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ktap.h"

/* What a case function returns (a child's exit status, where one runs it). */
enum { PASS, FAIL, SKIP };

/* A fix the series carries: its patch's subject, and the arch it fixes. */
struct series_fix {
	const char *arch;
	const char *subject;
};

struct guest_case {
	const char *name;
	int (*run)(void);
	const char *file;	/* where it is defined: its place in the list */
	unsigned int line;
	/* Properties: each program reads the ones its driver knows. */
	bool needs_shstk;	/* skipped where shadow stacks cannot be on */
	bool needs_token;	/* skipped where clone_args has no token */
	const struct series_fix *series_fix;	/* the series' fix it checks */
	bool before_enable;	/* runs before the program enables them */
	int exit_status;	/* what the child running the case exits with */
};

#define CASE(fn, ...)							\
	static int fn(void);						\
	static const struct guest_case fn##_case = {			\
		.name = #fn, .run = fn, .file = __FILE__, .line = __LINE__, __VA_ARGS__	\
	};								\
	static const struct guest_case *fn##_case_entry		\
		__attribute__((used, section("guest_cases"))) = &fn##_case; \
	static int fn(void)

/* The linker's bounds of the section. */
extern const struct guest_case *__start_guest_cases[];
extern const struct guest_case *__stop_guest_cases[];

static inline int case_line_cmp(const void *a, const void *b)
{
	const struct guest_case *x = *(const struct guest_case *const *)a;
	const struct guest_case *y = *(const struct guest_case *const *)b;
	int by_file = strcmp(x->file, y->file);

	if (by_file)
		return by_file;
	return (x->line > y->line) - (x->line < y->line);
}

/*
 * The cases in the order of the source: sorted by file and line, the
 * compiler and the linker being free to emit them in any order.  *n gets
 * their number.
 */
static inline const struct guest_case *const *case_list(size_t *n)
{
	*n = __stop_guest_cases - __start_guest_cases;
	qsort(__start_guest_cases, *n, sizeof(*__start_guest_cases), case_line_cmp);
	return __start_guest_cases;
}

/* The skip reason of a case -t left out, which the host's report knows. */
#define CASE_NOT_SELECTED	"not selected by TESTS="

/* The -t globs of the command line; none: every case runs. */
static const char **case_globs;
static int case_nglobs;

static inline __attribute__((noreturn)) void case_usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-t CASE-GLOB]...\n", prog);
	exit(2);
}

/*
 * Take the program's options: "-t GLOB" (repeated) chooses the cases to run.
 * Anything else ends the program with its usage, before any KTAP line.
 */
static inline void case_options(int argc, char **argv)
{
	int opt;

	/* Never more globs than words on the command line. */
	case_globs = calloc(argc, sizeof(*case_globs));
	if (!case_globs) {
		perror("calloc");
		exit(1);
	}
	while ((opt = getopt(argc, argv, "t:")) != -1) {
		if (opt != 't')
			case_usage(argv[0]);
		case_globs[case_nglobs++] = optarg;
	}
	if (optind < argc)
		case_usage(argv[0]);
}

/* Whether the case @c is to run: no -t given, or one whose glob it matches. */
static inline bool case_selected(const struct guest_case *c)
{
	int i;

	if (!case_nglobs)
		return true;
	for (i = 0; i < case_nglobs; i++) {
		if (!fnmatch(case_globs[i], c->name, 0))
			return true;
	}
	return false;
}

/* A failed condition: where, what, and the message, then FAIL. */
#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			ktap_diag("%s:%d: FAILED: %s", __FILE__, __LINE__, #cond); \
			__VA_OPT__(ktap_diag(__VA_ARGS__);)		\
			return FAIL;					\
		}							\
	} while (0)

/* Why the last case that returned SKIP skipped. */
static char skipped_why[256] __attribute__((unused));

/* A case that cannot run here says why and returns SKIP. */
#define SKIP_CASE(...)							\
	do {								\
		snprintf(skipped_why, sizeof(skipped_why),	\
			 __VA_ARGS__);					\
		return SKIP;						\
	} while (0)

#endif /* SHSTK_LAB_CASE_H */
