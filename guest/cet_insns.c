// SPDX-License-Identifier: GPL-2.0
/*
 * cet_insns: the CET shadow-stack instructions and faults, one by one, from
 * user space.  It checks the emulator (QEMU's TCG with the project's
 * patches, or Bochs) as much as the kernel: RDSSP, CALL/RET, INCSSP,
 * RSTORSSP and SAVEPREVSSP, WRSS, a forged return (#CP), an ordinary write
 * to a shadow stack page, far CALL and RET (and a forged far return), a
 * far JMP into 32-bit code with SSP above 4 GiB (#GP), and a signal
 * delivered and returned from on a shadow stack.  Both emulators must give
 * the same verdicts (make test compares them); on a CPU without user
 * shadow stacks every case but the first is skipped, with the reason.
 *
 * Each case runs in a child of its own that enables shadow stacks first,
 * so that a fault ends only that child: the case's result is the child's
 * exit status, or 100 + si_code for SIGSEGV and 200 for SIGILL, caught by
 * a handler that exits at once.  A case says which it must be with
 * .exit_status (CASE(), lib/case.h), 0 if none is given.  "-t GLOB" runs
 * only the cases it matches, the others reported skipped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "lib/shstk.h"
#include "lib/ktap.h"
#include "lib/case.h"

#if !defined(__x86_64__)
#error "cet_insns tests x86 CET instructions: build it for x86_64 only (guest/tests.list)"
#endif

bool shstk_enabled;

#define EXIT_SEGV(code)		(100 + (code))
#define EXIT_SIGILL		200
#define EXIT_NO_ENABLE		250
#define SHSTK_SIZE		4096UL
#define DEPTH			2000
/* Linux's x86_64 GDT: the 32-bit user code segment (__USER32_CS). */
#define USER32_CS		0x23
/* LAR's view of it: present, DPL 3, code, L clear, D set. */
#define LAR_USER32_CODE_MASK	0x0060f800
#define LAR_USER32_CODE		0x0040f800

static volatile uint64_t handler_ssp;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	_exit(sig == SIGSEGV ? EXIT_SEGV(si->si_code) : EXIT_SIGILL);
}

static void on_usr1(int sig)
{
	handler_ssp = read_ssp();
}

/* RDSSP is a NOP without shadow stacks: the register keeps its value. */
CASE(rdssp_nop_without_shstk)
{
	CHECK(read_ssp() == 0);
	return 0;
}

static __attribute__((noipa)) uint64_t callee_ssp(void)
{
	return read_ssp();
}

/* SSP is 8-byte aligned, and a CALL pushes one 8-byte entry. */
CASE(rdssp_reads_the_ssp, .needs_shstk = true)
{
	uint64_t ssp = read_ssp();
	uint64_t inner = callee_ssp();

	ktap_diag("ssp %#lx, in a callee %#lx", (unsigned long)ssp, (unsigned long)inner);
	CHECK(ssp && !(ssp & 7));
	CHECK(inner == ssp - 8);
	return 0;
}

static __attribute__((noipa)) long dive(int depth, uint64_t expect)
{
	long bad = read_ssp() != expect;

	if (depth) {
		bad += dive(depth - 1, expect - 8);
		/* Keep the call a call: no tail call, no loop. */
		asm volatile ("" : "+r"(bad));
	}
	return bad;
}

/* Each level of a deep recursion is one entry, and every RET matches. */
CASE(call_ret_deep_recursion, .needs_shstk = true)
{
	uint64_t ssp = read_ssp();

	CHECK(dive(DEPTH, ssp - 8) == 0);
	CHECK(read_ssp() == ssp);
	return 0;
}

/* A RET to an address the shadow stack does not hold: #CP, SEGV_CPERR. */
CASE(forged_return_cperr, .needs_shstk = true, .exit_status = EXIT_SEGV(SEGV_CPERR))
{
	shstk_forged_return();
	return 1;
}

/* An ordinary store to a shadow stack page: a write fault, SEGV_ACCERR. */
CASE(ordinary_write_to_shstk_accerr, .needs_shstk = true, .exit_status = EXIT_SEGV(SEGV_ACCERR))
{
	*(volatile uint64_t *)read_ssp() = 0;
	return 1;
}

/*
 * WRSS without IA32_U_CET.WR_SHSTK_EN: #UD.  The same store works first,
 * with WRSS enabled, so that the #UD is the control bit's and not that of
 * an emulator without WRSS at all.
 */
CASE(wrss_not_enabled_sigill, .needs_shstk = true, .exit_status = EXIT_SIGILL)
{
	long base = map_shadow_stack(0, SHSTK_SIZE, 0);

	CHECK(base > 0);
	CHECK(raw_syscall6(__NR_arch_prctl, ARCH_SHSTK_ENABLE, ARCH_SHSTK_WRSS, 0, 0, 0, 0) == 0);
	asm volatile ("wrssq %0, (%1)" : : "r"(1L), "r"(base) : "memory");
	CHECK(*(volatile uint64_t *)base == 1);
	CHECK(raw_syscall6(__NR_arch_prctl, ARCH_SHSTK_DISABLE, ARCH_SHSTK_WRSS, 0, 0, 0, 0) == 0);
	asm volatile ("wrssq %0, (%1)" : : "r"(2L), "r"(base) : "memory");
	return 1;
}

/* WRSS once the kernel enabled it: the word changes, a normal load sees it. */
CASE(wrss_enabled_writes, .needs_shstk = true)
{
	long base = map_shadow_stack(0, SHSTK_SIZE, 0);
	uint64_t val = 0x5a5a5a5a12345678ULL;

	CHECK(base > 0);
	CHECK(raw_syscall6(__NR_arch_prctl, ARCH_SHSTK_ENABLE, ARCH_SHSTK_WRSS, 0, 0, 0, 0) == 0);
	asm volatile ("wrssq %0, (%1)" : : "r"(val), "r"(base + 64) : "memory");
	CHECK(*(volatile uint64_t *)(base + 64) == val);
	return 0;
}

/*
 * A CALL to the next instruction (displacement 0, the way code reads its
 * own address) pushes nothing to the shadow stack.  The stack pointer moves
 * below the red zone first, which the call would otherwise overwrite.
 */
CASE(call_next_instruction_no_push, .needs_shstk = true)
{
	uint64_t before = read_ssp(), after = 0;

	asm volatile ("lea -128(%%rsp), %%rsp\n\t"
		      "call 1f\n"
		      "1:\tlea 136(%%rsp), %%rsp\n\t"
		      "rdsspq %0"
		      : "+r"(after) : : "memory");
	CHECK(before && !(before & 7));
	CHECK(after == before);
	return 0;
}

/*
 * INCSSP pops entries: a CALL whose return address is dropped from both
 * stacks by hand, and a count whose low byte is 0, which pops nothing.
 */
CASE(incssp_pops, .needs_shstk = true)
{
	uint64_t before = read_ssp(), after = 0, after_zero = 0;

	asm volatile ("lea -128(%%rsp), %%rsp\n\t"
		      "call 2f\n"
		      "1:\tud2\n"
		      "2:\tlea 136(%%rsp), %%rsp\n\t"
		      "mov $1, %%ecx\n\t"
		      "incsspq %%rcx\n\t"
		      "rdsspq %0\n\t"
		      "mov $0x100, %%ecx\n\t"
		      "incsspq %%rcx\n\t"
		      "rdsspq %1"
		      : "+r"(after), "+r"(after_zero) : : "rcx", "memory");
	CHECK(before && !(before & 7));
	CHECK(after == before);
	CHECK(after_zero == before);
	return 0;
}

/*
 * RSTORSSP to a new shadow stack's restore token and SAVEPREVSSP, then the
 * same back to the first one: both stacks end with a restore token where
 * they were left, and SSP is back where it was.
 */
CASE(rstorssp_switch_and_back, .needs_shstk = true)
{
	long base = map_shadow_stack(0, SHSTK_SIZE, SHADOW_STACK_SET_TOKEN);
	uint64_t top, ssp = 0, on_new = 0, back = 0, new_token, old_token;

	CHECK(base > 0);
	top = base + SHSTK_SIZE;
	CHECK(*(volatile uint64_t *)(top - 8) == (top | 1));
	/* No call in between: the old SSP is read in the same block. */
	asm volatile ("rdsspq %0\n\t"
		      "rstorssp (%3)\n\t"
		      "saveprevssp\n\t"
		      "rdsspq %1\n\t"
		      "rstorssp -8(%0)\n\t"
		      "saveprevssp\n\t"
		      "rdsspq %2"
		      : "+&r"(ssp), "+&r"(on_new), "+&r"(back) : "r"(top - 8)
		      : "memory", "cc");
	/* Before any call, which would push over the slot below SSP. */
	new_token = *(volatile uint64_t *)(top - 8);
	old_token = *(volatile uint64_t *)(ssp - 8);
	ktap_diag("ssp %#lx, on the new stack %#lx, back %#lx; tokens %#lx (new), %#lx (old)",
		  (unsigned long)ssp, (unsigned long)on_new, (unsigned long)back,
		  (unsigned long)new_token, (unsigned long)old_token);
	CHECK(on_new == top);
	CHECK(back == ssp);
	/* A restore token on the new stack, the previous-SSP one on the old. */
	CHECK(new_token == (top | 1));
	CHECK(old_token == (top | 3));
	return 0;
}

/* RSTORSSP to a word that is not a restore token: #CP, SEGV_CPERR. */
CASE(rstorssp_bad_token_cperr, .needs_shstk = true, .exit_status = EXIT_SEGV(SEGV_CPERR))
{
	long base = map_shadow_stack(0, SHSTK_SIZE, SHADOW_STACK_SET_TOKEN);

	CHECK(base > 0);
	asm volatile ("rstorssp (%0)" : : "r"(base + SHSTK_SIZE - 16) : "memory", "cc");
	return 1;
}

/*
 * A far pointer in memory, m16:32: the form both Intel and AMD take in
 * 64-bit mode (m16:64 is Intel's only).  The program is linked below 4 GiB.
 */
struct far_ptr32 {
	uint32_t offset;
	uint16_t selector;
} __attribute__((packed));

static struct far_ptr32 far32;
/* The callee's SSP and the three entries above it, read before any call. */
static volatile uint64_t far_seen[4];

/*
 * A far CALL to this same code segment pushes the caller's CS, the address
 * to return to and the old SSP to the shadow stack; the far RET checks and
 * pops them.  The entries are read in the callee, before any near call
 * could write over them.
 */
CASE(far_call_ret_same_level, .needs_shstk = true)
{
	uint64_t before = read_ssp(), after = 0, ret_ip = 0;
	uint16_t cs;

	asm volatile ("mov %%cs, %0" : "=r"(cs));
	far32.selector = cs;
	asm volatile ("lea 1f(%%rip), %%rax\n\t"
		      "mov %%eax, (%[far])\n\t"
		      "lea 2f(%%rip), %[ret_ip]\n\t"
		      "lea -128(%%rsp), %%rsp\n\t"
		      "lcall *(%[far])\n"
		      "2:\tlea 128(%%rsp), %%rsp\n\t"
		      "rdsspq %[after]\n\t"
		      "jmp 3f\n"
		      "1:\trdsspq %%rax\n\t"
		      "mov %%rax, (%[seen])\n\t"
		      "mov (%%rax), %%rcx\n\t"
		      "mov %%rcx, 8(%[seen])\n\t"
		      "mov 8(%%rax), %%rcx\n\t"
		      "mov %%rcx, 16(%[seen])\n\t"
		      "mov 16(%%rax), %%rcx\n\t"
		      "mov %%rcx, 24(%[seen])\n\t"
		      "lretl\n"
		      "3:"
		      : [after] "+r"(after), [ret_ip] "=&r"(ret_ip)
		      : [far] "r"(&far32), [seen] "r"(far_seen)
		      : "rax", "rcx", "memory");
	ktap_diag("ssp %#lx, in the callee %#lx: %#lx %#lx %#lx; back %#lx",
		  (unsigned long)before, (unsigned long)far_seen[0],
		  (unsigned long)far_seen[1], (unsigned long)far_seen[2],
		  (unsigned long)far_seen[3], (unsigned long)after);
	CHECK(before && !(before & 7));
	CHECK(far_seen[0] == before - 24);
	CHECK(far_seen[1] == before);
	CHECK(far_seen[2] == ret_ip);
	CHECK(far_seen[3] == cs);
	CHECK(after == before);
	return 0;
}

/*
 * A far RET whose return address on the stack is not the one the far CALL
 * pushed to the shadow stack: #CP(FAR-RET/IRET), SEGV_CPERR.
 */
CASE(far_ret_forged_cperr, .needs_shstk = true, .exit_status = EXIT_SEGV(SEGV_CPERR))
{
	uint16_t cs;

	asm volatile ("mov %%cs, %0" : "=r"(cs));
	far32.selector = cs;
	asm volatile ("lea 1f(%%rip), %%rax\n\t"
		      "mov %%eax, (%[far])\n\t"
		      "lea -128(%%rsp), %%rsp\n\t"
		      "lcall *(%[far])\n\t"
		      "jmp 2f\n"
		      "1:\tlea 2f(%%rip), %%rax\n\t"
		      "mov %%eax, (%%rsp)\n\t"
		      "lretl\n"
		      "2:\tlea 128(%%rsp), %%rsp"
		      : : [far] "r"(&far32) : "rax", "memory");
	return 1;
}

/*
 * A far JMP into compatibility-mode code (the 32-bit user code segment)
 * while SSP is above 4 GiB, where Linux maps shadow stacks: #GP, which
 * Linux reports as SIGSEGV with SI_KERNEL.  Were the jump taken, the 32-bit
 * code it lands on is a UD2.
 */
CASE(far_jmp_to_compat_high_ssp_gp, .needs_shstk = true, .exit_status = EXIT_SEGV(SI_KERNEL))
{
	uint32_t ar = 0;
	bool valid = false;

	CHECK(read_ssp() >> 32);
	/* The #GP must be the SSP's: the selector is a usable 32-bit code segment. */
	asm volatile ("lar %[sel], %[ar]\n\t"
		      "setz %[valid]"
		      : [ar] "+r"(ar), [valid] "=q"(valid) : [sel] "r"(USER32_CS) : "cc");
	CHECK(valid);
	CHECK((ar & LAR_USER32_CODE_MASK) == LAR_USER32_CODE);
	far32.selector = USER32_CS;
	asm volatile ("lea 1f(%%rip), %%rax\n\t"
		      "mov %%eax, (%[far])\n\t"
		      "ljmp *(%[far])\n"
		      "1:\tud2"
		      : : [far] "r"(&far32) : "rax", "memory");
	return 1;
}

/* A signal handler runs on the shadow stack and sigreturn restores SSP. */
CASE(signal_and_sigreturn, .needs_shstk = true)
{
	uint64_t ssp = read_ssp();

	CHECK(signal(SIGUSR1, on_usr1) != SIG_ERR);
	CHECK(raise(SIGUSR1) == 0);
	ktap_diag("ssp %#lx, in the handler %#lx", (unsigned long)ssp,
		  (unsigned long)handler_ssp);
	CHECK(handler_ssp && handler_ssp < ssp);
	CHECK(read_ssp() == ssp);
	return 0;
}

/* Never returns: its own frame is not on the shadow stack it enables. */
static __attribute__((noreturn, noinline)) void child(const struct guest_case *c)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGILL, &sa, NULL);
	if (c->needs_shstk && shstk_enable_raw() != 0)
		_exit(EXIT_NO_ENABLE);
	_exit(c->run());
}

/* The case's exit status, or 300 + the signal that killed it. */
static int run_child(const struct guest_case *c)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		child(c);
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 300 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	const struct guest_case *const *cases;
	bool cpu = shstk_cpu_has();
	size_t i, n;

	case_options(argc, argv);
	cases = case_list(&n);
	ktap_plan(n);
	ktap_diag("cpu shadow stack: %s", cpu ? "yes" : "no");
	for (i = 0; i < n; i++) {
		const struct guest_case *c = cases[i];
		int got;

		if (!case_selected(c)) {
			ktap_result(0, c->name, CASE_NOT_SELECTED);
			continue;
		}
		if (c->needs_shstk && !cpu) {
			ktap_result(0, c->name, shstk_no_cpu_reason());
			continue;
		}
		got = run_child(c);
		if (got != c->exit_status)
			ktap_diag("%s: the child ended with %d, want %d%s", c->name, got,
				  c->exit_status,
				  got == EXIT_NO_ENABLE ? " (enabling shadow stacks failed)" : "");
		ktap_result(got == c->exit_status, c->name, NULL);
	}
	ktap_finish();
}
