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
# (patches/qemu/) or the toolbox's Debian one; scripts/vm/emulators/qemu.sh
# holds the default.
QEMU ?=
ifneq ($(QEMU),)
export SHSTK_QEMU := $(QEMU)
endif
PROG ?=
# BASELINE=1: the same, on the pristine kernel without the series (A/B).
BASELINE ?=
export SHSTK_BASELINE := $(BASELINE)
# XSAVE_SECONDS=: how long x86's XSAVE state stress runs in make run and make
# fuzz (guest seconds; scripts/run.sh and scripts/fuzz.sh hold the defaults).
export XSAVE_SECONDS
# The supported architectures of config/arches.ini, the one table of them.
ARCHES := $(shell bash -c '. scripts/lib.sh && arch_names')
# The ones in progress: only with ARCH= given (config/arches.ini, status).
ARCHES_IN_PROGRESS := $(filter-out $(ARCHES),$(shell bash -c '. scripts/lib.sh && arch_names --all'))
# Targets that act on one architecture default to the host's (uname -m: the
# table's aliases make aarch64 arm64); the ones that test run every arch
# unless ARCH is given.
ONE_ARCH := $(or $(ARCH),$(shell uname -m))
ALL_ARCHES := $(or $(ARCH),$(ARCHES))

S := scripts

.PHONY: help toolbox kernel smoke run test check-series unit lint debug gdb-check \
	trace replay replay-check fuzz bench clean

help:
	@echo "shstk-lab targets (ARCH=$(subst $(eval) ,|,$(ARCHES)), EMU=qemu|bochs, PROG=static-binary):"
	@echo "  make run [ARCH=] [PROG=]  boot the patched kernel, run the guest suite (every arch"
	@echo "                            without ARCH), or a static PROG; results in out/<arch>/"
	@echo "  XSAVE_SECONDS=N           x86: the suite's XSAVE state stress (20 guest s under QEMU,"
	@echo "                            2 under Bochs, with shorter spinning rounds)"
	@echo "  make smoke [ARCH=]        boot and prove the series is in the kernel"
	@echo "  make test                 everything CI runs (series, unit, lint, and per arch kernel,"
	@echo "                            smoke, run, gdb-check, trace, short fuzz; x86 also on Bochs,"
	@echo "                            its verdicts compared with QEMU's)"
	@echo "  make kernel [ARCH=]       build the patched kernel (incremental, in the cache)"
	@echo "  BASELINE=1                with kernel/run/smoke: the pristine kernel, for A/B"
	@echo "  QEMU=patched|stock        x86_64, riscv64 under QEMU: the project's QEMU (patches/qemu/:"
	@echo "                            XSAVES and CET shadow stacks in TCG, two riscv Zicfiss"
	@echo "                            fixes; built in the cache; the default) or Debian's"
	@echo "                            (stock: x86 without CET, refusal paths only)"
	@echo "  make debug ARCH= [EMU=]   emulator paused + gdb with the kernel's and shstk-lab's helpers"
	@echo "  make gdb-check [ARCH=] [EMU=]  scripted, checked gdb step-through of clone3 with a token"
	@echo "  make replay ARCH=         record one round of the token race (QEMU record/replay), then gdb"
	@echo "                            on the replay, which runs backwards (reverse-continue, -stepi)"
	@echo "  make replay-check [ARCH=] the same, scripted: two replays must stop alike, a third runs"
	@echo "                            back from the winner's child to the token's consumption"
	@echo "  make trace [ARCH=] [SCRIPT=a,b] [PROG=]  bpftrace in the guest (every trace/ script at"
	@echo "                            once, or those named), each log checked"
	@echo "  make fuzz [ARCH=] [SEED=] [CALLS=] [ROUNDS=] [JOBS=]  clone3 fuzzer + token race on a KASAN/lockdep kernel"
	@echo "                            (x86: then the XSAVE state stress, XSAVE_SECONDS=60)"
	@echo "  make bench                measured figures on this machine -> docs/bench.md"
	@echo "  make check-series         git am the series onto the pristine tree, checkpatch it"
	@echo "  make toolbox              make the trixie toolbox (QEMU 11, gdb 18, gcc 14; gcc 15 for riscv64)"
	@echo "In progress, only with ARCH= given: $(or $(ARCHES_IN_PROGRESS),none) (config/arches.ini says what is missing)"
	@echo "Cache: $${SHSTK_CACHE:-~/.cache/shstk-lab} (set SHSTK_CACHE to move it)"

toolbox:
	$(S)/tools/toolbox.sh

kernel:
	@for a in $(ONE_ARCH); do $(S)/build/kernel.sh $$a || exit 1; done

smoke:
	@rc=0; for a in $(ALL_ARCHES); do $(S)/run.sh smoke $$a $(EMU) || rc=1; done; exit $$rc

run:
	@rc=0; for a in $(ALL_ARCHES); do $(S)/run.sh run $$a $(EMU) $(PROG) || rc=1; done; exit $$rc

check-series:
	$(S)/check-series.sh

unit:
	python3 -m unittest discover -s tests -t . -v

lint:
	$(S)/lint.sh

test:
	$(S)/test.sh $(ARCH)

debug:
	$(S)/debug.sh $(ONE_ARCH) $(EMU) $(PROG)

gdb-check:
	@rc=0; for a in $(ALL_ARCHES); do $(S)/gdb-check.sh $$a $(EMU) || rc=1; done; exit $$rc

replay:
	$(S)/replay.sh $(ONE_ARCH) $(EMU)

replay-check:
	@rc=0; for a in $(ALL_ARCHES); do $(S)/replay.sh --check $$a $(EMU) || rc=1; done; exit $$rc

# SCRIPT=a,b: trace/ scripts, all in one boot; unset: every one
SCRIPT ?=
trace:
	@rc=0; for a in $(ALL_ARCHES); do $(S)/trace.sh $$a "$(EMU)" "$(SCRIPT)" "$(PROG)" || rc=1; done; exit $$rc

# SEED=, CALLS=, ROUNDS=, JOBS=, KCONFIG= go to scripts/fuzz.sh.  KCONFIG is set
# here: "export" would hand an unset one down as empty, which fuzz.sh reads
# as "the normal kernel".  KCONFIG= (empty) on the command line still means that.
KCONFIG ?= debug
export SEED CALLS ROUNDS JOBS KCONFIG
fuzz:
	@rc=0; for a in $(ALL_ARCHES); do $(S)/fuzz.sh $$a $(EMU) || rc=1; done; exit $$rc

bench:
	$(S)/bench.sh

clean:
	rm -rf out
