# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2153  # SHSTK_* and the arch variables: from core.sh
#
# What a make entry point (scripts/*.sh) sources: it may call every layer,
# so it has core.sh and both layers' helpers, and here what ties them
# together for a run: everything a boot needs, built and handed to the VM
# layer (shstk_build_boot, shstk_emulator_build), and what the gdb layer is
# handed of a VM (shstk_export_gdb_env).  Sourced, never run.

# shellcheck source=scripts/lib/core.sh
. "${BASH_SOURCE[0]%/*}/core.sh"
# shellcheck source=scripts/lib/build.sh
. "$SHSTK_TOP/scripts/lib/build.sh"
# shellcheck source=scripts/lib/vm.sh
. "$SHSTK_TOP/scripts/lib/vm.sh"

# Everything a boot of this run needs, built when missing or out of date,
# for scripts/vm/boot.sh, which builds nothing: the kernel (the patched
# one, or the BASELINE or KCONFIG variant), the guest image (GUEST_IMAGE),
# the snapshot base that goes with it (SHSTK_SNAPSHOT_BASE) and the
# emulator's binary (shstk_emulator_build).  The guest programs are always built
# against the patched kernel's headers and selftests, so an A/B or
# debug-kernel run boots the very same programs; when this run's kernel is
# another one, only those headers are made for it, not a second kernel.
# --gdb: the boot is one gdb attaches to.  After shstk_arch_vars and
# shstk_emu_vars.
#   shstk_build_boot [--gdb] SUITE | --prog FILE
# shellcheck disable=SC2034  # GUEST_IMAGE is for the scripts that source this file
shstk_build_boot() {
	local purpose=run
	[ "$1" != --gdb ] || { purpose=gdb; shift; }
	if [ -n "$SHSTK_BASELINE${SHSTK_KCONFIG_VARIANT:-}" ]; then
		SHSTK_BASELINE='' SHSTK_KCONFIG_VARIANT='' "$SHSTK_TOP/scripts/build/kernel.sh" "$ARCH" --headers
	fi
	"$SHSTK_TOP/scripts/build/kernel.sh" "$ARCH"
	GUEST_IMAGE=$(shstk_build_guest "$@")
	SHSTK_SNAPSHOT_BASE=
	! shstk_snapshot_wanted || SHSTK_SNAPSHOT_BASE=$(shstk_guest_snapshot_base "$GUEST_IMAGE")
	export SHSTK_SNAPSHOT_BASE
	shstk_emulator_build "$purpose"
}

# VAR=(the command that builds the project's build of $EMU for $ARCH, the
# one its backend declares in EMU_SOURCE_BUILD), empty for an emulator the
# toolbox provides.  PURPOSE: "all" (every binary its runs may use: what
# make test builds ahead), "run" or "gdb" (the one a run gdb attaches to
# uses).  After shstk_emu_vars.
#   shstk_emulator_build_command VAR [all|run|gdb]
shstk_emulator_build_command() {
	local -n _shstk_cmd=$1
	local purpose=${2:-all}
	_shstk_cmd=()
	case "$EMU_SOURCE_BUILD" in
	"") ;;
	qemu) _shstk_cmd=("$SHSTK_TOP/scripts/build/qemu.sh" "$ARCH") ;;
	bochs)
		case "$purpose" in
		all | run) _shstk_cmd=("$SHSTK_TOP/scripts/build/bochs.sh" "$purpose") ;;
		gdb) _shstk_cmd=("$SHSTK_TOP/scripts/build/bochs.sh" gdbstub) ;;
		*) shstk_die "shstk_emulator_build_command: no purpose '$purpose' (all, run or gdb)" ;;
		esac
		;;
	*) shstk_die "$EMU's backend declares EMU_SOURCE_BUILD=$EMU_SOURCE_BUILD, which scripts/build has no build of" ;;
	esac
}

# The emulator binary a run of PURPOSE (run or gdb) boots, built now if it
# is missing or out of date, for scripts/vm/boot.sh: SHSTK_EMU_BIN (its
# path, empty for the toolbox's own), SHSTK_EMU_DESCRIPTION (what it is,
# for vm.json) and SHSTK_EMU_PURPOSE, exported.  A paused boot waits for its
# gdbstub for a minute only, and a timed replay must not time a build.
#   shstk_emulator_build [run|gdb]
shstk_emulator_build() {
	local cmd built
	SHSTK_EMU_PURPOSE=${1:-run}
	shstk_emulator_build_command cmd "$SHSTK_EMU_PURPOSE"
	SHSTK_EMU_BIN='' SHSTK_EMU_DESCRIPTION=''
	if [ "${#cmd[@]}" -gt 0 ]; then
		built=$("${cmd[@]}") || shstk_die "building $EMU for $ARCH failed (${cmd[*]#"$SHSTK_TOP"/})"
		SHSTK_EMU_BIN=${built%%$'\n'*}
		SHSTK_EMU_DESCRIPTION=${built#*$'\n'}
	fi
	export SHSTK_EMU_BIN SHSTK_EMU_DESCRIPTION SHSTK_EMU_PURPOSE
}

# What the gdb layer reads of the VM it attaches to (its session module):
# the kernel, its gdb scripts, the guest program, the gdbstub's port and the
# QMP socket, if any.  The emulator's gdb capabilities go along (after
# shstk_emu_vars), so the gdb scripts ask them and never the emulator's name.
#   shstk_export_gdb_env PROG
shstk_export_gdb_env() {
	export SHSTK_VMLINUX=$KBUILD_DIR/vmlinux SHSTK_GDB_SCRIPTS=$KBUILD_DIR/vmlinux-gdb.py
	export SHSTK_PROG=$1 SHSTK_PORT=$GDB_PORT SHSTK_ARCH=$ARCH SHSTK_EMU=$EMU
	export SHSTK_EMU_BREAKPOINTS=$EMU_BREAKPOINTS SHSTK_EMU_SSP_REGISTER=$EMU_SSP_REGISTER
	export SHSTK_EMU_NO_SHSTK_WHY=$EMU_NO_SHSTK_WHY SHSTK_QMP=${VM_QMP:-}
}
