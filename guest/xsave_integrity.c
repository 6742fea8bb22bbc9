// SPDX-License-Identifier: GPL-2.0
/*
 * xsave_integrity: does every task get its own x87, SSE and AVX state back
 * across context switches?
 *
 * Many threads (more than CPUs), each loading the x87 stack and control
 * word, MXCSR and all sixteen YMM (or XMM) registers with a pattern of its
 * own, then either yielding (a voluntary switch) or spinning (preemption by
 * the timer), then reading everything back in the same asm block and
 * comparing.  A timer signal meanwhile runs a handler that scribbles over
 * the same registers, so that signal delivery and sigreturn (the standard
 * XSAVE format in the signal frame) interleave with the kernel's own saves
 * (XSAVES and the compacted format, where the CPU has them).  Any state
 * saved to or restored from the wrong place shows up as a mismatch.
 *
 * SHSTK_XSAVE_SECONDS (default 20), SHSTK_XSAVE_THREADS (default 8) and
 * SHSTK_XSAVE_SPIN (the spinning rounds' loop count, default 200000) on the
 * kernel command line or in the environment set the run.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>

#include "lib/ktap.h"
#include "lib/env.h"

#define MAX_THREADS	64
#define MAX_REPORTS	10
#define SPIN_LOOPS	200000		/* a spinning round's default */
#define FCW_DEFAULT	0x037f
#define MXCSR_DEFAULT	0x1f80

/* What one round loads and what it reads back: the offsets go into asm. */
struct fpregs {
	long double st[8];		/* 80-bit values in 16-byte slots */
	uint8_t ymm[16][32];		/* XMM in the low 16 bytes */
	uint32_t mxcsr;
	uint16_t fcw;
};

struct round {
	struct fpregs in, out;
	unsigned long spin;		/* 0: yield instead */
	uint32_t mxcsr_default;		/* put back at the end */
};

struct worker {
	pthread_t thread;
	unsigned int id;
	unsigned long rounds, bad_x87, bad_sse, bad_avx;
	long nvcsw, nivcsw;
};

static struct worker workers[MAX_THREADS];
static struct timespec deadline;
static bool have_avx;
static unsigned long spin_loops;
static unsigned long signals;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int reports;

#define IN(f)	"%c[in_" #f "](%[r])"
#define OUT(f)	"%c[out_" #f "](%[r])"
#define OFFSETS \
	[in_st] "i" (offsetof(struct round, in.st)), \
	[in_ymm] "i" (offsetof(struct round, in.ymm)), \
	[in_mxcsr] "i" (offsetof(struct round, in.mxcsr)), \
	[in_fcw] "i" (offsetof(struct round, in.fcw)), \
	[out_st] "i" (offsetof(struct round, out.st)), \
	[out_ymm] "i" (offsetof(struct round, out.ymm)), \
	[out_mxcsr] "i" (offsetof(struct round, out.mxcsr)), \
	[out_fcw] "i" (offsetof(struct round, out.fcw)), \
	[spin] "i" (offsetof(struct round, spin)), \
	[mxcsr_default] "i" (offsetof(struct round, mxcsr_default)), \
	[yield] "i" (SYS_sched_yield)
#define CLOBBERS \
	"rax", "rcx", "rdx", "r11", "memory", "cc", \
	"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", \
	"xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", \
	"st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)", "st(7)"

/*
 * Load, wait (yield, or spin so that the timer preempts), store: one asm
 * block, so that nothing of the compiler's runs between the load and the
 * check.  The defaults go back into FCW and MXCSR at the end.
 */
#define LOAD_X87 \
	"fninit\n\t" \
	"fldcw " IN(fcw) "\n\t" \
	".irp i,7,6,5,4,3,2,1,0\n\t" \
	"fldt \\i*16+" IN(st) "\n\t" \
	".endr\n\t" \
	"ldmxcsr " IN(mxcsr) "\n\t"
#define WAIT \
	"mov %c[spin](%[r]), %%rcx\n\t" \
	"test %%rcx, %%rcx\n\t" \
	"jnz 1f\n\t" \
	"mov %[yield], %%eax\n\t" \
	"syscall\n\t" \
	"jmp 2f\n" \
	"1:\n\t" \
	"dec %%rcx\n\t" \
	"jnz 1b\n" \
	"2:\n\t"
#define STORE_X87 \
	"stmxcsr " OUT(mxcsr) "\n\t" \
	"fnstcw " OUT(fcw) "\n\t" \
	".irp i,0,1,2,3,4,5,6,7\n\t" \
	"fstpt \\i*16+" OUT(st) "\n\t" \
	".endr\n\t" \
	"ldmxcsr %c[mxcsr_default](%[r])\n\t" \
	"fninit\n\t"

static void round_avx(struct round *r)
{
	asm volatile(LOAD_X87
		     ".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n\t"
		     "vmovdqu \\i*32+" IN(ymm) ", %%ymm\\i\n\t"
		     ".endr\n\t"
		     WAIT
		     ".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n\t"
		     "vmovdqu %%ymm\\i, \\i*32+" OUT(ymm) "\n\t"
		     ".endr\n\t"
		     STORE_X87
		     "vzeroupper\n\t"
		     : : [r] "r" (r), OFFSETS : CLOBBERS);
}

static void round_sse(struct round *r)
{
	asm volatile(LOAD_X87
		     ".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n\t"
		     "movdqu \\i*32+" IN(ymm) ", %%xmm\\i\n\t"
		     ".endr\n\t"
		     WAIT
		     ".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n\t"
		     "movdqu %%xmm\\i, \\i*32+" OUT(ymm) "\n\t"
		     ".endr\n\t"
		     STORE_X87
		     : : [r] "r" (r), OFFSETS : CLOBBERS);
}

/* The handler's own values in the same registers; sigreturn must undo them. */
static void scribble(int sig)
{
	static const uint8_t junk[32] __attribute__((aligned(32))) = {
		0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef,
		0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef,
		0xfe, 0xed, 0xfa, 0xce, 0xfe, 0xed, 0xfa, 0xce,
		0xfe, 0xed, 0xfa, 0xce, 0xfe, 0xed, 0xfa, 0xce,
	};
	static const uint32_t mxcsr = 0x7f80;	/* round toward zero */
	static const uint16_t fcw = 0x0c7f;

	__atomic_fetch_add(&signals, 1, __ATOMIC_RELAXED);
	if (have_avx)
		asm volatile(".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n\t"
			     "vmovdqu %0, %%ymm\\i\n\t"
			     ".endr\n\t"
			     "vzeroupper\n\t"
			     : : "m" (junk) : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4",
			     "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
			     "xmm12", "xmm13", "xmm14", "xmm15");
	asm volatile(".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n\t"
		     "movdqu %0, %%xmm\\i\n\t"
		     ".endr\n\t"
		     "ldmxcsr %1\n\t"
		     "fninit\n\t"
		     "fldcw %2\n\t"
		     "fldpi\n\tfldpi\n\tfldpi\n\tfldpi\n\t"
		     "fninit\n\t"
		     : : "m" (junk), "m" (mxcsr), "m" (fcw)
		     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
		     "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
		     "xmm15", "st", "st(1)", "st(2)", "st(3)");
}

static uint64_t mix(uint64_t x)
{
	/* splitmix64: every (thread, round, slot) gets its own bits */
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static void fill(struct round *r, unsigned int id, unsigned long n)
{
	static const uint16_t pc_rc[6] = { 0x000, 0x200, 0x300, 0x400, 0x800, 0xc00 };
	uint64_t seed = ((uint64_t)id << 40) ^ n;
	int i, j;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < 8; i++) {
		uint64_t m = mix(seed * 64 + i) | (1ULL << 63);	/* normal */
		uint16_t e = 0x3fff - 64 + (mix(seed * 64 + 8 + i) & 127);

		if (i & 1)
			e |= 0x8000;
		memcpy((uint8_t *)&r->in.st[i], &m, 8);
		memcpy((uint8_t *)&r->in.st[i] + 8, &e, 2);
	}
	for (i = 0; i < 16; i++)
		for (j = 0; j < 4; j++) {
			uint64_t v = mix(seed * 64 + 16 + i * 4 + j);

			memcpy(&r->in.ymm[i][j * 8], &v, 8);
		}
	/* exceptions masked; rounding, precision and FZ vary */
	r->in.fcw = 0x7f | pc_rc[mix(seed) % 6];
	r->in.mxcsr = MXCSR_DEFAULT | ((n & 3) << 13) | (n & 4 ? 0x8000 : 0);
	r->spin = n & 1 ? spin_loops : 0;
	r->mxcsr_default = MXCSR_DEFAULT;
}

static void report(struct worker *w, unsigned long n, const char *what, int reg,
		   const void *want, const void *got, size_t len)
{
	char a[80], b[80];
	size_t i;

	pthread_mutex_lock(&report_lock);
	if (reports++ < MAX_REPORTS) {
		/* most significant byte first, as the register reads */
		for (i = len; i--; ) {
			sprintf(a + 2 * (len - 1 - i), "%02x", ((const uint8_t *)want)[i]);
			sprintf(b + 2 * (len - 1 - i), "%02x", ((const uint8_t *)got)[i]);
		}
		ktap_diag("MISMATCH thread %u round %lu %s%d: want %s got %s",
			  w->id, n, what, reg, a, b);
	}
	pthread_mutex_unlock(&report_lock);
}

static void check(struct worker *w, struct round *r, unsigned long n)
{
	bool x87 = true, sse = true, avx = true;
	int i;

	for (i = 0; i < 8; i++)
		if (memcmp(&r->in.st[i], &r->out.st[i], 10)) {
			report(w, n, "st", i, &r->in.st[i], &r->out.st[i], 10);
			x87 = false;
		}
	if (r->in.fcw != r->out.fcw) {
		report(w, n, "fcw", 0, &r->in.fcw, &r->out.fcw, 2);
		x87 = false;
	}
	for (i = 0; i < 16; i++) {
		if (memcmp(r->in.ymm[i], r->out.ymm[i], 16)) {
			report(w, n, "xmm", i, r->in.ymm[i], r->out.ymm[i], 16);
			sse = false;
		}
		if (have_avx && memcmp(r->in.ymm[i] + 16, r->out.ymm[i] + 16, 16)) {
			report(w, n, "ymmh", i, r->in.ymm[i] + 16, r->out.ymm[i] + 16, 16);
			avx = false;
		}
	}
	if (r->in.mxcsr != r->out.mxcsr) {
		report(w, n, "mxcsr", 0, &r->in.mxcsr, &r->out.mxcsr, 4);
		sse = false;
	}
	w->bad_x87 += !x87;
	w->bad_sse += !sse;
	w->bad_avx += !avx;
}

static bool expired(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > deadline.tv_sec ||
	       (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct round r __attribute__((aligned(64)));
	struct rusage ru;
	unsigned long n;
	sigset_t alrm;

	/* The timer's signals land on the workers, in the middle of rounds. */
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
	for (n = 0; !expired(); n++) {
		fill(&r, w->id, n);
		if (have_avx)
			round_avx(&r);
		else
			round_sse(&r);
		check(w, &r, n);
	}
	w->rounds = n;
	if (!getrusage(RUSAGE_THREAD, &ru)) {
		w->nvcsw = ru.ru_nvcsw;
		w->nivcsw = ru.ru_nivcsw;
	}
	return NULL;
}

static bool cpu_avx(void)
{
	unsigned int a, b, c, d, lo, hi;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_AVX) || !(c & bit_OSXSAVE))
		return false;
	asm volatile("xgetbv" : "=a" (lo), "=d" (hi) : "c" (0));
	return (lo & 6) == 6;	/* the kernel enabled SSE and AVX state */
}

/* What the guest's CPU and kernel use, for the record. */
static void describe_cpu(void)
{
	unsigned int a = 0, b = 0, c = 0, d = 0;
	char line[1024], *p;
	FILE *f;
	int fd;
	ssize_t len;

	__get_cpuid_count(0xd, 1, &a, &b, &c, &d);
	ktap_diag("cpuid 0xd.1: eax=%#x (xsaveopt %d xsavec %d xsaves %d) ebx=%u ecx=%#x",
		  a, !!(a & 1), !!(a & 2), !!(a & 8), b, c);
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		ktap_diag("cpuinfo: xsave %s, xsavec %s, xsaves %s, avx %s",
			  strstr(line, " xsave ") ? "yes" : "no",
			  strstr(line, " xsavec ") ? "yes" : "no",
			  strstr(line, " xsaves ") ? "yes" : "no",
			  strstr(line, " avx ") ? "yes" : "no");
		break;
	}
	if (f)
		fclose(f);
	/* The kernel's own line on the format, from the ring buffer. */
	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	while (fd >= 0) {
		len = read(fd, line, sizeof(line) - 1);
		if (len < 0 && errno == EPIPE)
			continue;	/* a record overwritten under us */
		if (len <= 0)
			break;
		line[len] = 0;
		p = strstr(line, "x86/fpu: Enabled xstate features");
		if (p) {
			p[strcspn(p, "\n")] = 0;
			ktap_diag("kernel: %s", p);
		}
	}
	if (fd >= 0)
		close(fd);
}

int main(void)
{
	unsigned long seconds = env_num("SHSTK_XSAVE_SECONDS", 20);
	unsigned long nthreads = env_num("SHSTK_XSAVE_THREADS", 8);
	unsigned long rounds = 0, idle = 0, bad_x87 = 0, bad_sse = 0, bad_avx = 0;
	long nvcsw = 0, nivcsw = 0, cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct itimerval tick = { { 0, 3000 }, { 0, 3000 } };
	struct sigaction sa;
	sigset_t alrm;
	unsigned long i, t;
	int err;

	ktap_plan(4);
	if (nthreads < 1 || nthreads > MAX_THREADS) {
		ktap_diag("SHSTK_XSAVE_THREADS=%lu: must be 1..%d", nthreads, MAX_THREADS);
		exit(1);
	}
	/* 0 would make every round a yielding one */
	spin_loops = env_num("SHSTK_XSAVE_SPIN", SPIN_LOOPS);
	if (!spin_loops) {
		ktap_diag("SHSTK_XSAVE_SPIN=%s: must be a number, at least 1",
			  getenv("SHSTK_XSAVE_SPIN"));
		exit(1);
	}
	have_avx = cpu_avx();
	describe_cpu();
	ktap_diag("%lu threads on %ld CPUs for %lu s; state: x87, SSE%s",
		  nthreads, cpus, seconds, have_avx ? ", AVX" : " (no AVX)");
	ktap_diag("signals from a %ld us timer; spinning rounds of %lu loops",
		  (long)tick.it_interval.tv_usec, spin_loops);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = scribble;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	/* Not on this thread, which sleeps and reports progress. */
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, NULL);
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += seconds;
	setitimer(ITIMER_REAL, &tick, NULL);

	for (i = 0; i < nthreads; i++) {
		workers[i].id = i;
		err = pthread_create(&workers[i].thread, NULL, work, &workers[i]);
		if (err) {
			ktap_diag("pthread_create: %s", strerror(err));
			exit(1);
		}
	}
	/* The main thread reports progress while the workers run. */
	for (t = 10; t < seconds; t += 10) {
		sleep(10);
		ktap_diag("progress: %lu s of %lu, %lu signals", t, seconds,
			  __atomic_load_n(&signals, __ATOMIC_RELAXED));
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(workers[i].thread, NULL);
		rounds += workers[i].rounds;
		bad_x87 += workers[i].bad_x87;
		bad_sse += workers[i].bad_sse;
		bad_avx += workers[i].bad_avx;
		nvcsw += workers[i].nvcsw;
		nivcsw += workers[i].nivcsw;
		if (!workers[i].rounds) {
			ktap_diag("thread %lu completed no round", i);
			idle++;
		}
	}
	setitimer(ITIMER_REAL, &(struct itimerval){ 0 }, NULL);

	ktap_diag("%lu rounds checked, %ld voluntary and %ld involuntary switches, %lu signals",
		  rounds, nvcsw, nivcsw, __atomic_load_n(&signals, __ATOMIC_RELAXED));
	ktap_diag("mismatched rounds: x87 %lu, SSE %lu, AVX %lu", bad_x87, bad_sse, bad_avx);
	ktap_diag("metric: xsave_rounds=%lu", rounds);
	ktap_diag("metric: xsave_switches=%ld", nvcsw + nivcsw);
	ktap_diag("metric: xsave_signals=%lu", __atomic_load_n(&signals, __ATOMIC_RELAXED));
	ktap_diag("metric: xsave_mismatches=%lu", bad_x87 + bad_sse + bad_avx);
	/* Without switches the test proves nothing: that is a failure too. */
	ktap_result(!idle && nvcsw + nivcsw > (long)nthreads,
		    "threads_ran_and_switched", NULL);
	ktap_result(!bad_x87, "x87_state_intact", NULL);
	ktap_result(!bad_sse, "sse_state_intact", NULL);
	ktap_result(!bad_avx, "avx_state_intact", have_avx ? NULL : "CPU or kernel without AVX");
	ktap_finish();
}
