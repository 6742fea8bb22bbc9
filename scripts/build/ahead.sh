#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make test's builds, made ahead of the steps that need them: on a cold
# cache the two CPUs would otherwise sit half idle through every VM step
# and every one-threaded part of a build (a kernel's configure and final
# link, QEMU's configure), while the next arch's kernel waits its turn.
#
#   scripts/build/ahead.sh kernels ARCH...     each ARCH's kernel, in order
#   scripts/build/ahead.sh emulators ARCH...   the project's own emulator
#                                              builds for each ARCH, in order
#   scripts/build/ahead.sh rootfs ARCH...      each ARCH's bpftrace root
#                                              filesystem (make trace's disk)
#
# scripts/test.sh starts both chains at the lowest priority, each the
# leader of its own process group, so that it can stop them while a step
# that needs the CPUs to itself runs.  The steps still run every build
# themselves: a build this made is found current (or waited for, under the
# build's own lock), and a build that failed here fails there again, in
# that step's log and verdict.  This one only keeps going.
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

[ "$#" -ge 2 ] || die "usage: scripts/build/ahead.sh kernels|emulators|rootfs ARCH..."
what=$1
shift

# A TERM to this script (make test stopped) ends the whole group, the
# compilers too, even while it is stopped.
# shellcheck disable=SC2317  # the trap's
stop_group() {
	trap '' TERM INT
	kill -TERM 0 2>/dev/null || true
	kill -CONT 0 2>/dev/null || true
	exit 143
}
trap stop_group TERM INT

# ahead CMD...: one build, its failure said and left for its step.  In the
# background and waited for, so that the trap above runs at once (bash runs
# none while a foreground command runs); not run_child, whose trap would
# stop the build script but not the make it started.
ahead() {
	local rc=0
	msg "ahead: $*"
	"$@" &
	wait "$!" || rc=$?
	[ "$rc" -eq 0 ] || warn "ahead: '$*' failed (exit $rc); its step will try again"
}

for a in "$@"; do
	case "$what" in
	kernels) ahead "$SHSTK_TOP/scripts/build/kernel.sh" "$a" ;;
	emulators)
		for emu in $(emulators_for "$a"); do
			arch_vars "$a"
			emu_vars "$emu"
			emu_build_cmd
			[ "${#EMU_BUILD_CMD[@]}" -eq 0 ] || ahead "${EMU_BUILD_CMD[@]}" >/dev/null
		done
		;;
	rootfs) ahead "$SHSTK_TOP/scripts/build/rootfs.sh" "$a" --disk >/dev/null ;;
	*) die "unknown chain '$what' (kernels, emulators or rootfs)" ;;
	esac
done
msg "ahead: $what built for $*"
