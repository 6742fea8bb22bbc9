#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run one make target's script for each architecture in turn, and end with
# one line per architecture: what its run counted, or why it did not run,
# so that an architecture that stopped early never looks like one that
# finished.
#
#   scripts/each-arch.sh [--emu EMU] WHAT "ARCHES" CMD ARGS...
#
# WHAT names the target in the summary; {arch} in ARGS stands for each
# architecture.  --emu EMU (given when the user named no ARCH): the
# architectures EMU does not emulate, or a KSRC tree cannot serve, are left
# out, and said so.  Exit status 0 only if every architecture that ran
# passed.
set -euo pipefail
# shellcheck source=lib/entry.sh
. "$(dirname "$0")/lib/entry.sh"

shstk_host_check
emu=
if [ "${1:-}" = --emu ]; then
	emu=${2:?--emu needs an emulator}
	shift 2
fi
[ "$#" -ge 3 ] || shstk_die "usage: scripts/each-arch.sh [--emu EMU] WHAT \"ARCHES\" CMD ARGS..."
what=$1
read -ra arches <<<"$2"
shift 2
[ "${#arches[@]}" -gt 0 ] || shstk_die "no architectures given"

# A mistyped EMU must not leave every arch out and pass.
[ -z "$emu" ] || shstk_emu_check "$emu"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shstk_exit_on_signals

# The counts line every checks/ verdict ends with ("N passed, N failed",
# then ", N skipped"), the last one the script printed.
counts_of() {
	grep -oE '[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?' "$1" | tail -n1 || true
}

# run_one ARCH: the script for ARCH, its stdout copied to $tmp/ARCH.out
# (for the counts), its reasons for stopping to $tmp/ARCH.why (core.sh
# _shstk_stopped); the summary line goes to $tmp/ARCH.line.
run_one() {
	local a=$1 cmd=() arg rc=0 counts why tee_pid out
	for arg in "${@:2}"; do
		cmd+=("${arg//\{arch\}/$a}")
	done
	out=$tmp/$a.out
	# Neither a Ctrl-C (-i) nor a TERM (a level above passes one to every
	# process under it) may take the copy away while the run still says
	# how it stops: it ends when the run's output does.
	exec {out_fd}> >(trap '' TERM; exec tee -i -- "$out")
	tee_pid=$!
	SHSTK_STATUS_FILE=$tmp/$a.why shstk_start_child "${cmd[@]}" >&"$out_fd" {out_fd}>&-
	exec {out_fd}>&-
	shstk_wait_child "$CHILD_PID" || rc=$?
	# Done when the run's last output is copied; a process the run left
	# behind with its stdout must not hold the summary back.
	shstk_poll_until_gone 5 _shstk_pid_alive "$tee_pid" || kill -KILL "$tee_pid" 2>/dev/null || true
	counts=$(counts_of "$out")
	why=$(head -n1 "$tmp/$a.why" 2>/dev/null || true)
	if [ -n "$counts" ]; then
		# A verdict with no failure but a non-zero exit: the run itself
		# went wrong after counting (said above); never a pass.
		if [ "$rc" -ne 0 ] && [[ $counts == *" 0 failed"* ]]; then
			counts+=", but exit $rc${why:+: $why}"
		fi
		# A chosen part must not read as the whole suite here either.
		[ -z "${SHSTK_TESTS:-}" ] || counts+=" (only TESTS=$SHSTK_TESTS)"
		echo "$counts" >"$tmp/$a.line"
	elif [ "$rc" -eq 0 ]; then
		echo "done (nothing counted)" >"$tmp/$a.line"
	else
		echo "did not run: ${why:-exit $rc, no reason given (see the messages above)}" >"$tmp/$a.line"
	fi
	return "$rc"
}

# What is left out is decided, and said, before the first arch's build.
to_run=()
for a in "${arches[@]}"; do
	if [ -n "$emu" ] && ! why=$( (shstk_arch_vars "$a" && shstk_emu_vars "$emu") 2>&1 >/dev/null); then
		why=${why#*error: }
	# A developer's tree (KSRC) that cannot serve an arch the user did not
	# name: left out with the reason; a named one fails in its build.
	elif [ -n "$emu" ] && ! why=$(shstk_tree_serves "$a"); then
		:
	else
		to_run+=("$a")
		continue
	fi
	echo "left out: $why" >"$tmp/$a.line"
	shstk_msg "$a: left out, $why"
done
rc=0 ran=0
for a in "${to_run[@]}"; do
	ran=$((ran + 1))
	run_one "$a" "$@" || rc=1
done

shstk_msg "$what, per architecture:"
for a in "${arches[@]}"; do
	shstk_msg "  $(printf '%-8s' "$a") $(cat "$tmp/$a.line")"
done
# An emulator that runs no arch at all was set up wrong (QEMU=, say).
[ "$ran" -gt 0 ] || shstk_die "nothing ran: every architecture was left out (EMU=$emu${SHSTK_KSRC:+, KSRC=$SHSTK_KSRC}; reasons above)"
exit "$rc"
