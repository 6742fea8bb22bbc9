// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_clone3: clone3() with generated arguments, every result checked
 * against a model of the ABI, then a race on one token.
 *
 * Each call draws a token kind, a struct size, a flag set and whether the
 * caller has shadow stacks (the first half of the calls run in a child that
 * never enables them).  Invariants, on every call:
 *   - the result is the one the model predicts (success only with a valid
 *     token or none, and the errno the ABI defines otherwise);
 *   - a child started with a token has its shadow stack pointer at token + 8;
 *   - a refused call leaves the token word as it was;
 *   - the errno is one the ABI defines (EINVAL, EFAULT, E2BIG).
 * Seeded and reproducible: SHSTK_SEED (or shstk.seed= on the kernel command
 * line) and SHSTK_FUZZ_CALLS / SHSTK_FUZZ_ROUNDS; a failure prints the seed
 * and the arguments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "lib/shstk.h"
#include "lib/ktap.h"
#include "lib/env.h"
#include "lib/racer.h"

#define PAGE		4096UL
#define STACK		(32 * 1024UL)
#define MAX_REPORTS	8

bool shstk_enabled;

enum token_kind {
	TK_NONE, TK_VALID, TK_CONSUMED, TK_MISALIGNED, TK_SS_OFFSET, TK_NORMAL,
	TK_NORMAL_PAGE_END, TK_UNMAPPED, TK_KERNEL, TK_NONCANONICAL, TK_TOP_PAGE,
	TK_NR
};

static const char * const kind_names[TK_NR] = {
	"none", "valid", "consumed", "misaligned", "ss_offset", "normal",
	"normal_page_end", "unmapped", "kernel", "noncanonical", "top_page",
};

/*
 * A token at or above SHSTK_USER_ADDR_END (lib/arch-*.h) is not a user
 * address.  Where a kernel has more than that (5-level paging, 52-bit VAs),
 * or a riscv one less, the addresses in between are unmapped user ones or
 * not user ones, and nothing drawn here is mapped there: EFAULT all the
 * same.  No kind draws a tagged address (arm64 TBI), which would be a user
 * address above it.
 */

struct call {
	enum token_kind kind;
	uint64_t token;
	unsigned long mapped;	/* a shadow stack mapped for this call, or 0 */
	size_t size;
	uint64_t flags;
	bool tail;		/* a non-zero word past the known struct */
	bool word_readable;
	uint64_t word_before;
};

/* Shared with the children: where they report their entry SSP. */
struct shared {
	uint64_t ssp[MAX_REPORTS];
	unsigned long calls, failures, successes, consumed_after_failure;
	unsigned long by_errno[3];	/* EINVAL, EFAULT, E2BIG */
};

static struct shared *sh;
static uint64_t rng;
static char *stack_area;
static uint64_t *normal_page;
/* The last token a child took in this process's own memory (CLONE_VM). */
static uint64_t last_consumed;

static uint64_t next_rand(void)
{
	/* xorshift64*: small, fast, reproducible from the seed */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ULL;
}

static unsigned int pick(unsigned int n)
{
	return next_rand() % n;
}

static uint64_t fresh_token(void)
{
	return shstk_map_token(PAGE, SHADOW_STACK_SET_TOKEN, NULL);
}

/* The one-page shadow stack a fresh_token() lies in. */
static void *token_stack(uint64_t token)
{
	return (void *)(token + SHSTK_SLOT - PAGE);
}

/*
 * A token of the drawn kind; *mapped gets the shadow stack mapped for it, so
 * that the caller can unmap it after the call (a long run would otherwise
 * pile up tens of thousands of VMAs).
 */
static uint64_t make_token(enum token_kind kind, unsigned long *mapped)
{
	uint64_t t;
	long base;

	switch (kind) {
	case TK_NONE:
		return 0;
	case TK_VALID:
		t = fresh_token();
		*mapped = t ? (unsigned long)token_stack(t) : 0;
		return t;
	case TK_CONSUMED:
		return last_consumed;
	case TK_MISALIGNED:
		t = fresh_token();
		*mapped = t ? (unsigned long)token_stack(t) : 0;
		return t ? t - 1 - pick(7) : 0x1001;
	case TK_SS_OFFSET:
		base = map_shadow_stack(0, PAGE, pick(2) ? SHADOW_STACK_SET_TOKEN : 0);
		if (base < 0 && base > -4096)
			return 0;
		*mapped = base;
		/* any 8-byte slot but the token's own */
		return base + 8 * pick(PAGE / 8 - 1);
	case TK_NORMAL:
		return (uint64_t)&normal_page[pick(PAGE / 8)];
	case TK_NORMAL_PAGE_END:
		return (uint64_t)&normal_page[PAGE / 8 - 1];
	case TK_UNMAPPED:
		return 0x10000 + 8 * pick(64);
	case TK_KERNEL:
		return SHSTK_KERNEL_ADDR + 8 * pick(1024);
	case TK_NONCANONICAL:
		return 0x0080000000000000ULL + 8 * pick(1024);
	case TK_TOP_PAGE:
		/* x86's SSP, token + 8, would read as an errno here */
		return 0xfffffffffffff000ULL + 8 * pick(PAGE / 8);
	default:
		return 0;
	}
}

/*
 * The model: what clone3() must return for this call (0 = success), from the
 * order the kernel checks things in (docs/abi.md).
 */
static long expected(const struct call *c)
{
	uint64_t t = 0;

	/*
	 * A struct that ends inside the token field gives the kernel its low
	 * bytes only (the rest reads as zero).  When that changes the address,
	 * the kernel looks at another one, where nothing drawn here is
	 * mapped: EFAULT (below), whether it is still above
	 * SHSTK_USER_ADDR_END or not.
	 */
	if (c->size >= CLONE_ARGS_SIZE_VER3)
		t = c->token;
	else if (c->size > CLONE_ARGS_SIZE_VER2)
		t = c->token & ((1ULL << (8 * (c->size - CLONE_ARGS_SIZE_VER2))) - 1);

	if (c->size > PAGE)
		return -E2BIG;
	if (c->size < CLONE_ARGS_SIZE_VER0)
		return -EINVAL;
	if (c->tail && c->size > CLONE_ARGS_SIZE_VER3)
		return -E2BIG;
	if (!t)
		return 0;
	if (t % 8)
		return -EINVAL;
	if (!shstk_enabled)
		return -EINVAL;
	/* Not a user address: EFAULT on both arches, after the EINVALs above. */
	if (t >= SHSTK_USER_ADDR_END)
		return -EFAULT;
	if (t != c->token)
		return -EFAULT;
	switch (c->kind) {
	case TK_VALID:
		return 0;
	case TK_CONSUMED:
	case TK_SS_OFFSET:
	case TK_MISALIGNED:
		return -EINVAL;
	default:
		return -EFAULT;
	}
}

static void describe(const struct call *c, long ret, long want, const char *what)
{
	ktap_diag("FAIL seed %#lx call %lu: %s: kind %s token %#lx size %zu flags %#lx tail %d shstk %d -> %ld (model %ld)",
		  (long)rng, sh->calls, what, kind_names[c->kind], (long)c->token, c->size,
		  (long)c->flags, c->tail, shstk_enabled, ret, want);
	sh->failures++;
}

static void one_call(void)
{
	static const uint64_t flag_sets[] = {
		0, CLONE_VM, CLONE_VFORK, CLONE_VM | CLONE_VFORK,
		CLONE_VM | CLONE_THREAD | CLONE_SIGHAND | CLONE_CHILD_CLEARTID,
	};
	static volatile int ctid;
	static const size_t sizes[] = {
		CLONE_ARGS_SIZE_VER0, CLONE_ARGS_SIZE_VER1, CLONE_ARGS_SIZE_VER2,
		CLONE_ARGS_SIZE_VER3, CLONE_ARGS_SIZE_VER3, CLONE_ARGS_SIZE_VER3,
		CLONE_ARGS_SIZE_VER3 + 8, 95, 97, 56, PAGE + 8,
	};
	struct {
		struct shstk_clone_args args;
		uint64_t tail[(PAGE + 16) / 8];
	} *ext = (void *)(stack_area + 6 * STACK);
	struct call c = { 0 };
	long ret, want;
	int status;

	c.kind = pick(TK_NR);
	c.token = make_token(c.kind, &c.mapped);
	c.size = sizes[pick(ARRAY_SIZE(sizes))];
	c.flags = flag_sets[pick(ARRAY_SIZE(flag_sets))];
	c.tail = pick(2);
	c.word_readable = c.kind == TK_VALID || c.kind == TK_CONSUMED ||
			  c.kind == TK_SS_OFFSET || c.kind == TK_NORMAL ||
			  c.kind == TK_NORMAL_PAGE_END;
	c.word_readable = c.word_readable && c.token && !(c.token % 8);
	if (c.word_readable)
		c.word_before = shstk_peek(c.token);

	memset(&ext->args, 0, sizeof(ext->args));
	ext->args.flags = c.flags;
	/* A thread has no exit signal; its exit clears ctid instead. */
	ext->args.exit_signal = c.flags & CLONE_THREAD ? 0 : SIGCHLD;
	ext->args.child_tid = (uint64_t)&ctid;
	ctid = -1;
	ext->args.shstk_token = c.token;
	if (c.flags & CLONE_VM) {
		ext->args.stack = (uint64_t)stack_area;
		ext->args.stack_size = STACK;
	}
	memset(ext->tail, 0, 16);
	if (c.tail)
		ext->tail[0] = 1;	/* the word right after the 96-byte struct */
	sh->ssp[0] = 0;

	want = expected(&c);
	sh->calls++;
	ret = clone3_run(&ext->args, c.size, NULL, &sh->ssp[0]);
	if (ret > 0 && (c.flags & CLONE_THREAD)) {
		while (ctid != 0)
			sched_yield();
	} else if (ret > 0) {
		if (waitpid(ret, &status, __WALL) != ret || !WIFEXITED(status))
			describe(&c, ret, want, "child did not exit cleanly");
	}
	if (ret > 0) {
		sh->successes++;
		if (want != 0)
			describe(&c, ret, want, "succeeded against the model");
		else if (c.token && c.size >= CLONE_ARGS_SIZE_VER3 && shstk_enabled &&
			 sh->ssp[0] != c.token + SHSTK_SLOT)
			describe(&c, ret, want, "child's ssp is not token + 8");
		/* Without CLONE_VM only the child's copy was consumed. */
		if (c.kind == TK_VALID && c.size >= CLONE_ARGS_SIZE_VER3 && (c.flags & CLONE_VM)) {
			if (last_consumed)
				munmap(token_stack(last_consumed), PAGE);
			last_consumed = c.token;
			return;		/* kept mapped for TK_CONSUMED */
		}
		if (c.mapped)
			munmap((void *)c.mapped, PAGE);
		return;
	}
	if (ret == -EINVAL)
		sh->by_errno[0]++;
	else if (ret == -EFAULT)
		sh->by_errno[1]++;
	else if (ret == -E2BIG)
		sh->by_errno[2]++;
	else
		describe(&c, ret, want, "an errno the ABI does not define");
	if (ret != want)
		describe(&c, ret, want, "not the model's result");
	if (c.word_readable && shstk_peek(c.token) != c.word_before) {
		describe(&c, ret, want, "refused, yet the token word changed");
		sh->consumed_after_failure++;
	}
	if (c.mapped)
		munmap((void *)c.mapped, PAGE);
}

static void fuzz(unsigned long calls)
{
	unsigned long i;

	for (i = 0; i < calls; i++) {
		one_call();
		/*
		 * Progress on a long run, with enough to resume from it; often
		 * at first, so a slow emulator shows its rate early.
		 */
		if (sh->calls % 10000 == 0 || (sh->calls < 10000 && sh->calls % 1000 == 0))
			ktap_diag("progress: %lu calls, %lu failures", sh->calls, sh->failures);
	}
}

/* The race: two threads clone3() with one token at once, many rounds. */
static unsigned long race(unsigned long rounds)
{
	static volatile int go;
	static struct token_racer racers[2];
	unsigned long round, bad = 0;
	int i;

	for (round = 0; round < rounds; round++) {
		uint64_t token = fresh_token();
		long pid[2];
		int st[2], wins = 0, einval = 0;
		struct shstk_clone_args ra;

		go = 0;
		for (i = 0; i < 2; i++) {
			memset(&racers[i], 0, sizeof(racers[i]));
			racers[i].args.flags = CLONE_VM;
			racers[i].args.exit_signal = SIGCHLD;
			racers[i].args.stack = (uint64_t)(stack_area + (2 + i) * STACK);
			racers[i].args.stack_size = STACK;
			racers[i].args.shstk_token = token;
			racers[i].go = &go;
			memset(&ra, 0, sizeof(ra));
			ra.flags = CLONE_VM;
			ra.exit_signal = SIGCHLD;
			ra.stack = (uint64_t)(stack_area + (4 + i) * STACK);
			ra.stack_size = STACK;
			pid[i] = clone3_run(&ra, CLONE_ARGS_SIZE_VER3, token_racer, &racers[i]);
		}
		__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
		for (i = 0; i < 2; i++) {
			if (pid[i] <= 0 || waitpid(pid[i], &st[i], __WALL) != pid[i] ||
			    !WIFEXITED(st[i])) {
				st[i] = -1;
				continue;
			}
			st[i] = WEXITSTATUS(st[i]);
			wins += st[i] == 0;
			einval += st[i] == EINVAL;
		}
		if (wins != 1 || einval != 1 || shstk_peek(token) != 0) {
			if (bad++ < 10)
				ktap_diag("race round %lu: racers exited %d and %d, token word %#lx",
					  round, st[0], st[1], (long)shstk_peek(token));
		}
		munmap(token_stack(token), PAGE);
		if ((round + 1) % 1000 == 0)
			ktap_diag("progress: %lu race rounds, %lu bad", round + 1, bad);
	}
	return bad;
}

int main(void)
{
	unsigned long calls = env_num("SHSTK_FUZZ_CALLS", 100000);
	unsigned long rounds = env_num("SHSTK_FUZZ_ROUNDS", 10000);
	uint64_t seed = env_num("SHSTK_SEED", 0);
	unsigned long bad;
	int status;
	pid_t pid;

	if (!seed)
		seed = getauxval(AT_RANDOM) ? *(uint64_t *)getauxval(AT_RANDOM) | 1 : 1;
	rng = seed;
	ktap_plan(3);
	if (shstk_token_missing()) {
		ktap_result(0, "fuzz_all_calls_made", shstk_token_missing());
		ktap_result(0, "fuzz_invariants_held", shstk_token_missing());
		ktap_result(0, "race_same_token_one_wins", shstk_token_missing());
		ktap_finish();
	}
	ktap_diag("seed %#lx, %lu calls, %lu race rounds (reproduce with SHSTK_SEED=%#lx)",
		  (long)seed, calls, rounds, (long)seed);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	stack_area = mmap(NULL, 8 * STACK, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	normal_page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || stack_area == MAP_FAILED || normal_page == MAP_FAILED) {
		ktap_diag("mmap: %s", strerror(errno));
		exit(1);
	}

	/* Half the calls from a process that never enables shadow stacks. */
	pid = fork();
	if (pid == 0) {
		fuzz(calls / 2);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	ktap_diag("without shadow stacks: %lu calls, %lu failures", sh->calls, sh->failures);

	shstk_enabled = shstk_enable();
	ktap_diag("shadow stacks %s", shstk_enabled ? "enabled" : "not available");
	fuzz(calls - calls / 2);
	ktap_diag("calls %lu: %lu succeeded, EINVAL %lu, EFAULT %lu, E2BIG %lu", sh->calls,
		  sh->successes, sh->by_errno[0], sh->by_errno[1], sh->by_errno[2]);
	ktap_diag("metric: fuzz_calls=%lu", sh->calls);
	ktap_result(sh->calls == calls, "fuzz_all_calls_made", NULL);
	ktap_result(!sh->failures && !sh->consumed_after_failure, "fuzz_invariants_held", NULL);

	if (!shstk_enabled) {
		ktap_result(0, "race_same_token_one_wins",
			    "CPU has no user shadow stack: no token to race on");
	} else {
		bad = race(rounds);
		ktap_diag("metric: race_rounds=%lu", rounds);
		ktap_result(!bad, "race_same_token_one_wins", NULL);
	}
	ktap_finish();
}
