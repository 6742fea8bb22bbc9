#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The series as a kernel developer would check it: every patch applies with
# git am onto the pristine tree, and scripts/checkpatch.pl --strict reports
# no errors.  One KTAP line per check; warnings are listed, not fatal.
#
#   scripts/check-series.sh            apply and checkpatch
#   scripts/check-series.sh --bisect   also build every prefix of the series
#       for each arch (make check-series BISECT=1), in a worktree and build
#       directories of their own, incrementally, and boot the clone3
#       selftest on the last, which is the tree make run builds
set -euo pipefail
# shellcheck source=lib/entry.sh
. "$(dirname "$0")/lib/entry.sh"
shstk_host_check
bisect=
case "${1:-}" in
"") ;;
--bisect) bisect=1 ;;
*) shstk_die "unknown option '$1' (--bisect or nothing)" ;;
esac

# KSRC alone brings its series as its own commits: what this checks is
# the project's series, patches/, against Debian's tree, as without KSRC
# (with SERIES, that series on KSRC's clone).
if [ -n "$SHSTK_KSRC" ] && [ -z "$SHSTK_SERIES" ]; then
	shstk_msg "KSRC=$SHSTK_KSRC has its series as commits; checking patches/ on Debian's tree"
	SHSTK_KSRC='' exec "$0" "$@"
fi
"$SHSTK_TOP/scripts/build/kernel-source.sh" --check >&2
AM=$SHSTK_AM_SRC
mapfile -t patches < <(shstk_series_list "$SHSTK_SERIES_DIR/series")
mapfile -t commits < <(git -C "$AM" rev-list --reverse shstk-base..HEAD)
[ "${#commits[@]}" -eq "${#patches[@]}" ] ||
	shstk_die "$AM has ${#commits[@]} commits over the base for ${#patches[@]} patches"
mapfile -t arches < <(shstk_arch_names)
plan=$((${#patches[@]} + 1))
[ -z "$bisect" ] || plan=$((plan + ${#arches[@]} * (${#patches[@]} + 1)))
echo "KTAP version 1"
echo "1..$plan"
echo "ok 1 series applies with git am onto $(cat "$SHSTK_PATCHED_SRC/.shstk-kernel-version")"
n=1 rc=0
for p in "${patches[@]}"; do
	n=$((n + 1))
	# One run: the findings, then its "total: ..." line.
	# Not -q: a clean run says so in its "total:" line too.
	report=$("$AM/scripts/checkpatch.pl" --strict --no-tree "$SHSTK_SERIES_DIR/$p" 2>&1 || true)
	summary=$(grep -m1 '^total:' <<<"$report" || true)
	grep -E '^(ERROR|WARNING|CHECK):' <<<"$report" | sed 's/^/# /' || true
	if [ -z "$summary" ]; then
		printf '# %s\n' "${report//$'\n'/$'\n'# }"
		echo "not ok $n checkpatch $p: checkpatch.pl did not run to its summary"
		rc=1
	elif grep -q '^ERROR:' <<<"$report"; then
		echo "not ok $n checkpatch $p: $summary"
		rc=1
	else
		echo "ok $n checkpatch $p: $summary"
	fi
done
[ -n "$bisect" ] || exit "$rc"

# Every prefix, built in a worktree of the repository and a build directory
# per arch, both apart from make run's, with the configuration of the arch's
# own build (olddefconfig drops what an early prefix does not have yet).
WT=$SHSTK_CACHE/src/bisect$SHSTK_TREE_SUFFIX
shstk_lock_or_wait "$WT.lock" "another make check-series BISECT=1"
shstk_base_worktree "$SHSTK_BASE_REPO" "$WT"
bisect_arch() {
	local arch=$1 i c log t0 subject
	shstk_arch_vars "$arch"
	"$SHSTK_TOP/scripts/build/kernel.sh" "$arch" >&2
	local config=$KBUILD_DIR/.config
	KBUILD_DIR=$SHSTK_CACHE/build/$ARCH-bisect$SHSTK_TREE_SUFFIX
	mkdir -p "$KBUILD_DIR"
	log=$KBUILD_DIR/bisect.log
	for i in "${!commits[@]}"; do
		c=${commits[i]}
		n=$((n + 1))
		subject=$(git -C "$WT" log -1 --format=%s "$c")
		git -C "$WT" checkout -q --detach "$c"
		cp "$config" "$KBUILD_DIR/.config"
		t0=$EPOCHREALTIME
		if SHSTK_SRC=$WT shstk_kmake -s olddefconfig >"$log" 2>&1 &&
			SHSTK_SRC=$WT shstk_kmake -j"$(nproc)" "$KTARGET" vmlinux >>"$log" 2>&1; then
			echo "ok $n $ARCH $((i + 1))/${#commits[@]} builds: $subject ($(shstk_elapsed "$t0") s)"
		else
			grep -E 'error:|Error [0-9]' "$log" | head -n 5 | sed 's/^/# /'
			echo "not ok $n $ARCH $((i + 1))/${#commits[@]} builds: $subject (log: $log)"
			rc=1
		fi
	done
	# The last prefix is the series: make run's tree, if nothing differs.
	n=$((n + 1))
	if [ "$(git -C "$WT" rev-parse 'HEAD^{tree}')" != "$(git -C "$SHSTK_PATCHED_SRC" rev-parse 'HEAD^{tree}')" ] ||
		[ -n "$(git -C "$SHSTK_PATCHED_SRC" status --porcelain --untracked-files=no)" ]; then
		echo "not ok $n $ARCH clone3 selftest on the whole series # the tree make run builds is not the last prefix"
		rc=1
	elif ! shstk_build_guest run >/dev/null; then
		echo "not ok $n $ARCH clone3 selftest on the whole series # building the guest programs failed"
		rc=1
	elif shstk_emu_vars && "$SHSTK_TOP/scripts/run.sh" run "$ARCH" "" "$GUEST_DIR/ksft/clone3/clone3" >&2; then
		echo "ok $n $ARCH clone3 selftest on the whole series"
	else
		echo "not ok $n $ARCH clone3 selftest on the whole series ($EMU_OUT/prog)"
		rc=1
	fi
}
for a in "${arches[@]}"; do
	bisect_arch "$a"
done
exit "$rc"
