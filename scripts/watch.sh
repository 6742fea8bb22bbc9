#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make watch: make run's loop without typing.  Runs the command given (make
# run's each-arch.sh line) now, and again whenever the kernel tree changes
# (KSRC, or the cache's tree with its local edits), until Ctrl-C.
#
#   scripts/watch.sh CMD ARGS...
#   SHSTK_WATCH_SECONDS=N   how often the tree is looked at (default 2)
#
# A run that fails is reported and the loop goes on: the next edit may fix
# it.  The tree is read as kernel-source.sh reads a KSRC: its index is
# never written.
set -euo pipefail
# shellcheck source=lib/core.sh
. "$(dirname "$0")/lib/core.sh"

shstk_host_check
[ "$#" -gt 0 ] || shstk_die "usage: scripts/watch.sh CMD ARGS... (make watch)"
every=${SHSTK_WATCH_SECONDS:-2}
if ! [[ $every =~ ^[1-9][0-9]*$ ]]; then
	shstk_die "SHSTK_WATCH_SECONDS=$every is not a whole number of seconds above 0"
fi
tree=$SHSTK_PATCHED_SRC
[ -d "$tree/.git" ] || [ -f "$tree/.git" ] ||
	shstk_die "no kernel tree to watch at $tree: run make run once first (it unpacks the tree), or give KSRC="

# What the tree holds: its HEAD and its edits.
tree_state() {
	local head edits
	head=$(GIT_OPTIONAL_LOCKS=0 git -C "$tree" rev-parse HEAD) || return
	edits=$(shstk_tree_edits_hash "$tree") || return
	echo "$head $edits"
}

shstk_exit_on_signals
last=''
while :; do
	now=$(tree_state) || shstk_die "reading the kernel tree $tree failed"
	if [ "$now" != "$last" ]; then
		[ -z "$last" ] || shstk_msg "$tree changed: running again"
		last=$now
		rc=0
		shstk_run_child "$@" || rc=$?
		shstk_msg "exit $rc; watching $tree every $every s (Ctrl-C ends)"
	fi
	sleep "$every"
done
