# SPDX-License-Identifier: GPL-2.0
#
# shstk-lab: boot a kernel with the clone3() shadow stack series, test it,
# step through it with gdb and trace it.  `make help` lists the targets.
#
# Data flow: patches/ -> kernel (cache) -> guest image (guest/) -> VM
#            -> gdb/ and trace/ -> logs (out/) -> checks/ -> report

ARCH ?=
EMU ?= qemu
# QEMU=patched|stock: the x86_64 and riscv64 QEMU, the project's build
# (patches/qemu/) or the toolbox's Debian one; config/arches.ini holds
# each arch's default (qemu_default).
QEMU ?=
ifneq ($(QEMU),)
export SHSTK_QEMU := $(QEMU)
endif
PROG ?=
# BASELINE=1: the same, on the pristine kernel without the series (A/B).
BASELINE ?=
export SHSTK_BASELINE := $(BASELINE)
# SERIES=: another version of the series than patches/ (a folder of
# patches or mails, or an mbox), in a tree and builds of its own.
SERIES ?=
export SHSTK_SERIES := $(if $(SERIES),$(abspath $(SERIES)))
# KSRC=: a kernel git tree of yours, built and run as it is, never written to.
KSRC ?=
export SHSTK_KSRC := $(if $(KSRC),$(abspath $(KSRC)))
# XSAVE_SECONDS=: how long x86's XSAVE state stress runs in make run and make
# fuzz (guest seconds; scripts/run.sh and scripts/fuzz.sh hold the defaults).
export XSAVE_SECONDS
# The supported architectures of config/arches.ini, the one table of them.
ARCHES := $(shell bash -c '. scripts/lib/core.sh && shstk_arch_names')
# The ones in progress: only with ARCH= given (config/arches.ini, status).
ARCHES_IN_PROGRESS := $(filter-out $(ARCHES),$(shell bash -c '. scripts/lib/core.sh && shstk_arch_names --all'))
# Targets that act on one architecture default to the host's (uname -m: the
# table's aliases make aarch64 arm64); the ones that test run every arch
# EMU emulates unless ARCH is given.
ONE_ARCH := $(or $(ARCH),$(shell uname -m))
ALL_ARCHES := $(or $(ARCH),$(ARCHES))

S := scripts
# A make variable as one shell word.
quote = '$(subst ','\'',$(1))'
# A per-arch target: its script once per arch, then one summary line per
# arch (scripts/each-arch.sh); without ARCH, only the arches EMU emulates.
each_arch = exec $(S)/each-arch.sh $(if $(ARCH),,--emu $(call quote,$(EMU))) $(1) "$(ALL_ARCHES)"
# PROG is one architecture's program: it needs ARCH.
prog_needs_arch = $(if $(PROG),$(if $(ARCH),,$(error PROG= needs ARCH= (a static program is built for one architecture))))
# TESTS=: programs of the guest suite and cases in them (spec/selection.py),
# for the targets that run a suite of guest/tests.list; the others refuse it
# rather than run what was not asked for.  From make's command line only: a
# TESTS in the environment (automake's, a CI's) is not a choice of ours.
ifneq ($(origin TESTS),command line)
TESTS :=
endif
run fuzz watch: export SHSTK_TESTS := $(TESTS)
tests_refused = $(if $(TESTS),$(error TESTS= goes with make run and make fuzz: make $@ runs programs of its own, which TESTS= does not choose))

.PHONY: help toolbox kernel smoke run test check-series cover-letter unit lint debug gdb-check \
	trace replay replay-check fuzz bench tcg-tests watch clean

# `make help` prints the "##" lines below, the one list of targets and
# options (tests/test_docs.py holds the README's table to it).
help:
	@echo "shstk-lab (ARCH=$(subst $(eval) ,|,$(ARCHES)), EMU=qemu|bochs; cache: $$(bash -c '. scripts/lib/core.sh && echo "$$SHSTK_CACHE"'))"
	@awk -F' [|]( |$$)' '/^## / { sub(/^## /, ""); if (NF == 1) print; else if ($$2 == "") print "  " $$1; else printf "  %-34s %s\n", $$1, $$2 }' \
		$(firstword $(MAKEFILE_LIST))
	@echo "In progress, only with ARCH= given: $(or $(ARCHES_IN_PROGRESS),none) (config/arches.ini says what is missing)"

## Targets (every arch: each arch EMU emulates, or ARCH=; one arch: ARCH=, or the host's)
## make run [ARCH=] [EMU=] [PROG=] [TESTS=] |
##  | every arch: boot the patched kernel, run the guest suite
##  | (or TESTS= of it), or a static PROG (needs ARCH=); each
##  | program's verdict as it ends; results in out/<arch>/
run:
	$(prog_needs_arch)@$(call each_arch,run) $(S)/run.sh run {arch} $(call quote,$(EMU)) $(call quote,$(PROG))

## make watch [ARCH=] [EMU=] [TESTS=] [KSRC=] | make run now, and again whenever the kernel
##  | tree (KSRC, or the cache's with its local edits) changes, until Ctrl-C
watch:
	@exec $(S)/watch.sh $(S)/each-arch.sh $(if $(ARCH),,--emu $(call quote,$(EMU))) run "$(ALL_ARCHES)" $(S)/run.sh run {arch} $(call quote,$(EMU)) ''

## make smoke [ARCH=] [EMU=] | every arch: boot, print CPU shadow stack support, prove the
##  | series is in the kernel
smoke:
	$(tests_refused)@$(call each_arch,smoke) $(S)/run.sh smoke {arch} $(call quote,$(EMU))

## make test [ARCH=] | everything CI runs (series, unit, lint, and per arch kernel,
##  | smoke, run, gdb-check, trace, replay, short fuzz; x86 also on
##  | Bochs, its verdicts compared with QEMU's); ARCH= limits the
##  | VM steps to one arch
test:
	$(tests_refused)$(S)/test.sh $(ARCH)

## make kernel [ARCH=] | one arch: build the patched kernel (incremental, in the cache)
kernel:
	@$(S)/build/kernel.sh $(ONE_ARCH) --boot-image

## make debug [ARCH=] [EMU=] [PROG=] | one arch: the emulator paused + gdb with the kernel's and
##  | shstk-lab's helpers, stopped in copy_thread() of the guest
##  | program (or PROG)
debug:
	$(tests_refused)$(S)/debug.sh $(ONE_ARCH) $(call quote,$(EMU)) $(call quote,$(PROG))

## make gdb-check [ARCH=] [EMU=] | every arch: scripted, checked gdb step-through of clone3()
gdb-check:
	$(tests_refused)@$(call each_arch,gdb-check) $(S)/gdb-check.sh {arch} $(call quote,$(EMU))

## make replay [ARCH=] | one arch: record one round of the token race (QEMU
##  | record/replay), then gdb on the replay, which runs backwards
replay:
	$(tests_refused)$(S)/replay.sh $(ONE_ARCH) $(call quote,$(EMU))

## make replay-check [ARCH=] | every arch: the same, scripted: two replays must stop alike,
##  | a third runs back from the winner's child to the consumption
replay-check:
	$(tests_refused)@$(call each_arch,replay-check) $(S)/replay.sh --check {arch} $(call quote,$(EMU))

## make trace [ARCH=] [EMU=] [SCRIPT=a,b] [PROG=] |
##  | every arch: bpftrace in the guest (every trace/ script in
##  | one boot, or those named), each log checked
SCRIPT ?=
trace:
	$(tests_refused)$(prog_needs_arch)@$(call each_arch,trace) $(S)/trace.sh {arch} $(call quote,$(EMU)) $(call quote,$(SCRIPT)) $(call quote,$(PROG))

## make fuzz [ARCH=] [EMU=] [SEED=] [CALLS=] [ROUNDS=] [JOBS=] [KCONFIG=] [TESTS=] |
##  | one arch: clone3 fuzzer + token race on a KASAN/lockdep
##  | kernel (KCONFIG= empty: the normal one); hours at defaults
# KCONFIG is set here: "export" would hand an unset one down as empty,
# which fuzz.sh reads as "the normal kernel".  KCONFIG= (empty) on the
# command line still means that.
KCONFIG ?= debug
export SEED CALLS ROUNDS JOBS KCONFIG
fuzz:
	@$(S)/fuzz.sh $(ONE_ARCH) $(call quote,$(EMU))

## make bench | measured figures on this machine -> out/bench.md
##  | (BENCH_DOCS=1: also to docs/bench.md)
bench:
	$(S)/bench.sh

## make check-series [BISECT=1] | git am the series onto the pristine tree, checkpatch it;
##  | BISECT=1: also build every prefix for each arch, boot the clone3 selftest on the last
check-series:
	$(S)/check-series.sh $(if $(filter 1,$(BISECT)),--bisect)

## make cover-letter | the series as mails in out/cover-letter/: format-patch --cover-letter
##  | --base, Cc lists, changelog and the harness's evidence; checkpatch --strict
cover-letter:
	$(S)/cover-letter.sh $(call quote,$(SEND_VERSION))

## make unit | the host-side unit tests (no VM)
unit:
	python3 -m unittest discover -s tests -t . -v

## make lint | shellcheck, pyflakes, checkpatch on the project's own code
lint:
	$(S)/lint.sh
## make tcg-tests [ARCH=] | every arch: the bare-metal system tests patches/qemu/ adds to
##  | QEMU's tests/tcg (x86_64: XSAVES, CET shadow stacks, IBT), under the project's QEMU
tcg-tests:
	@$(call each_arch,tcg-tests) $(S)/tcg-tests.sh {arch}

## make toolbox | make the whole trixie toolbox (QEMU 11, gdb 18, gcc 14;
##  | gcc 15 for riscv64) in the cache; a step installs the sets it needs
toolbox:
	$(S)/tools/toolbox.sh all
	$(S)/tools/tb --versions

## make clean | remove out/ (the cache stays: rm -rf it to start afresh)
clean:
	rm -rf out

## Options
## ARCH=x86_64|arm64|riscv64 | the architecture (see "Targets" for each one's default)
## EMU=qemu|bochs | the emulator (bochs: x86_64 only)
## PROG=FILE | a static program of yours, run in the guest instead of the
##  | suite (run, trace, debug)
## TESTS='WORD ...' | run, fuzz: only these programs of the suite (names or globs
##  | of * and ?, comma- or space-separated), or cases in them:
##  | PROG:CASE, or CASE alone (shstk_clone3, cet_insns); the
##  | report names what was left out (docs/guest-suite.md)
## QEMU=patched|stock | x86_64, riscv64 under QEMU: the project's QEMU (patches/qemu/:
##  | CET in TCG, Zicfiss fixes; the default) or Debian's (stock)
## BASELINE=1 | with kernel, run, smoke: the pristine kernel, for A/B
## SEND_VERSION=N | with cover-letter: the version the mails say they are (24)
## SERIES=DIR|MBOX | every target but bench: another version of the series (patches or
##  | mails; patches/vN/ adds what the project needs for vN)
## KSRC=DIR | every target: your own kernel git tree, at its HEAD with its
##  | uncommitted changes, built in the cache and never written to (docs/working.md)
## XSAVE_SECONDS=N | x86: the suite's XSAVE state stress (20 guest s under QEMU,
##  | 2 under Bochs; 60 in make fuzz)
## SHSTK_SNAPSHOT=0 | boot cold instead of restoring a post-boot snapshot
## SHSTK_CACHE=DIR | where toolbox, trees, builds and images live
