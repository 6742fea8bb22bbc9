#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Kernel source: Debian's linux-source package, unpacked into the cache and
# committed there as a pristine base, with patches/ applied on top by git am
# (or SERIES, another version of the series, in a worktree of its own); or
# KSRC, a developer's own tree, checked and used as it is (with SERIES: a
# clone of it in the cache, the series applied on top).
#
#   scripts/build/kernel-source.sh          make sure the tree has the current series
#   scripts/build/kernel-source.sh --check  only check that the series applies
#
# The series is applied in a scratch worktree and the tree is then moved
# to the result with "git checkout", which rewrites only the files whose
# content changed: editing one patch rebuilds only what that patch touches.
set -euo pipefail
# shellcheck source=../lib/core.sh
. "$(dirname "$0")/../lib/core.sh"
# shellcheck source=../lib/build.sh
. "$SHSTK_TOP/scripts/lib/build.sh"

REPO=$SHSTK_BASE_REPO
SRC=$SHSTK_PATCHED_SRC
AM=$SHSTK_AM_SRC
DL=$SHSTK_CACHE/downloads
PATCHES=$SHSTK_SERIES_DIR
git_src() { git -C "$SRC" -c user.name=shstk-lab -c user.email=shstk-lab@localhost "$@"; }

# The newest downloaded package.  -H: the downloads directory may be a
# symlink (a cache sharing another's).
newest_deb() { find -H "$DL" -maxdepth 1 -name "${SHSTK_KERNEL_PKG}_*.deb" | sort -V | tail -n1; }

fetch_and_unpack() {
	local deb tmp
	mkdir -p "$DL"
	deb=$(newest_deb)
	if [ -z "$deb" ]; then
		"$SHSTK_TOP/scripts/tools/apt-local" -q update >&2 || shstk_die "apt update (project-local) failed"
		(cd "$DL" && "$SHSTK_TOP/scripts/tools/apt-local" -q download "$SHSTK_KERNEL_PKG/$SHSTK_KERNEL_SUITE" >&2) ||
			shstk_die "could not download $SHSTK_KERNEL_PKG from $SHSTK_KERNEL_SUITE"
		deb=$(newest_deb)
		[ -n "$deb" ] || shstk_die "the download of $SHSTK_KERNEL_PKG left no .deb in $DL"
	fi
	version=$(dpkg-deb -f "$deb" Version)
	shstk_msg "unpacking $SHSTK_KERNEL_PKG $version"
	tmp=$SHSTK_CACHE/src/unpack.tmp
	# Its worktrees (the am scratch, BASELINE's, SERIES's, make
	# check-series BISECT=1's) go with it.
	rm -rf "$tmp" "$REPO" "$REPO"-* "$SHSTK_CACHE"/src/bisect*
	mkdir -p "$tmp"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards './usr/src/*.tar.xz'
	mkdir -p "$REPO"
	tar -x -C "$REPO" --strip-components=1 -f "$tmp"/usr/src/*.tar.xz
	rm -rf "$tmp"
	shstk_git_commit_pristine "$REPO" "$SHSTK_KERNEL_PKG $version (pristine, from Debian)"
	echo "$SHSTK_KERNEL_PKG $version" >"$REPO/.shstk-kernel-version"
}

# A worktree of the repository at the pristine base, made when missing,
# with the version stamp the later steps read.   worktree DIR
worktree() {
	shstk_base_worktree "$REPO" "$1"
	cp "$REPO/.shstk-kernel-version" "$1/.shstk-kernel-version"
}

apply_series() {
	shstk_git_am_series "$REPO" "$AM" "$PATCHES" "$(cat "$REPO/.shstk-kernel-version")"
}

# The stamps the later steps read (build/kernel.sh, build/guest.sh), left
# in TREE by every path below, each written whole: .shstk-series, what was
# applied (a series hash, or "baseline"), and .shstk-edits, the hash of
# the tree's uncommitted diff (of an empty one when EDITS, git status's
# output, is empty), so that no later step need look at its 96,000 files.
#   stamp_tree TREE SERIES EDITS
stamp_tree() {
	put_stamp "$1" .shstk-edits "$({ [ -z "$3" ] || git -C "$1" diff HEAD; } | sha256sum | cut -c1-16)"
	put_stamp "$1" .shstk-series "$2"
}

# One stamp, written whole: another lane may read it meanwhile.
#   put_stamp DIR NAME TEXT
put_stamp() {
	echo "$3" >"$1/$2.new"
	mv -f "$1/$2.new" "$1/$2"
}

# KSRC, read only: no optional locks and no refresh after a diff, so that
# not even git's index in it is rewritten.
ksrc_git() { GIT_OPTIONAL_LOCKS=0 git -C "$SHSTK_KSRC" -c diff.autoRefreshIndex=false "$@"; }

# What KSRC is, checked before any long step: a git tree's top, a kernel,
# and one Kbuild can build out of tree.
ksrc_check() {
	local top
	[ -z "$SHSTK_BASELINE" ] ||
		shstk_die "BASELINE=1 with KSRC=: the baseline is Debian's pristine tree; for A/B on your tree, run it at both commits"
	top=$(ksrc_git rev-parse --show-toplevel 2>/dev/null) ||
		shstk_die "KSRC=$SHSTK_KSRC is not a git tree (git rev-parse found no repository there)"
	[ "$top" -ef "$SHSTK_KSRC" ] || shstk_die "KSRC=$SHSTK_KSRC is inside the git tree $top: give its top"
	ksrc_git rev-parse -q --verify HEAD >/dev/null || shstk_die "KSRC=$SHSTK_KSRC has no commit yet"
	[[ -f $SHSTK_KSRC/kernel/fork.c && -f $SHSTK_KSRC/scripts/kconfig/merge_config.sh ]] ||
		shstk_die "KSRC=$SHSTK_KSRC is not a Linux tree (no kernel/fork.c or scripts/kconfig/merge_config.sh)"
	# What Kbuild's own check for a clean source tree looks at, for the
	# kernel arches the harness builds.
	local a karch built=
	[ ! -e "$SHSTK_KSRC/.config" ] || built=.config
	[ -n "$built" ] || [ ! -d "$SHSTK_KSRC/include/config" ] || built=include/config
	for a in $(shstk_arch_names --all); do
		shstk_arch_fact_to karch "$a" kernel_arch
		[ -n "$built" ] || [ ! -d "$SHSTK_KSRC/arch/$karch/include/generated" ] ||
			built="arch/$karch/include/generated (make ARCH=$karch mrproper)"
	done
	[ -z "$built" ] ||
		shstk_die "KSRC=$SHSTK_KSRC has been built in (it has $built): Kbuild builds out of tree only from a clean source tree; run 'make mrproper' there, or give a clean worktree (git worktree add)"
}

# KSRC's version, from its Makefile (make would want to write nothing, but
# need not run at all).
ksrc_version() {
	awk -F' *= *' '$1 == "VERSION" { v = $2 } $1 == "PATCHLEVEL" { p = $2 }
		$1 == "SUBLEVEL" { s = $2 } $1 == "EXTRAVERSION" { e = $2 }
		/^$/ && v != "" { exit } END { printf "%s.%s.%s%s\n", v, p, s, e }' "$SHSTK_KSRC/Makefile"
}

# KSRC as the tree of this run: its stamps in the cache (SHSTK_KSRC_STAMPS),
# its HEAD as the "series", its uncommitted changes as the edits.
use_ksrc() {
	local head edits name
	head=$(ksrc_git rev-parse HEAD)
	edits=$(shstk_tree_edits_hash "$SHSTK_KSRC")
	# The results add " + local changes" from the edits' stamp.
	name="KSRC=$SHSTK_KSRC at $(ksrc_git log -1 --format='%h ("%s")' HEAD)"
	mkdir -p "$SHSTK_KSRC_STAMPS"
	put_stamp "$SHSTK_KSRC_STAMPS" .shstk-kernel-version "linux $(ksrc_version) (KSRC)"
	put_stamp "$SHSTK_KSRC_STAMPS" .shstk-edits "$edits"
	put_stamp "$SHSTK_KSRC_STAMPS" .shstk-series "ksrc-$head"
	put_stamp "$SHSTK_KSRC_STAMPS" .shstk-series-name "$name"
	[ "$edits" = "$SHSTK_NO_EDITS" ] || name+=" + local changes"
	shstk_msg "kernel source: $name"
}

# KSRC with SERIES: a clone of KSRC in the cache sharing its objects (git
# clone --shared reads KSRC and writes only the clone), its pristine base
# (tag shstk-base) KSRC's HEAD; the series goes on top as on Debian's tree.
# KSRC's uncommitted changes are not in it: commit them to test them.
ksrc_repo() {
	local head
	head=$(ksrc_git rev-parse HEAD)
	if [ ! -d "$REPO/.git" ]; then
		rm -rf "$REPO"
		git clone -q --shared --no-checkout "$SHSTK_KSRC" "$REPO"
		git -C "$REPO" config gc.auto 0
	fi
	git -C "$REPO" fetch -q "$SHSTK_KSRC" HEAD
	git -C "$REPO" tag -f shstk-base "$head" >/dev/null
	[ -z "$(ksrc_git status --porcelain --untracked-files=no)" ] ||
		shstk_warn "KSRC=$SHSTK_KSRC has uncommitted changes: SERIES is applied to its HEAD, without them"
	echo "linux $(ksrc_version) (KSRC=$SHSTK_KSRC at $(ksrc_git rev-parse --short HEAD))" >"$REPO/.shstk-kernel-version"
}

# One at a time: two arches built side by side, or make check-series beside
# a build, would otherwise apply the series in the same scratch worktree
# ("unable to write index file") or move the tree under each other.
mkdir -p "$SHSTK_CACHE/src"
shstk_lock_or_wait "$SHSTK_CACHE/src/kernel-source.lock" "another kernel-source.sh (the kernel tree is busy)"

if [ -n "$SHSTK_KSRC" ]; then
	ksrc_check
	if [ -z "$SHSTK_SERIES" ]; then
		[ "${1:-}" != --check ] || shstk_die "--check applies a series; KSRC without SERIES has none to apply"
		use_ksrc
		exit 0
	fi
	ksrc_repo
fi

[ -f "$REPO/.shstk-kernel-version" ] || shstk_step "fetching $SHSTK_KERNEL_PKG" fetch_and_unpack
shstk_msg "kernel source: $(cat "$REPO/.shstk-kernel-version")"

if [ -n "$SHSTK_BASELINE" ]; then
	# The pristine tree, for A/B runs: a worktree that never gets the series.
	worktree "$SHSTK_SRC"
	git -C "$SHSTK_SRC" checkout -q --detach shstk-base
	stamp_tree "$SHSTK_SRC" baseline "$(git -C "$SHSTK_SRC" status --porcelain --untracked-files=no)"
	put_stamp "$SHSTK_SRC" .shstk-series-name "none (the pristine tree)"
	shstk_msg "baseline: the pristine tree in $SHSTK_SRC, without the series"
	exit 0
fi

if [ -n "$SHSTK_SERIES" ]; then
	# Another version of the series: laid out as a series folder in the
	# cache (build/series.py, with the project's additions for its version
	# from patches/vN/), applied in a worktree of its own.
	what=$(shstk_py "$SHSTK_TOP/scripts/build/series.py" "$SHSTK_SERIES" "$PATCHES" "$SHSTK_TOP/patches") ||
		shstk_die "could not read the series in $SHSTK_SERIES"
	shstk_msg "SERIES=$SHSTK_SERIES: $what"
	worktree "$SRC"
	name="SERIES=$SHSTK_SERIES ($what)"
	[ -z "$SHSTK_KSRC" ] || name+=" on KSRC=$SHSTK_KSRC at $(ksrc_git rev-parse --short HEAD)"
else
	name="patches/ ($(shstk_series_list "$PATCHES/series" | wc -l) patches)"
fi

want=$(shstk_series_hash "$PATCHES")
# On KSRC, its HEAD is part of what was applied: a new one applies again.
[ -z "$SHSTK_KSRC" ] || want+="-$(git -C "$REPO" rev-parse --short=12 shstk-base)"
if [ "${1:-}" = --check ]; then
	apply_series
	exit 0
fi
have=$(cat "$SRC/.shstk-series" 2>/dev/null || true)
edits=$(git_src status --porcelain --untracked-files=no)
if [ "$want" = "$have" ]; then
	# A developer hacking the tree directly: build with the edits, say so.
	if [ -n "$edits" ]; then
		shstk_warn "building with local edits in $SRC (git format-patch them into a series to keep them):"
		git_src status --short --untracked-files=no | head -n 20 >&2
	fi
	stamp_tree "$SRC" "$want" "$edits"
	put_stamp "$SRC" .shstk-series-name "$name"
	exit 0
fi
if [ -n "$edits" ]; then
	if [ "${SHSTK_DISCARD_EDITS:-0}" != 1 ]; then
		git_src status --short --untracked-files=no | head -n 20 >&2
		shstk_die "the series changed, and $SRC has local edits that applying it would lose; commit or format-patch them, or set SHSTK_DISCARD_EDITS=1"
	fi
	shstk_warn "discarding local edits in $SRC (SHSTK_DISCARD_EDITS=1)"
fi
# Gone while the tree changes: no later step may take it for this tree.
rm -f "$SRC/.shstk-edits"
apply_series
git_src checkout -q -f --detach "$(git -C "$AM" rev-parse HEAD)"
# checkout -f left no edits behind.
stamp_tree "$SRC" "$want" ""
put_stamp "$SRC" .shstk-series-name "$name"
