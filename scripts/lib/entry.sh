# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2153  # SHSTK_* and the arch variables: from core.sh
#
# What a make entry point (scripts/*.sh) sources: it may call every layer,
# so it has core.sh and both layers' helpers, and here what ties them
# together for a run: everything a boot needs, built and handed to the VM
# layer (shstk_build_boot, shstk_emulator_build), what TESTS= chooses of a
# suite (shstk_tests_select), a boot with checks/ following its results as
# they come (shstk_start_boot), and what the gdb layer is handed of a VM
# (shstk_export_gdb_env).  Sourced, never run.

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
# The emulator's build runs beside the kernel's and the guest's (a fresh
# machine's source fetch and configure fill the kernel build's one-core
# stretches): a failed kernel or guest build stops it, and its own failure
# ends the script once the step under way is done.
# --gdb: the boot is one gdb attaches to.  After shstk_arch_vars and
# shstk_emu_vars.
#   shstk_build_boot [--gdb] SUITE | --prog FILE
# shellcheck disable=SC2034  # GUEST_IMAGE is for the scripts that source this file
shstk_build_boot() {
	local purpose=run kernel_args=()
	[ "$1" != --gdb ] || { purpose=gdb; shift; }
	[ "$EMU_BOOT_IMAGE" != yes ] || kernel_args=(--boot-image)
	_shstk_emulator_build_start "$purpose"
	# The kernel's build as a child, not in the foreground: bash runs no
	# trap while it waits for a foreground command, so a TERM to this
	# script would wait out the whole build before stopping it and the
	# emulator's beside it.
	if [ -n "$SHSTK_BASELINE${SHSTK_KCONFIG_VARIANT:-}" ]; then
		SHSTK_BASELINE='' SHSTK_KCONFIG_VARIANT='' shstk_run_child "$SHSTK_TOP/scripts/build/kernel.sh" \
			"$ARCH" --headers || _shstk_emulator_build_abandon
	fi
	shstk_run_child "$SHSTK_TOP/scripts/build/kernel.sh" "$ARCH" "${kernel_args[@]}" ||
		_shstk_emulator_build_abandon
	_shstk_emulator_build_ended && _shstk_emulator_build_finish
	GUEST_IMAGE=$(shstk_build_guest "$@") || _shstk_emulator_build_abandon
	SHSTK_SNAPSHOT_BASE=
	if shstk_snapshot_wanted; then
		SHSTK_SNAPSHOT_BASE=$(shstk_guest_snapshot_base "$GUEST_IMAGE") || _shstk_emulator_build_abandon
	fi
	export SHSTK_SNAPSHOT_BASE
	[ -z "$_shstk_emu_build_pid" ] || _shstk_emulator_build_ended ||
		shstk_msg "waiting for the $EMU build beside it ($_shstk_emu_build_cmd)"
	_shstk_emulator_build_finish
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
	_shstk_emulator_build_start "${1:-run}"
	_shstk_emulator_build_finish
}

# shstk_emulator_build in two halves, for a build beside other work: the
# start runs the emulator's build command as a child (its output, the
# binary and its description, goes to a file unlinked at once, read
# through a descriptor kept here), the finish waits
# for it and reads that; the abandon stops it and ends the script, for a
# failed step beside it, which has said why.
#   _shstk_emulator_build_start PURPOSE; ...; _shstk_emulator_build_finish
_shstk_emulator_build_start() {
	local cmd out
	SHSTK_EMU_PURPOSE=$1
	shstk_emulator_build_command cmd "$SHSTK_EMU_PURPOSE"
	_shstk_emu_build_cmd="${cmd[*]#"$SHSTK_TOP"/}" _shstk_emu_build_pid='' _shstk_emu_build_fd=''
	SHSTK_EMU_BIN='' SHSTK_EMU_DESCRIPTION=''
	export SHSTK_EMU_BIN SHSTK_EMU_DESCRIPTION SHSTK_EMU_PURPOSE
	[ "${#cmd[@]}" -gt 0 ] || return 0
	out=$(mktemp "${TMPDIR:-/tmp}/shstk-emulator-build.XXXXXX")
	exec {_shstk_emu_build_fd}<"$out"
	shstk_start_child "${cmd[@]}" >"$out"
	_shstk_emu_build_pid=$CHILD_PID
	rm -f "$out"
}
# Whether the emulator's build has ended (and so can be finished at once).
_shstk_emulator_build_ended() {
	[ -n "$_shstk_emu_build_pid" ] && ! _shstk_own_child "$_shstk_emu_build_pid"
}
_shstk_emulator_build_finish() {
	local built rc=0
	[ -n "$_shstk_emu_build_pid" ] || return 0
	shstk_wait_child "$_shstk_emu_build_pid" || rc=$?
	_shstk_emu_build_pid=''
	built=$(cat <&"$_shstk_emu_build_fd")
	exec {_shstk_emu_build_fd}<&-
	[ "$rc" -eq 0 ] || shstk_die "building $EMU for $ARCH failed ($_shstk_emu_build_cmd, status $rc; its error above)"
	SHSTK_EMU_BIN=${built%%$'\n'*}
	SHSTK_EMU_DESCRIPTION=${built#*$'\n'}
}
_shstk_emulator_build_abandon() {
	local rc=$?
	if [ -n "$_shstk_emu_build_pid" ]; then
		! _shstk_own_child "$_shstk_emu_build_pid" ||
			shstk_msg "stopping the $EMU build beside it ($_shstk_emu_build_cmd)"
		shstk_stop_child "$_shstk_emu_build_pid"
	fi
	exit "$((rc ? rc : 1))"
}

# The guest programs and cases TESTS= (SHSTK_TESTS) chooses from SUITE of
# guest/tests.list on $ARCH (spec/selection.py), checked before any long
# step: TESTS_APPEND, the shstk.tests= word for init's command line ("" for
# the whole suite).  A word that matches nothing stops the script, naming
# it and the names there are.  A selection of nothing on this arch (words
# for another arch's programs) sets TESTS_NONE, the reason the caller's
# step is a skip (shstk_skip_step), once it has cleared its last results.
#   shstk_tests_select SUITE
# shellcheck disable=SC2034  # TESTS_APPEND, TESTS_NONE: for the scripts that source this file
shstk_tests_select() {
	local out kind line
	TESTS_APPEND='' TESTS_NONE=''
	[ -n "${SHSTK_TESTS:-}" ] || return 0
	out=$(PYTHONPATH=$SHSTK_TOP shstk_py -m spec.selection "$ARCH" "$1" "$SHSTK_TESTS") ||
		shstk_die "$out"
	kind=${out%%$'\n'*}
	while IFS= read -r line; do
		shstk_msg "$line"
	done < <(tail -n +2 <<<"$out")
	case "$kind" in
	whole) ;;
	none) TESTS_NONE="TESTS=$SHSTK_TESTS chooses nothing of $ARCH's $1 suite" ;;
	"some "*) TESTS_APPEND="shstk.tests=${kind#some }" ;;
	*) shstk_die "spec/selection.py answered '$kind' (whole, none or some WORD)" ;;
	esac
}

# A VM boot, scripts/vm/boot.sh ARCH EMU KERNEL INITRD OUTDIR TIMEOUT
# [APPEND], and beside it checks/live.py, which prints each guest program's
# start and its verdict when it ends (boot.sh leaves those lines to it), so
# the first results are readable while the rest still run; the report
# after the boot stays the judge.  Both are children a TERM or INT stops
# (BOOT_PID, LIVE_PID).
#   shstk_start_boot ARCH EMU KERNEL INITRD OUTDIR TIMEOUT [APPEND]
shstk_start_boot() {
	# The follower must never read the last run's channel.
	rm -f "$5/guest.out"
	SHSTK_LIVE_VERDICTS=1 shstk_start_child "$SHSTK_TOP/scripts/vm/boot.sh" "$@"
	BOOT_PID=$CHILD_PID
	PYTHONPATH=$SHSTK_TOP shstk_start_child "$SHSTK_PYTHON" -m checks.live "$5" "$1" "$2" \
		"$BOOT_PID" "$_shstk_prog"
	LIVE_PID=$CHILD_PID
}

# Wait for the boot shstk_start_boot started, then for its follower, which
# ends once the boot is gone and its last verdict printed (stopped if it
# has not after 5 s); returns the boot's status.
#   shstk_wait_boot
shstk_wait_boot() {
	local rc=0
	shstk_wait_child "$BOOT_PID" || rc=$?
	shstk_poll_until_gone 5 _shstk_pid_alive "$LIVE_PID" || {
		shstk_warn "the results follower (pid $LIVE_PID) outlived the boot by 5 s: stopped"
		kill -TERM "$LIVE_PID" 2>/dev/null || true
	}
	shstk_wait_child "$LIVE_PID" || true
	return "$rc"
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
