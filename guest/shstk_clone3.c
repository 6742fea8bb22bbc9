// SPDX-License-Identifier: GPL-2.0
/*
 * shstk_clone3: every path of the clone3() shadow stack ABI, one KTAP test
 * point per case.
 *
 * The parent maps shadow stacks with map_shadow_stack(SHADOW_STACK_SET_TOKEN)
 * and passes the token's address in clone_args (its token field).  Children
 * run through clone3_run() (lib/shstk.h), which reads the child's shadow
 * stack pointer before anything is pushed, calls a child function and exits
 * with a raw syscall: children use no libc and report through a shared page.
 *
 * Each case is declared where it is defined (CASE(), lib/case.h) and runs in
 * the order of this file: first those that run before the program enables
 * shadow stacks, then the rest, skipped where shadow stacks could not be
 * enabled if they need them.  A case that passes a token (.needs_token)
 * skips where the kernel's clone_args has none, a tree without the series;
 * one that checks a fix the series carries (.series_fix) runs there, and
 * on the arch of the fix its failure is reported as one that tree is
 * known to have (kselftest's XFAIL).  "-t GLOB" runs only the cases it
 * matches (lib/case.h), the others reported skipped.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/io_uring.h>

#include "lib/shstk.h"
#include "lib/ktap.h"
#include "lib/case.h"
#include "lib/racer.h"

#define PAGE		4096UL
#define CHILD_STACK	(64 * 1024UL)
#define NESTED_DEPTH	16
#define MANY_THREADS	64
#define MEM_THREADS	256
#define RACE_ROUNDS	200
/* Child exit status for "the SIGSEGV handler ran": base + si_code. */
#define EXIT_SEGV_BASE	100
#define EXIT_NO_FAULT	99

bool shstk_enabled;

/*
 * What a child reports to its parent, in a MAP_SHARED page.  ssp comes
 * first: clone3_run() stores the child's entry shadow stack pointer there.
 */
struct report {
	volatile uint64_t ssp;		/* shadow stack pointer at child entry */
	volatile uint64_t deep_ssp;	/* ... at the deepest nested call */
	volatile long value;		/* result of the nested calls */
	volatile int fd;		/* pipe to block on (memory case) */
	volatile uint64_t addr;		/* word to load (plain load case) */
};

static struct report *reports;		/* MEM_THREADS entries, shared */
static bool cpu_shstk;			/* the CPU offers user shadow stacks */
static const char *skip_reason = "";	/* why shadow stacks are not on */

/* ---- children: raw syscalls only, never return into the parent ---- */

/*
 * Each call must push one return address: x86 and arm64 push at the call
 * itself, riscv in the prologue (-fcf-protection=return), which shrink
 * wrapping would leave out of the path that makes no further call.
 */
static __attribute__((noinline, optimize("no-shrink-wrap")))
long nested(struct report *r, int depth)
{
	long v;

	if (depth == 0) {
		r->deep_ssp = read_ssp();
		return 1;
	}
	v = nested(r, depth - 1);
	/* Keep the call a real call: no tail call, no accumulator loop. */
	asm volatile ("" : "+r"(v));
	return v + depth;
}

static long child_nested(void *arg, uint64_t ssp)
{
	struct report *r = arg;

	r->value = nested(r, NESTED_DEPTH);
	return 0;
}

/* Block until the parent closes the pipe: keeps the thread's stacks alive. */
static long child_block(void *arg, uint64_t ssp)
{
	struct report *r = arg;
	char c;

	raw_syscall(__NR_read, r->fd, (long)&c, 1);
	return 0;
}

/* One ordinary load of the word at r->addr. */
static long child_load(void *arg, uint64_t ssp)
{
	struct report *r = arg;

	r->value = *(volatile long *)r->addr;
	return 0;
}

static long child_forge(void *arg, uint64_t ssp)
{
	shstk_forged_return();
	return EXIT_NO_FAULT;
}

static void fault_handler(int sig, siginfo_t *si, void *uc)
{
	raw_exit(sig == SIGSEGV ? EXIT_SEGV_BASE + si->si_code : EXIT_NO_FAULT);
}

/* ---- parent helpers ---- */

static void *map_stack(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED) {
		ktap_diag("mmap stack: %s", strerror(errno));
		exit(1);
	}
	return p;
}

/* A fresh shadow stack of @size with a token; returns the token address. */
static uint64_t new_token(unsigned long size, unsigned long *base)
{
	return shstk_map_token(size, SHADOW_STACK_SET_TOKEN, base);
}

/*
 * clone3() with @flags and @token; a new normal stack whenever CLONE_VM.
 * With @fn NULL the child only stores its entry SSP in r->ssp and exits,
 * pushing nothing: the consumed token slot keeps what the kernel left there.
 */
static long start_child(uint64_t flags, uint64_t token, size_t size,
			long (*fn)(void *, uint64_t), struct report *r)
{
	/* Room for a struct larger than the kernel knows. */
	struct {
		struct shstk_clone_args args;
		uint64_t unknown[2];
	} ext;

	memset(&ext, 0, sizeof(ext));
	ext.args.flags = flags;
	ext.args.exit_signal = SIGCHLD;
	ext.args.shstk_token = token;
	if (flags & CLONE_VM) {
		ext.args.stack = (uint64_t)map_stack(CHILD_STACK);
		ext.args.stack_size = CHILD_STACK;
	}
	if (size > sizeof(ext.args))
		ext.unknown[0] = 1;	/* a non-zero field it does not know */
	r->ssp = 0;
	r->deep_ssp = 0;
	r->value = 0;
	return clone3_run(&ext.args, size, fn, r);
}

/* Wait for @pid; returns its exit status, or 1000 + signal if killed. */
static int reap(long pid)
{
	int status;

	if (waitpid(pid, &status, __WALL) != pid)
		return -1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 1000 + WTERMSIG(status);
}

/*
 * clone3() with arguments the kernel must refuse: a child that started
 * anyway is waited for, so a case that then fails leaves none behind.
 * Returns what clone3() returned.
 */
static long start_refused(uint64_t flags, uint64_t token, size_t size)
{
	long pid = start_child(flags, token, size, NULL, &reports[0]);

	if (pid > 0)
		reap(pid);
	return pid;
}

/*
 * The shadow stack VMAs from /proc/self/smaps, in one read (each read walks
 * every VMA's page tables).  Returns how many of the @n addresses in @addrs
 * lie in a shadow stack VMA ("ss" in VmFlags); always adds the Size and Rss
 * (KiB) of all shadow stack VMAs to @size_kb / @rss_kb.
 */
static int smaps_shstk_count(const uint64_t *addrs, int n, long *size_kb, long *rss_kb)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	unsigned long start = 0, end = 0;
	long size = 0, rss = 0;
	int i, found = 0;
	char line[512];

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx ", &s, &e) == 2 && strchr(line, ' ') &&
		    line[strspn(line, "0123456789abcdef")] == '-') {
			start = s;
			end = e;
		} else if (!strncmp(line, "Size:", 5)) {
			size = strtol(line + 5, NULL, 10);
		} else if (!strncmp(line, "Rss:", 4)) {
			rss = strtol(line + 4, NULL, 10);
		} else if (!strncmp(line, "VmFlags:", 8) && strstr(line, " ss")) {
			for (i = 0; i < n; i++)
				found += addrs[i] >= start && addrs[i] < end;
			if (size_kb)
				*size_kb += size;
			if (rss_kb)
				*rss_kb += rss;
		}
	}
	fclose(f);
	return found;
}

/* Whether @addr lies in a shadow stack VMA; the sizes as smaps_shstk_count(). */
static bool smaps_shstk(uint64_t addr, long *size_kb, long *rss_kb)
{
	return smaps_shstk_count(&addr, 1, size_kb, rss_kb) == 1;
}

/* ---- cases that run before shadow stacks are enabled ---- */

/*
 * A caller without shadow stacks enabled.  Every architecture refuses
 * the token with EINVAL and leave it untouched.  Where the CPU has no shadow
 * stack, map_shadow_stack() fails, so an aligned ordinary word stands in.
 */
CASE(caller_without_shstk_einval, .before_enable = true, .needs_token = true)
{
	uint64_t token = new_token(PAGE, NULL);
	bool real = token != 0;
	long pid;

	if (!real)
		token = (uint64_t)map_stack(PAGE) + PAGE - 8;
	ktap_diag("token %s", real ? "from map_shadow_stack" :
		  "in ordinary memory (no shadow stack)");
	pid = start_refused(CLONE_VM, token, CLONE_ARGS_SIZE_VER3);
	CHECK(pid == -EINVAL, "clone3 returned %ld, expected %d", pid, -EINVAL);
	if (real)
		CHECK(shstk_peek(token) == shstk_expected_token(token), "token changed");
	return PASS;
}

/*
 * Aligned tokens that are not user addresses: the top page of the address
 * space, each tried with and without CLONE_VM.  A surprise success starts a
 * child that exits at once.
 */
static const uint64_t not_user_tokens[] = {
	0xfffffffffffffff0ULL, 0xfffffffffffff000ULL,
};

static int not_user_tokens_refused(long want)
{
	static const uint64_t flags[] = { CLONE_VM, 0 };
	size_t i, j;
	int bad = 0;
	long pid;

	for (i = 0; i < ARRAY_SIZE(not_user_tokens); i++) {
		for (j = 0; j < ARRAY_SIZE(flags); j++) {
			pid = start_refused(flags[j], not_user_tokens[i], CLONE_ARGS_SIZE_VER3);
			ktap_diag("token %#lx flags %#lx: clone3 returned %ld",
				  (long)not_user_tokens[i], (long)flags[j], pid);
			bad += pid != want;
		}
	}
	CHECK(!bad, "%d of %zu calls did not return %ld", bad,
	      ARRAY_SIZE(not_user_tokens) * ARRAY_SIZE(flags), want);
	return PASS;
}

/* From a caller without shadow stacks: EINVAL, before any address check. */
CASE(not_user_address_without_shstk_einval, .before_enable = true, .needs_token = true)
{
	return not_user_tokens_refused(-EINVAL);
}

/*
 * With size 88 (VER2) the kernel never reads the field: a misaligned
 * value, which size 96 refuses, does not matter, and a real token stays.
 */
CASE(size_ver2_ignores_token, .before_enable = true)
{
	struct report *r = &reports[0];
	uint64_t token = shstk_enabled ? new_token(PAGE, NULL) : 0x1001;
	long pid;

	CHECK(token, "map_shadow_stack failed");
	pid = start_child(0, token | 1, CLONE_ARGS_SIZE_VER2, NULL, r);
	CHECK(pid > 0, "clone3 returned %ld", pid);
	CHECK(reap(pid) == 0, "child did not exit 0");
	if (shstk_enabled) {
		pid = start_child(CLONE_VM, token, CLONE_ARGS_SIZE_VER2, NULL, r);
		CHECK(pid > 0 && reap(pid) == 0, "clone3 VER2 with token: %ld", pid);
		CHECK(r->ssp != token + SHSTK_SLOT, "child used the token");
		CHECK(shstk_peek(token) == shstk_expected_token(token), "token consumed");
	}
	return PASS;
}

/* With size 96 (VER3) the field is read. */
CASE(size_ver3_reads_token, .before_enable = true, .needs_token = true)
{
	long pid = start_refused(0, 0x1001, CLONE_ARGS_SIZE_VER3);

	CHECK(pid == -EINVAL, "clone3 returned %ld, expected %d", pid, -EINVAL);
	return PASS;
}

/* A struct larger than the kernel knows, with a non-zero tail. */
CASE(size_larger_nonzero_tail_e2big, .before_enable = true)
{
	long pid = start_refused(0, 0, CLONE_ARGS_SIZE_VER3 + 8);

	CHECK(pid == -E2BIG, "clone3 returned %ld, expected %d", pid, -E2BIG);
	return PASS;
}

/*
 * An ordinary load from a shadow stack page, by a thread without shadow
 * stacks enabled.  Every architecture lets plain loads read shadow stack
 * memory; on riscv the page type depends on menvcfg.SSE only, not on the
 * thread's senvcfg.SSE (privileged spec, "Shadow Stack Memory Protection").
 * An emulator that faults there instead makes the thread loop for ever, the
 * kernel finding the PTE fine and retrying, so the load runs in a CLONE_VM
 * child and the caller waits a bounded time.
 */
#define LOAD_WAIT_MS	5000

/* Minor faults of @pid so far (field 10 of /proc/PID/stat), or -1. */
static long minor_faults(long pid)
{
	char path[64], buf[512], *p;
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return n;
	/* The fields after the comm, which may hold spaces and ')'. */
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	if (p)
		sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %lu", &n);
	fclose(f);
	return n;
}

CASE(plain_load_of_shstk_page_without_shstk, .before_enable = true)
{
	struct report *r = &reports[0];
	uint64_t token = new_token(PAGE, NULL);
	int status = 0, ms;
	long pid, faults;

	if (!token && !cpu_shstk)
		SKIP_CASE("map_shadow_stack() fails: the CPU has no user shadow stack");
	CHECK(token, "map_shadow_stack failed on a CPU with shadow stacks");
	r->addr = token;
	pid = start_child(CLONE_VM, 0, CLONE_ARGS_SIZE_VER3, child_load, r);
	CHECK(pid > 0, "clone3 returned %ld", pid);
	for (ms = 0; ms < LOAD_WAIT_MS; ms += 10) {
		if (waitpid(pid, &status, __WALL | WNOHANG) == pid)
			break;
		usleep(10000);
	}
	if (ms >= LOAD_WAIT_MS) {
		faults = minor_faults(pid);
		kill(pid, SIGKILL);
		reap(pid);
		CHECK(ms < LOAD_WAIT_MS,
		      "the load did not finish in %d ms, %ld minor faults: a fault retried for ever",
		      LOAD_WAIT_MS, faults);
	}
	ktap_diag("loaded %#lx from the token at %#lx in %d ms", (long)r->value,
		  (long)token, ms);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child ended with status %#x",
	      status);
	CHECK((uint64_t)r->value == shstk_expected_token(token),
	      "read %#lx, expected the token %#lx", (long)r->value,
	      (long)shstk_expected_token(token));
	return PASS;
}

/* ---- cases that run once shadow stacks are enabled, where they can be ---- */

/* A token address that is not 8-byte aligned. */
CASE(misaligned_token_einval, .needs_token = true)
{
	uint64_t token;
	long pid;

	if (shstk_enabled)
		token = new_token(PAGE, NULL);
	else
		token = (uint64_t)map_stack(PAGE) + PAGE - SHSTK_SLOT;
	CHECK(token, "map_shadow_stack failed");
	pid = start_refused(CLONE_VM, token - 1, CLONE_ARGS_SIZE_VER3);
	CHECK(pid == -EINVAL, "clone3 returned %ld, expected %d", pid, -EINVAL);
	if (shstk_enabled)
		CHECK(shstk_peek(token) == shstk_expected_token(token), "token changed");
	return PASS;
}

/* The token is valid, consumed, and the child starts just above it. */
CASE(token_consumed_child_on_new_stack, .needs_shstk = true, .needs_token = true)
{
	struct report *r = &reports[0];
	uint64_t token = new_token(PAGE, NULL);
	long pid;

	CHECK(token, "map_shadow_stack failed");
	CHECK(smaps_shstk(token, NULL, NULL), "token %#lx not in an ss VMA", (long)token);
	CHECK(shstk_peek(token) == shstk_expected_token(token),
	      "token word %#lx, expected %#lx", (long)shstk_peek(token),
	      (long)shstk_expected_token(token));
	pid = start_child(CLONE_VM, token, CLONE_ARGS_SIZE_VER3, NULL, r);
	CHECK(pid > 0, "clone3 returned %ld", pid);
	CHECK(reap(pid) == 0, "child did not exit 0");
	ktap_diag("token %#lx child ssp %#lx word after %#lx", (long)token,
		  (long)r->ssp, (long)shstk_peek(token));
	CHECK(r->ssp == token + SHSTK_SLOT, "child ssp %#lx, expected %#lx",
	      (long)r->ssp, (long)(token + SHSTK_SLOT));
	CHECK(shstk_peek(token) == 0, "token not consumed: %#lx", (long)shstk_peek(token));
	return PASS;
}

/* Nested calls in the child push onto and return from the new stack. */
CASE(child_nested_calls, .needs_shstk = true, .needs_token = true)
{
	struct report *r = &reports[0];
	uint64_t token = new_token(PAGE, NULL);
	long pid, want = 1 + NESTED_DEPTH * (NESTED_DEPTH + 1) / 2;
	/* child fn + NESTED_DEPTH + 1 nested frames below the entry SSP */
	uint64_t deep = token + SHSTK_SLOT - (NESTED_DEPTH + 2) * SHSTK_SLOT;

	CHECK(token, "map_shadow_stack failed");
	pid = start_child(CLONE_VM, token, CLONE_ARGS_SIZE_VER3, child_nested, r);
	CHECK(pid > 0, "clone3 returned %ld", pid);
	CHECK(reap(pid) == 0, "child did not exit 0");
	CHECK(r->value == want, "nested result %ld, expected %ld", r->value, want);
	CHECK(r->deep_ssp == deep, "deepest ssp %#lx, expected %#lx",
	      (long)r->deep_ssp, (long)deep);
	return PASS;
}

/* A forged return address in the child is a shadow stack fault. */
CASE(child_forged_return_faults, .needs_shstk = true, .needs_token = true)
{
	struct sigaction sa = { .sa_sigaction = fault_handler, .sa_flags = SA_SIGINFO };
	struct sigaction old_segv, old_ill;
	struct report *r = &reports[0];
	uint64_t token = new_token(PAGE, NULL);
	long pid;
	int st;

	CHECK(token, "map_shadow_stack failed");
	sigaction(SIGSEGV, &sa, &old_segv);
	sigaction(SIGILL, &sa, &old_ill);
	pid = start_child(CLONE_VM, token, CLONE_ARGS_SIZE_VER3, child_forge, r);
	st = pid > 0 ? reap(pid) : -1;
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGILL, &old_ill, NULL);
	CHECK(pid > 0, "clone3 returned %ld", pid);
	CHECK(r->ssp == token + SHSTK_SLOT, "child ssp %#lx", (long)r->ssp);
	CHECK(st == EXIT_SEGV_BASE + SEGV_CPERR,
	      "child status %d, expected SIGSEGV with si_code SEGV_CPERR (%d)", st,
	      EXIT_SEGV_BASE + SEGV_CPERR);
	return PASS;
}

/* A consumed token cannot start a second thread. */
CASE(reuse_consumed_token_einval, .needs_shstk = true, .needs_token = true)
{
	struct report *r = &reports[0];
	uint64_t token = new_token(PAGE, NULL);
	long pid;

	CHECK(token, "map_shadow_stack failed");
	pid = start_child(CLONE_VM, token, CLONE_ARGS_SIZE_VER3, NULL, r);
	CHECK(pid > 0 && reap(pid) == 0, "first clone3 failed: %ld", pid);
	pid = start_refused(CLONE_VM, token, CLONE_ARGS_SIZE_VER3);
	CHECK(pid == -EINVAL, "second clone3 returned %ld, expected %d", pid, -EINVAL);
	return PASS;
}

/* A "token" in ordinary memory. */
CASE(normal_memory_efault, .needs_shstk = true, .needs_token = true)
{
	uint64_t *mem = malloc(PAGE);
	uint64_t token = (uint64_t)&mem[PAGE / 8 - 1];
	long pid;

	*(uint64_t *)token = shstk_expected_token(token);
	pid = start_refused(CLONE_VM, token, CLONE_ARGS_SIZE_VER3);
	CHECK(pid == -EFAULT, "clone3 returned %ld, expected %d", pid, -EFAULT);
	CHECK(shstk_peek(token) == shstk_expected_token(token), "word changed");
	free(mem);
	return PASS;
}

/* A shadow stack page mapped without a token. */
CASE(shstk_page_without_token_einval, .needs_shstk = true, .needs_token = true)
{
	long base = map_shadow_stack(0, PAGE, 0);
	uint64_t token = shstk_token_addr(base, PAGE);
	long pid;

	CHECK(base > 0, "map_shadow_stack failed: %ld", base);
	CHECK(shstk_peek(token) == 0, "page not empty");
	pid = start_refused(CLONE_VM, token, CLONE_ARGS_SIZE_VER3);
	CHECK(pid == -EINVAL, "clone3 returned %ld, expected %d", pid, -EINVAL);
	return PASS;
}

/* An address with nothing mapped. */
CASE(unmapped_address_efault, .needs_shstk = true, .needs_token = true)
{
	unsigned long base;
	uint64_t token = new_token(PAGE, &base);
	long pid;

	CHECK(token, "map_shadow_stack failed");
	CHECK(munmap((void *)base, PAGE) == 0, "munmap: %s", strerror(errno));
	pid = start_refused(CLONE_VM, token, CLONE_ARGS_SIZE_VER3);
	CHECK(pid == -EFAULT, "clone3 returned %ld, expected %d", pid, -EFAULT);
	return PASS;
}

/*
 * Addresses with a tag in their top byte.  Where the top byte is
 * ignored (arm64's TBI) each is the address under the tag, and clone3()
 * refuses a tagged one with EINVAL before it looks at memory: a valid
 * token's, which must be left as it was for the untagged call that
 * follows, and ordinary memory's, which a kernel that untagged the address
 * for its VMA lookup only refused with EFAULT instead.  Where no tagging
 * is on, neither is a user address: EFAULT.
 */
CASE(tagged_token_refused, .needs_shstk = true, .needs_token = true)
{
	static uint64_t plain_word;
	const uint64_t tag = 0x5aULL << 56;
	struct report *r = &reports[0];
	uint64_t token = new_token(PAGE, NULL);
	uint64_t tagged[2] = { token | tag, (uint64_t)&plain_word | tag };
	long pid;
	int i;

	CHECK(token, "map_shadow_stack failed");
	for (i = 0; i < 2; i++) {
		pid = start_refused(CLONE_VM, tagged[i], CLONE_ARGS_SIZE_VER3);
		CHECK(pid == -SHSTK_TAGGED_TOKEN_ERRNO, "clone3 with %#lx returned %ld, expected %d",
		      (long)tagged[i], pid, -SHSTK_TAGGED_TOKEN_ERRNO);
	}
	CHECK(shstk_peek(token) == shstk_expected_token(token),
	      "the token was not left as it was: %#lx", (long)shstk_peek(token));
	pid = start_child(CLONE_VM, token, CLONE_ARGS_SIZE_VER3, NULL, r);
	CHECK(pid > 0, "clone3 with the untagged token returned %ld", pid);
	CHECK(reap(pid) == 0, "the child of the untagged token did not exit 0");
	return PASS;
}

/*
 * With shadow stacks: EFAULT on every arch.  On x86 the child's SSP (token +
 * 8) went back through copy_thread()'s IS_ERR_VALUE() test and came out as a
 * made-up errno (0xfffffffffffffff0: ENOEXEC; 0xfffffffffffff000: 4088).
 */
CASE(not_user_address_efault, .needs_shstk = true, .needs_token = true)
{
	return not_user_tokens_refused(-EFAULT);
}

/*
 * A token in a read-only MAP_PRIVATE mapping of a regular file, with
 * CLONE_VM so that the kernel looks it up in our own mm: EFAULT, and the
 * kernel must not have written to the mapping before finding out that it is
 * no shadow stack.  The page must still be the file's: bytes written to the
 * file afterwards show through the mapping.  A forced write lookup before
 * the VMA check breaks COW, leaving an anonymous copy with the old bytes.
 */
CASE(readonly_file_mapping_efault_no_cow, .needs_shstk = true, .needs_token = true)
{
	char path[] = "/tmp/shstk_clone3.XXXXXX";
	uint64_t token, word, before, after = 0;
	static char page[PAGE];
	long pid = 0;
	void *map;
	int fd;

	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp %s: %s", path, strerror(errno));
	unlink(path);
	memset(page, 0xa5, sizeof(page));
	if (pwrite(fd, page, PAGE, 0) != (ssize_t)PAGE) {
		close(fd);
		CHECK(0, "writing the file: %s", strerror(errno));
	}
	map = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		close(fd);
		CHECK(0, "mmap: %s", strerror(errno));
	}
	token = (uint64_t)map + PAGE - SHSTK_SLOT;

	/*
	 * A token-valued word, written through the file: reading it through
	 * the mapping also shows that file writes reach the mapping at all.
	 */
	word = shstk_expected_token(token);
	if (pwrite(fd, &word, sizeof(word), PAGE - SHSTK_SLOT) == (ssize_t)sizeof(word))
		before = shstk_peek(token);
	else
		before = ~word;
	if (before == word) {
		pid = start_refused(CLONE_VM, token, CLONE_ARGS_SIZE_VER3);
		/* New bytes, through the file. */
		word = ~word;
		if (pwrite(fd, &word, sizeof(word), PAGE - SHSTK_SLOT) == (ssize_t)sizeof(word))
			after = shstk_peek(token);
	}
	munmap(map, PAGE);
	close(fd);
	CHECK(before == shstk_expected_token(token),
	      "the mapping shows %#lx, not the %#lx written to the file",
	      (long)before, (long)shstk_expected_token(token));
	ktap_diag("token %#lx in a read-only file mapping: clone3 returned %ld; "
		  "after a file write the mapping shows %#lx (file %#lx)",
		  (long)token, pid, (long)after, (long)word);
	CHECK(pid == -EFAULT, "clone3 returned %ld, expected %d", pid, -EFAULT);
	CHECK(after == word,
	      "the mapping shows %#lx, not the file's %#lx: its page was copied",
	      (long)after, (long)word);
	return PASS;
}

/*
 * /proc/vmstat's nr_foll_pin_acquired and nr_foll_pin_released, folded from
 * the per-CPU counters first (/proc/sys/vm/stat_refresh): a single pin stays
 * in a CPU's delta otherwise.  Returns NULL, or why they cannot be read.
 */
static const char *foll_pins(long *acquired, long *released)
{
	static char why[160];
	char line[128];
	int fd, found = 0;
	FILE *f;

	fd = open("/proc/sys/vm/stat_refresh", O_WRONLY);
	if (fd < 0 || write(fd, "1\n", 2) != 2) {
		snprintf(why, sizeof(why),
			 "cannot write /proc/sys/vm/stat_refresh (%s): one pin hides in per-CPU deltas",
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return why;
	}
	close(fd);
	f = fopen("/proc/vmstat", "r");
	if (!f) {
		snprintf(why, sizeof(why), "cannot read /proc/vmstat: %s", strerror(errno));
		return why;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "nr_foll_pin_acquired %ld", acquired) == 1)
			found |= 1;
		else if (sscanf(line, "nr_foll_pin_released %ld", released) == 1)
			found |= 2;
	}
	fclose(f);
	if (found != 3)
		return "/proc/vmstat has no nr_foll_pin_acquired and nr_foll_pin_released";
	return NULL;
}

/*
 * The kernel writes the token through a pinned page (FOLL_PIN, as
 * Documentation/core-api/pin_user_pages.rst asks of code that writes to a
 * page's data), and unpins it before clone3() returns.
 */
CASE(token_page_pinned_foll_pin, .needs_shstk = true, .needs_token = true)
{
	struct report *r = &reports[0];
	uint64_t token = new_token(PAGE, NULL);
	long acq0 = 0, rel0 = 0, acq1 = 0, rel1 = 0, pid;
	const char *why;

	CHECK(token, "map_shadow_stack failed");
	why = foll_pins(&acq0, &rel0);
	if (why)
		SKIP_CASE("%s", why);
	pid = start_child(CLONE_VM, token, CLONE_ARGS_SIZE_VER3, NULL, r);
	CHECK(pid > 0, "clone3 returned %ld", pid);
	CHECK(reap(pid) == 0, "child did not exit 0");
	why = foll_pins(&acq1, &rel1);
	CHECK(!why, "%s", why);
	ktap_diag("nr_foll_pin_acquired %ld -> %ld, nr_foll_pin_released %ld -> %ld",
		  acq0, acq1, rel0, rel1);
	CHECK(shstk_peek(token) == 0, "token not consumed: %#lx", (long)shstk_peek(token));
	CHECK(acq1 - acq0 >= 1, "no page pinned around clone3() with a token");
	CHECK(acq1 - rel1 == acq0 - rel0,
	      "pins held: %ld before, %ld after", acq0 - rel0, acq1 - rel1);
	return PASS;
}

/*
 * Without CLONE_VM the token is checked and consumed in the child's copy
 * of the caller's memory: the child starts on it, the caller's copy of the
 * token is left valid.  With CLONE_VM | CLONE_VFORK the memory is shared, so
 * the caller sees it consumed.
 */
static int token_with_flags(uint64_t flags, bool consumed_in_parent)
{
	struct report *r = &reports[0];
	uint64_t token = new_token(PAGE, NULL);
	long pid;

	CHECK(token, "map_shadow_stack failed");
	pid = start_child(flags, token, CLONE_ARGS_SIZE_VER3, NULL, r);
	CHECK(pid > 0, "clone3 returned %ld", pid);
	CHECK(reap(pid) == 0, "child did not exit 0");
	ktap_diag("flags %#lx: child ssp %#lx, parent's token word %#lx",
		  (long)flags, (long)r->ssp, (long)shstk_peek(token));
	CHECK(r->ssp == token + SHSTK_SLOT, "child ssp %#lx, expected %#lx",
	      (long)r->ssp, (long)(token + SHSTK_SLOT));
	if (consumed_in_parent)
		CHECK(shstk_peek(token) == 0, "token not consumed");
	else
		CHECK(shstk_peek(token) == shstk_expected_token(token),
		      "parent's copy of the token changed");
	return PASS;
}

CASE(no_clone_vm_token_in_child_copy, .needs_shstk = true, .needs_token = true)
{
	return token_with_flags(0, false);
}

CASE(clone_vfork_token_in_child_copy, .needs_shstk = true, .needs_token = true)
{
	return token_with_flags(CLONE_VFORK, false);
}

CASE(clone_vm_vfork_token_consumed, .needs_shstk = true, .needs_token = true)
{
	return token_with_flags(CLONE_VM | CLONE_VFORK, true);
}

/* Many threads, each on its own small shadow stack, all at once. */
CASE(threads_64_own_shstk, .needs_shstk = true, .needs_token = true)
{
	static unsigned long base[MANY_THREADS];
	static uint64_t token[MANY_THREADS];
	static long pid[MANY_THREADS];
	long want = 1 + NESTED_DEPTH * (NESTED_DEPTH + 1) / 2;
	int i, bad = 0, mapped;

	for (i = 0; i < MANY_THREADS; i++) {
		token[i] = new_token(PAGE, &base[i]);
		CHECK(token[i], "map_shadow_stack %d failed", i);
	}
	for (i = 0; i < MANY_THREADS; i++)
		pid[i] = start_child(CLONE_VM, token[i], CLONE_ARGS_SIZE_VER3,
				     child_nested, &reports[i]);
	for (i = 0; i < MANY_THREADS; i++) {
		if (pid[i] <= 0 || reap(pid[i]) != 0 || reports[i].value != want ||
		    reports[i].ssp != token[i] + SHSTK_SLOT) {
			ktap_diag("thread %d: pid %ld ssp %#lx value %ld", i, pid[i],
				  (long)reports[i].ssp, reports[i].value);
			bad++;
		}
	}
	CHECK(!bad, "%d of %d threads went wrong", bad, MANY_THREADS);
	/* The kernel never owned them: still mapped, and ours to unmap. */
	mapped = smaps_shstk_count(token, MANY_THREADS, NULL, NULL);
	CHECK(mapped == MANY_THREADS, "%d of %d stacks no longer mapped",
	      MANY_THREADS - mapped, MANY_THREADS);
	for (i = 0; i < MANY_THREADS; i++)
		CHECK(munmap((void *)base[i], PAGE) == 0, "munmap %d: %s", i, strerror(errno));
	mapped = smaps_shstk_count(token, MANY_THREADS, NULL, NULL);
	CHECK(!mapped, "%d of %d stacks still mapped after munmap", mapped, MANY_THREADS);
	return PASS;
}

/*
 * What the feature is for.  MEM_THREADS threads alive at once with 4 KiB
 * shadow stacks from map_shadow_stack(), against the same number with
 * shadow stacks the kernel sizes from an 8 MiB thread stack (glibc's
 * default).  Reported from the "ss" VMAs in /proc/self/smaps.
 */
static int mem_run(bool user, long *size_kb, long *rss_kb)
{
	static long pid[MEM_THREADS];
	static void *stacks[MEM_THREADS];
	size_t stack = user ? CHILD_STACK : 8UL << 20;
	long before_size = 0, before_rss = 0;
	int fds[2], i, started = 0;

	CHECK(pipe(fds) == 0, "pipe: %s", strerror(errno));
	smaps_shstk(0, &before_size, &before_rss);
	for (i = 0; i < MEM_THREADS; i++) {
		struct shstk_clone_args args = {
			.flags = CLONE_VM | CLONE_FILES,
			.exit_signal = SIGCHLD,
			.stack = (uint64_t)(stacks[i] = map_stack(stack)),
			.stack_size = stack,
		};

		if (user) {
			args.shstk_token = new_token(PAGE, NULL);
			CHECK(args.shstk_token, "map_shadow_stack %d failed", i);
		}
		memset(&reports[i], 0, sizeof(reports[i]));
		reports[i].fd = fds[0];
		pid[i] = clone3_run(&args, CLONE_ARGS_SIZE_VER3, child_block, &reports[i]);
		if (pid[i] > 0)
			started++;
	}
	/* Every thread has entered child_block() once its ssp is reported. */
	for (i = 0; i < MEM_THREADS; i++)
		while (pid[i] > 0 && !reports[i].ssp)
			usleep(1000);
	*size_kb = -before_size;
	*rss_kb = -before_rss;
	smaps_shstk(0, size_kb, rss_kb);
	close(fds[1]);
	for (i = 0; i < MEM_THREADS; i++) {
		if (pid[i] > 0 && reap(pid[i]) != 0)
			started = -1;
		munmap(stacks[i], stack);
	}
	close(fds[0]);
	CHECK(started == MEM_THREADS, "only %d of %d threads ran cleanly", started, MEM_THREADS);
	return PASS;
}

CASE(memory_256_threads, .needs_shstk = true, .needs_token = true)
{
	long user_size, user_rss, kern_size, kern_rss;

	CHECK(mem_run(true, &user_size, &user_rss) == PASS, "user-sized run failed");
	CHECK(mem_run(false, &kern_size, &kern_rss) == PASS, "kernel-sized run failed");
	ktap_diag("metric: shstk_user_256_size_kb=%ld", user_size);
	ktap_diag("metric: shstk_user_256_rss_kb=%ld", user_rss);
	ktap_diag("metric: shstk_kernel_256_size_kb=%ld", kern_size);
	ktap_diag("metric: shstk_kernel_256_rss_kb=%ld", kern_rss);
	CHECK(user_size == MEM_THREADS * PAGE / 1024,
	      "user-sized shadow stacks: %ld KiB, expected %lu", user_size,
	      MEM_THREADS * PAGE / 1024);
	CHECK(kern_size > user_size, "kernel-sized not larger: %ld KiB", kern_size);
	return PASS;
}

/*
 * A fork that fails after copy_thread() frees the shadow stack copy_thread()
 * mapped for its CLONE_VM child (no token: the kernel's own stack).  Each
 * call here fails at the pidfd, which copy_process() makes after
 * copy_thread(): CLONE_PIDFD with every file descriptor RLIMIT_NOFILE allows
 * in use, so EMFILE.  The caller's address space must not grow: a leak is a
 * stack per call (riscv before 5/10: 1 MiB each).
 */
#define FAILED_FORKS	1000

/* A field of /proc/self/status in kB, or a count of /proc/self/maps lines. */
static long self_status_kb(const char *field)
{
	char line[256];
	long kb = -1, n = 0;
	FILE *f = fopen(field ? "/proc/self/status" : "/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		n++;
		if (field && !strncmp(line, field, strlen(field)))
			kb = strtol(line + strlen(field) + 1, NULL, 10);
	}
	if (f)
		fclose(f);
	return field ? kb : n;
}

static const struct series_fix riscv_failed_fork_fix = {
	"riscv64", "riscv: Free the shadow stack of a thread whose fork fails"
};

CASE(failed_fork_frees_shadow_stack, .needs_shstk = true, .series_fix = &riscv_failed_fork_fix)
{
	long before_kb, after_kb, before_maps, after_maps, ret, other = 0;
	struct rlimit old, lim;
	int i, fd, pidfd = -1, emfile = 0;

	CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0, "getrlimit: %s", strerror(errno));
	/* The lowest free descriptor: with the limit there, none is left. */
	fd = fcntl(0, F_DUPFD, 0);
	CHECK(fd >= 0, "F_DUPFD: %s", strerror(errno));
	close(fd);
	before_kb = self_status_kb("VmSize:");
	before_maps = self_status_kb(NULL);
	lim = old;
	lim.rlim_cur = fd;
	CHECK(setrlimit(RLIMIT_NOFILE, &lim) == 0, "setrlimit: %s", strerror(errno));
	for (i = 0; i < FAILED_FORKS; i++) {
		struct shstk_clone_args args = {
			.flags = CLONE_VM | CLONE_PIDFD,
			.pidfd = (uint64_t)&pidfd,
			.exit_signal = SIGCHLD,
		};

		ret = clone3_run(&args, CLONE_ARGS_SIZE_VER3, NULL, NULL);
		if (ret == -EMFILE) {
			emfile++;
			continue;
		}
		other = ret;
		if (ret > 0)
			reap(ret);
	}
	CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0, "setrlimit: %s", strerror(errno));
	after_kb = self_status_kb("VmSize:");
	after_maps = self_status_kb(NULL);
	ktap_diag("metric: failed_fork_vmsize_growth_kb=%ld", after_kb - before_kb);
	ktap_diag("metric: failed_fork_maps_growth=%ld", after_maps - before_maps);
	CHECK(emfile == FAILED_FORKS, "%d of %d calls failed with EMFILE, another gave %ld",
	      emfile, FAILED_FORKS, other);
	CHECK(before_kb > 0 && after_kb - before_kb < 1024,
	      "VmSize grew by %ld KiB over %d failed forks: a shadow stack left behind by each",
	      after_kb - before_kb, FAILED_FORKS);
	CHECK(after_maps - before_maps < 8, "%ld more mappings after %d failed forks",
	      after_maps - before_maps, FAILED_FORKS);
	return PASS;
}

/*
 * clone3(CLONE_VM | CLONE_PIDFD) with no file descriptor left for the pidfd
 * fails with EMFILE: the token must still be valid, and a retry with it
 * start the child just above it.
 */
CASE(pidfd_emfile_leaves_token_for_retry, .needs_shstk = true, .needs_token = true)
{
	struct report *r = &reports[0];
	uint64_t token = new_token(PAGE, NULL);
	struct rlimit old, lim;
	int fd, pidfd = -1;
	long ret, pid;
	struct shstk_clone_args args = {
		.flags = CLONE_VM | CLONE_PIDFD,
		.pidfd = (uint64_t)&pidfd,
		.exit_signal = SIGCHLD,
		.stack = (uint64_t)map_stack(CHILD_STACK),
		.stack_size = CHILD_STACK,
		.shstk_token = token,
	};

	CHECK(token, "map_shadow_stack failed");
	CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0, "getrlimit: %s", strerror(errno));
	/* The lowest free descriptor: with the limit there, none is left. */
	fd = fcntl(0, F_DUPFD, 0);
	CHECK(fd >= 0, "F_DUPFD: %s", strerror(errno));
	close(fd);
	lim = old;
	lim.rlim_cur = fd;
	CHECK(setrlimit(RLIMIT_NOFILE, &lim) == 0, "setrlimit: %s", strerror(errno));
	ret = clone3_run(&args, CLONE_ARGS_SIZE_VER3, NULL, r);
	CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0, "setrlimit: %s", strerror(errno));
	if (ret > 0)
		reap(ret);
	CHECK(ret == -EMFILE, "clone3 with no descriptor left returned %ld, expected -EMFILE", ret);
	CHECK(shstk_peek(token) == shstk_expected_token(token),
	      "the failed clone3() left the token word %#lx, expected %#lx",
	      (long)shstk_peek(token), (long)shstk_expected_token(token));
	r->ssp = 0;
	pid = clone3_run(&args, CLONE_ARGS_SIZE_VER3, NULL, r);
	CHECK(pid > 0, "the retry with the same token returned %ld", pid);
	close(pidfd);
	CHECK(reap(pid) == 0, "child did not exit 0");
	CHECK(r->ssp == token + SHSTK_SLOT, "child ssp %#lx, expected %#lx",
	      (long)r->ssp, (long)(token + SHSTK_SLOT));
	CHECK(shstk_peek(token) == 0, "token not consumed by the retry: %#lx",
	      (long)shstk_peek(token));
	return PASS;
}

/* Exit statuses of io_worker_child() that are not a verdict of the kernel. */
#define EXIT_NO_IO_URING	98
#define EXIT_SETUP_FAILED	97
#define EXIT_WORKER_STAYED	96
#define EXIT_NOT_MAPPED		95

/* The threads of this process, from /proc/self/task. */
static int self_threads(void)
{
	struct dirent *e;
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* Wait up to 5 s for this process to have @n threads, or more with @more. */
static bool wait_threads(int n, bool more)
{
	int i, have = self_threads();

	for (i = 0; i < 500 && !(have == n || (more && have > n)); i++) {
		usleep(10000);
		have = self_threads();
	}
	return have == n || (more && have > n);
}

/*
 * In a forked process with shadow stacks on: start an io_uring SQPOLL
 * thread (a worker the kernel creates with CLONE_VM from this thread,
 * create_io_thread()), close the ring so that it exits, then return
 * through the shadow stack.  A worker that took its creator's shadow
 * stack for its own frees it when it exits, and the return below faults.
 */
static int io_worker_child(void)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SQPOLL, .sq_thread_idle = 10 };
	uint64_t ssp = read_ssp();
	struct report r = { 0 };
	long fd;

	if (!smaps_shstk(ssp, NULL, NULL))
		return EXIT_NOT_MAPPED;
	fd = syscall(__NR_io_uring_setup, 4, &p);
	if (fd < 0)
		return errno == ENOSYS ? EXIT_NO_IO_URING : EXIT_SETUP_FAILED;
	if (!wait_threads(2, true))
		return EXIT_SETUP_FAILED;
	close(fd);
	if (!wait_threads(1, false))
		return EXIT_WORKER_STAYED;
	if (!smaps_shstk(ssp, NULL, NULL))
		return EXIT_NOT_MAPPED;
	return nested(&r, NESTED_DEPTH) == 1 + NESTED_DEPTH * (NESTED_DEPTH + 1) / 2 ? 0 : 1;
}

static const struct series_fix riscv_user_worker_fix = {
	"riscv64", "riscv: Do not let a user worker inherit its creator's shadow stack"
};

/* A kernel-created worker's exit leaves its creator's shadow stack alone. */
CASE(io_worker_exit_keeps_creator_shstk, .needs_shstk = true, .series_fix = &riscv_user_worker_fix)
{
	long pid = fork();
	int st;

	if (pid == 0)
		_exit(io_worker_child());
	CHECK(pid > 0, "fork: %s", strerror(errno));
	st = reap(pid);
	if (st == EXIT_NO_IO_URING)
		SKIP_CASE("this kernel has no io_uring (CONFIG_IO_URING)");
	CHECK(st != 1000 + SIGSEGV,
	      "SIGSEGV after the io_uring SQPOLL thread exited: it freed its creator's shadow stack");
	CHECK(st != EXIT_NOT_MAPPED, "the creator's shadow stack is no longer mapped");
	CHECK(st != EXIT_SETUP_FAILED,
	      "io_uring_setup(IORING_SETUP_SQPOLL) failed or started no thread");
	CHECK(st != EXIT_WORKER_STAYED,
	      "the SQPOLL thread did not exit within 5 s of the ring's close");
	CHECK(st == 0, "the forked creator ended with status %d", st);
	return PASS;
}

/*
 * A thread held inside a signal handler, whose frame left a token on its
 * shadow stack, and what a clone3() with that token's address did.  In a
 * MAP_SHARED page: the process that makes the call may not survive it.
 */
struct signal_frame {
	volatile uint64_t handler_ssp;	/* the thread's SSP in the handler */
	volatile int in_handler;
	volatile int resumed;		/* the thread is back from the handler */
	int release[2];			/* the handler blocks reading this */
	uint64_t token;			/* the signal frame's token slot */
	uint64_t word_before, word_after;
	long ret;			/* what clone3() returned */
	uint64_t child_ssp;
};

static struct signal_frame *signal_frame;

static void signal_frame_handler(int sig)
{
	char c;

	signal_frame->handler_ssp = read_ssp();
	signal_frame->in_handler = 1;
	raw_syscall(__NR_read, signal_frame->release[0], (long)&c, 1);
}

/*
 * The thread: naps until its handler has run (the signal may come before
 * its first nap), then says it is back from it.
 */
static long child_signal_wait(void *arg, uint64_t ssp)
{
	struct timespec nap = { .tv_nsec = 10000000 };

	while (!signal_frame->in_handler)
		raw_syscall(__NR_ppoll, 0, 0, (long)&nap);
	signal_frame->resumed = 1;
	for (;;)
		raw_syscall(__NR_ppoll, 0, 0, 0);
	return 0;
}

#define EXIT_NO_SIGNAL_TOKEN	94
#define EXIT_NOT_RESUMED	93

/*
 * In a forked process: hold a thread in a signal handler, find the token
 * its signal frame left on its shadow stack, and pass that address to
 * clone3().  Returns to nobody: exits, or dies when the thread cannot
 * return from its handler.
 */
static void signal_frame_child(void)
{
	struct signal_frame *f = signal_frame;
	struct sigaction sa = { .sa_handler = signal_frame_handler };
	struct shstk_clone_args thread = {
		.flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD,
		.stack = (uint64_t)map_stack(CHILD_STACK),
		.stack_size = CHILD_STACK,
	};
	struct shstk_clone_args args = {
		.flags = CLONE_VM,
		.exit_signal = SIGCHLD,
		.stack = (uint64_t)map_stack(CHILD_STACK),
		.stack_size = CHILD_STACK,
	};
	long tid;
	int i;

	if (pipe(f->release) || sigaction(SIGUSR1, &sa, NULL))
		_exit(EXIT_SETUP_FAILED);
	tid = clone3_run(&thread, CLONE_ARGS_SIZE_VER3, child_signal_wait, NULL);
	if (tid <= 0 || raw_syscall(__NR_tgkill, getpid(), tid, SIGUSR1))
		_exit(EXIT_SETUP_FAILED);
	for (i = 0; i < 500 && !f->in_handler; i++)
		usleep(10000);
	if (!f->in_handler)
		_exit(EXIT_SETUP_FAILED);
	/* The frame's token is a few slots above the handler's own calls. */
	for (i = 0; i < 64 && !f->token; i++) {
		uint64_t addr = f->handler_ssp + i * SHSTK_SLOT;

		if (shstk_peek(addr) == shstk_signal_token(addr))
			f->token = addr;
	}
	if (!f->token)
		_exit(EXIT_NO_SIGNAL_TOKEN);
	f->word_before = shstk_peek(f->token);
	args.shstk_token = f->token;
	f->ret = clone3_run(&args, CLONE_ARGS_SIZE_VER3, NULL, &reports[0]);
	if (f->ret > 0) {
		reap(f->ret);
		f->child_ssp = reports[0].ssp;
	}
	f->word_after = shstk_peek(f->token);
	/* Let the handler return through its signal frame. */
	if (write(f->release[1], "x", 1) != 1)
		_exit(EXIT_SETUP_FAILED);
	for (i = 0; i < 500 && !f->resumed; i++)
		usleep(10000);
	_exit(f->resumed ? 0 : EXIT_NOT_RESUMED);
}

/*
 * A signal frame's token on a live thread's shadow stack is no clone3()
 * token where the two formats differ (x86: bit 63; arm64: no valid bit):
 * refused with EINVAL and left alone.  riscv has one format for both, and
 * the series keeps it (docs/series.md says why: riscv user code can point
 * its SSP anywhere with csrw ssp, so the token cannot guard this): the
 * call is accepted, the token consumed, and the thread in the handler
 * cannot return from it (SIGSEGV).
 */
CASE(signal_frame_token_of_live_thread, .needs_shstk = true, .needs_token = true)
{
	struct signal_frame *f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	bool same_format;
	long pid;
	int st;

	CHECK(f != MAP_FAILED, "mmap: %s", strerror(errno));
	memset(f, 0, sizeof(*f));
	signal_frame = f;
	reports[0].ssp = 0;
	pid = fork();
	if (pid == 0)
		signal_frame_child();
	CHECK(pid > 0, "fork: %s", strerror(errno));
	st = reap(pid);
	CHECK(st != EXIT_SETUP_FAILED, "could not hold a thread in a signal handler");
	CHECK(st != EXIT_NO_SIGNAL_TOKEN,
	      "no signal frame token within 64 slots above the handler's SSP %#lx",
	      (long)f->handler_ssp);
	same_format = shstk_signal_token(f->token) == shstk_expected_token(f->token);
	ktap_diag("signal frame token at %#lx = %#lx; clone3 returned %ld, the word is now %#lx",
		  (long)f->token, (long)f->word_before, f->ret, (long)f->word_after);
	if (!same_format) {
		CHECK(f->ret == -EINVAL, "clone3 returned %ld, expected -EINVAL", f->ret);
		CHECK(f->word_after == f->word_before, "the refused call changed the token");
		CHECK(st != EXIT_NOT_RESUMED, "the thread did not come back from its handler");
		CHECK(st == 0, "the process ended with status %d after the handler returned", st);
		return PASS;
	}
	CHECK(f->ret > 0, "clone3 returned %ld: riscv takes a signal frame's token", f->ret);
	CHECK(f->child_ssp == f->token + SHSTK_SLOT, "child ssp %#lx, expected %#lx",
	      (long)f->child_ssp, (long)(f->token + SHSTK_SLOT));
	CHECK(f->word_after == 0, "the token was not consumed: %#lx", (long)f->word_after);
	CHECK(st == 1000 + SIGSEGV,
	      "the thread returned from its handler through a consumed token (status %d)", st);
	return PASS;
}

/* Two threads race clone3() on one token: exactly one wins each round. */
CASE(race_same_token_one_wins, .needs_shstk = true, .needs_token = true)
{
	static struct token_racer racers[2];
	static volatile int go;
	int round, i, wins, einval;

	for (round = 0; round < RACE_ROUNDS; round++) {
		uint64_t token = new_token(PAGE, NULL);
		struct shstk_clone_args args[2];
		long pid[2];
		int st[2];

		CHECK(token, "map_shadow_stack failed");
		go = 0;
		for (i = 0; i < 2; i++) {
			racers[i] = (struct token_racer) {
				.args = {
					.flags = CLONE_VM,
					.exit_signal = SIGCHLD,
					.stack = (uint64_t)map_stack(CHILD_STACK),
					.stack_size = CHILD_STACK,
					.shstk_token = token,
				},
				.go = &go,
			};
			args[i] = (struct shstk_clone_args) {
				.flags = CLONE_VM,
				.exit_signal = SIGCHLD,
				.stack = (uint64_t)map_stack(CHILD_STACK),
				.stack_size = CHILD_STACK,
			};
			pid[i] = clone3_run(&args[i], CLONE_ARGS_SIZE_VER3, token_racer,
					    &racers[i]);
			CHECK(pid[i] > 0, "racer clone3: %ld", pid[i]);
		}
		__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
		wins = 0;
		einval = 0;
		for (i = 0; i < 2; i++) {
			st[i] = reap(pid[i]);
			wins += st[i] == 0;
			einval += st[i] == EINVAL;
			munmap((void *)racers[i].args.stack, CHILD_STACK);
			munmap((void *)args[i].stack, CHILD_STACK);
		}
		CHECK(wins == 1 && einval == 1, "round %d: racers exited %d and %d",
		      round, st[0], st[1]);
		CHECK(shstk_peek(token) == 0, "round %d: token not consumed", round);
		munmap((void *)(token + SHSTK_SLOT - PAGE), PAGE);
	}
	ktap_diag("%d rounds, one winner each", RACE_ROUNDS);
	return PASS;
}

/* The case @c, or its skip, with shadow stacks as they are now. */
static void run_case(const struct guest_case *c)
{
	int v;

	if (c->needs_token && shstk_token_missing()) {
		ktap_result(0, c->name, shstk_token_missing());
		return;
	}
	if (c->needs_shstk && !shstk_enabled) {
		ktap_result(0, c->name, skip_reason);
		return;
	}
	ktap_diag("running %s", c->name);
	skipped_why[0] = '\0';
	v = c->run();
	/*
	 * A tree without the series lacks the fixes it carries: on the arch a
	 * fix is for, the failure is shown as one this kernel is known to have.
	 */
	if (v == FAIL && c->series_fix && shstk_token_missing() &&
	    !strcmp(c->series_fix->arch, SHSTK_ARCH_NAME)) {
		snprintf(skipped_why, sizeof(skipped_why),
			 "a tree without the series, which fixes it: %s", c->series_fix->subject);
		ktap_result_xfail(c->name, skipped_why);
		return;
	}
	ktap_result(v == PASS, c->name, v == SKIP ? skipped_why : NULL);
}

/*
 * Shadow stacks are enabled, in main()'s own frame, before the first case
 * that does not run before that; main() must then never return, and ends in
 * exit() through ktap_finish().
 */
int main(int argc, char **argv)
{
	const struct guest_case *const *cases;
	bool enabling_done = false;
	size_t i, n;

	case_options(argc, argv);
	cases = case_list(&n);
	/* Enabling comes once: the cases that run before it come first. */
	for (i = 1; i < n; i++) {
		if (cases[i]->before_enable && !cases[i - 1]->before_enable) {
			printf("# %s runs before enabling: it goes before %s in %s\n",
			       cases[i]->name, cases[i - 1]->name, __FILE__);
			return 1;
		}
	}
	cpu_shstk = shstk_cpu_has();
	ktap_plan(n);
	ktap_diag("arch %s, cpu shadow stack: %s", SHSTK_ARCH_NAME, cpu_shstk ? "yes" : "no");
	reports = mmap(NULL, MEM_THREADS * sizeof(*reports), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (reports == MAP_FAILED) {
		ktap_diag("mmap reports: %s", strerror(errno));
		exit(1);
	}

	for (i = 0; i < n; i++) {
		const struct guest_case *c = cases[i];

		if (!c->before_enable && !enabling_done) {
			shstk_enabled = shstk_enable();
			enabling_done = true;
			if (!cpu_shstk)
				skip_reason = shstk_no_cpu_reason();
			else if (!shstk_enabled)
				skip_reason = "enabling shadow stacks failed";
			ktap_diag("shadow stack enabled: %s", shstk_enabled ? "yes" : "no");
		}
		if (!case_selected(c)) {
			ktap_result(0, c->name, CASE_NOT_SELECTED);
			continue;
		}
		/* The CPU has shadow stacks but they could not be enabled: a failure. */
		if (c->needs_shstk && cpu_shstk && !shstk_enabled) {
			ktap_diag("%s", skip_reason);
			ktap_result(0, c->name, NULL);
			continue;
		}
		run_case(c);
	}
	ktap_finish();
}
