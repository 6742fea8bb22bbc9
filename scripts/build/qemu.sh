#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The project's QEMU: Debian's source package (sid's 1:10.2.2+ds-1, the newest
# QEMU source the mirror serves), unpacked into the cache and committed there
# as a pristine base (tag shstk-base), with patches/qemu/series applied on top
# by git am, built out of tree, in the toolbox.  One build directory serves
# every arch whose config/arches.ini entry says qemu_from_source = yes: it is
# configured for all their system targets, so the code they share (most of
# QEMU) is compiled once, but ninja builds only the binary asked for.  Each
# target has only the devices its arch's qemu_devices names (a devices file
# written into the source tree, --without-default-devices).  Incremental:
# nothing runs when the source, the series and the configuration are those
# of the last build of that binary; otherwise the series is re-applied in a
# scratch worktree and the tree moved to the result with "git checkout",
# which rewrites only the files whose content changed, so ninja rebuilds
# only what a patch touches.
#
#   scripts/build/qemu.sh ARCH          build if needed; print the binary's path,
#                                       then what it is ("qemu VERSION + N patches (HASH)")
#   scripts/build/qemu.sh --check       only check that the series applies
#   scripts/build/qemu.sh --info ARCH   print "version patches hash" of the build
#
# The build has no firmware of its own (the +ds source has none): the
# emulator backend passes the toolbox's Debian firmware with -L.  Writes
# $SHSTK_CACHE/qemu/build/shstk-BINARY.txt: version, series and head.
set -euo pipefail
# shellcheck source=../lib/core.sh
. "$(dirname "$0")/../lib/core.sh"
# shellcheck source=../lib/build.sh
. "$SHSTK_TOP/scripts/lib/build.sh"

# Rebase here when the mirror serves a newer source (11.x is listed but 404s).
QEMU_VERSION=${SHSTK_QEMU_VERSION:-1:10.2.2+ds-1}
QDIR=$SHSTK_CACHE/qemu
DL=$QDIR/downloads
SRC=$QDIR/src
AM=$QDIR/src-am
PATCHES=$SHSTK_TOP/patches/qemu

mode=build
case "${1:-}" in
--check) mode=check ;;
--info) mode=info && shift ;;
-*) shstk_die "usage: build/qemu.sh ARCH | --info ARCH | --check" ;;
esac
if [ "$mode" != check ]; then
	[ -n "${1:-}" ] || shstk_die "usage: build/qemu.sh ARCH | --info ARCH | --check"
	shstk_arch_vars "$1"
	[ "$(shstk_arch_fact "$ARCH" qemu_from_source)" = yes ] ||
		shstk_die "config/arches.ini: $ARCH runs the toolbox's QEMU (qemu_from_source = no), there is no build of it"
	QEMU_PROG=$(shstk_arch_fact "$ARCH" qemu)
	BUILD=$QDIR/build
	BIN=$BUILD/$QEMU_PROG
	STAMP=$BUILD/shstk-$QEMU_PROG.txt
fi
# A build found current (HOW, if not by the look below): said, and printed
# as this script prints it, the binary and then what it is (its stamp).
up_to_date() {
	local id
	id=$(sed -n 's/^id: //p' "$STAMP")
	shstk_msg "QEMU up to date$1: $id ($BIN)"
	printf '%s\n' "$BIN" "$id"
	exit 0
}
if [ "$mode" = build ] && [ -f "$STAMP" ] && shstk_build_checked "$BIN"; then
	up_to_date " (checked earlier in this make test)"
fi

# qemu-system-riscv64 -> riscv64
qemu_target() { local prog; prog=$(shstk_arch_fact "$1" qemu) && echo "${prog#qemu-system-}"; }

# Every from-source arch's target, and its devices file (name, then the
# CONFIG_ lines), in arches.ini's order.
TARGETS=() DEVICES=()
for a in $(shstk_arch_names --all); do
	[ "$(shstk_arch_fact "$a" qemu_from_source)" = yes ] || continue
	t=$(qemu_target "$a")
	TARGETS+=("$t-softmmu")
	devices=$(shstk_arch_fact "$a" qemu_devices)
	[ -n "$devices" ] || shstk_die "config/arches.ini: $a builds its QEMU from source but lists no qemu_devices"
	# shellcheck disable=SC2086  # one symbol a word
	DEVICES+=("$t" "$(printf 'CONFIG_%s=y\n' $devices)")
done
DEVICES_FILE=shstk-lab

# Only what the harness uses: TCG for those targets with the devices the
# harness boots (arches.ini, qemu_devices).
# --enable-fdt=system: otherwise meson clones dtc from the network.
# --disable-install-blobs: the +ds source has no firmware to install.
CONFIGURE=(--target-list="$(IFS=,; echo "${TARGETS[*]}")" --without-default-features
	--without-default-devices
	--enable-tcg --enable-fdt=system --disable-install-blobs --disable-docs
	--disable-werror --disable-tools --disable-guest-agent --disable-debug-info
	--cc="$SHSTK_HOST_CC" --cxx="$SHSTK_HOST_CXX" --host-cc="$SHSTK_HOST_CC")
for ((i = 0; i < ${#DEVICES[@]}; i += 2)); do
	CONFIGURE+=(--with-devices-"${DEVICES[i]}=$DEVICES_FILE")
done

git_src() { git -C "$SRC" -c user.name=shstk-lab -c user.email=shstk-lab@localhost "$@"; }

fetch_and_unpack() {
	local dsc tmp upstream=${QEMU_VERSION#*:}
	upstream=${upstream%-*}
	mkdir -p "$DL"
	dsc=$DL/qemu_${QEMU_VERSION#*:}.dsc
	if [ ! -f "$dsc" ]; then
		"$SHSTK_TOP/scripts/tools/apt-local" --sid-src -q update >&2 || shstk_die "apt update (project-local, sid sources) failed"
		(cd "$DL" && "$SHSTK_TOP/scripts/tools/apt-local" --sid-src -q source --download-only "qemu=$QEMU_VERSION" >&2) ||
			shstk_die "could not download Debian's qemu $QEMU_VERSION source (sid)"
		[ -f "$dsc" ] || shstk_die "the download of qemu $QEMU_VERSION left no $dsc"
	fi
	shstk_msg "unpacking qemu $QEMU_VERSION (with Debian's own patches)"
	tmp=$QDIR/unpack.tmp
	rm -rf "$tmp" "$SRC" "$AM"
	# apt checked every file against the signed Sources index.
	dpkg-source --no-check -x "$dsc" "$tmp" >"$QDIR/unpack.log" 2>&1 ||
		shstk_die "dpkg-source could not unpack $dsc; see $QDIR/unpack.log"
	rm -rf "$tmp/.pc"
	mv "$tmp" "$SRC"
	shstk_git_commit_pristine "$SRC" "qemu $QEMU_VERSION (pristine, from Debian, debian/patches applied)"
	echo "qemu $QEMU_VERSION" >"$SRC/.shstk-qemu-version"
}

apply_series() {
	shstk_git_am_series "$SRC" "$AM" "$PATCHES" "qemu $QEMU_VERSION"
}

src_ready() {
	[ -f "$SRC/.shstk-qemu-version" ] && [ "$(cat "$SRC/.shstk-qemu-version")" = "qemu $QEMU_VERSION" ]
}
if [ "$mode" = info ]; then
	[ -f "$STAMP" ] || shstk_die "no QEMU build for $ARCH yet ($STAMP)"
	sed -n 's/^id: //p' "$STAMP"
	exit 0
fi

# One at a time: the source tree is shared by every arch's build, and two
# runs would apply the series in the same scratch worktree, move the tree
# under each other's ninja or run two ninjas in one build directory (a
# make run started while another builds).
mkdir -p "$QDIR"
shstk_lock_or_wait "$QDIR/qemu.lock" "another build/qemu.sh (the QEMU tree is busy)"

# The toolbox before the source: on a fresh machine the kernel build beside
# this one fetches its source meanwhile, and then finds the toolbox made.
# A check that the series applies needs none.
[ "$mode" = check ] || shstk_toolbox_need base
src_ready || shstk_step "fetching Debian's qemu $QEMU_VERSION source" fetch_and_unpack

want=$(shstk_series_hash "$PATCHES")
if [ "$mode" = check ]; then
	apply_series
	exit 0
fi

have=$(cat "$SRC/.shstk-series" 2>/dev/null || true)
edits=$(git_src status --porcelain --untracked-files=no)
if [ "$want" != "$have" ]; then
	if [ -n "$edits" ]; then
		if [ "${SHSTK_DISCARD_EDITS:-0}" != 1 ]; then
			git_src status --short --untracked-files=no | head -n 20 >&2
			shstk_die "patches/qemu changed, and $SRC has local edits that applying it would lose; commit or format-patch them, or set SHSTK_DISCARD_EDITS=1"
		fi
		shstk_warn "discarding local edits in $SRC (SHSTK_DISCARD_EDITS=1)"
	fi
	apply_series
	git_src checkout -q -f --detach "$(git -C "$AM" rev-parse HEAD)"
	echo "$want" >"$SRC/.shstk-series"
	edits=
elif [ -n "$edits" ]; then
	# A developer hacking the tree directly: build with the edits, say so.
	shstk_warn "building QEMU with local edits in $SRC (git format-patch them into patches/qemu/ to keep them):"
	git_src status --short --untracked-files=no | head -n 20 >&2
fi

conf_hash=$(printf '%s\n' "${CONFIGURE[@]}" "${DEVICES[@]}" | sha256sum | cut -c1-16)
edit_hash=
[ -z "$edits" ] || edit_hash=$(git_src diff HEAD | sha256sum | cut -c1-16)
inputs="qemu $QEMU_VERSION series $want edits ${edit_hash:-none} conf $conf_hash"
INPUTS=$BUILD/.shstk-inputs-$QEMU_PROG
if [ -x "$BIN" ] && [ "$(cat "$INPUTS" 2>/dev/null)" = "$inputs" ]; then
	shstk_build_current "$BIN"
	up_to_date ""
fi
rm -f "$INPUTS"

# configure (and meson, when ninja reconfigures) reads a target's devices
# from configs/devices/TARGET-softmmu/ in the source tree: the files are
# written there on every run, untracked (git status above does not count
# them as edits), from arches.ini, so a source unpacked again has them too.
for ((i = 0; i < ${#DEVICES[@]}; i += 2)); do
	printf '# written by shstk-lab scripts/build/qemu.sh from config/arches.ini\n%s\n' "${DEVICES[i + 1]}" \
		>"$SRC/configs/devices/${DEVICES[i]}-softmmu/$DEVICES_FILE.mak"
done
configure() {
	rm -rf "$BUILD"
	mkdir -p "$BUILD"
	(cd "$BUILD" && shstk_tb "$SRC/configure" "${CONFIGURE[@]}") >"$QDIR/configure.log" 2>&1 || {
		tail -n 20 "$QDIR/configure.log" >&2
		shstk_die "configuring QEMU failed (full log: $QDIR/configure.log)"
	}
	echo "$conf_hash" >"$BUILD/.shstk-config"
}
if [ ! -f "$BUILD/build.ninja" ] || [ "$(cat "$BUILD/.shstk-config" 2>/dev/null)" != "$conf_hash" ]; then
	shstk_step "configuring QEMU (TCG: ${TARGETS[*]})" configure
fi

# Progress: ninja's "[N/M] ..." lines go to the log; the terminal gets one
# every 250 steps, and the errors.
build() {
	local log=$BUILD/build-$QEMU_PROG.log st=()
	shstk_tb ninja -C "$BUILD" -j"$(nproc)" "$QEMU_PROG" 2>&1 | tee "$log" |
		awk 'match($0, /^\[[0-9]+\/[0-9]+\]/) { s = substr($0, 2, RLENGTH - 2); split(s, a, "/");
		       if (a[1] % 250 == 0 || a[1] == a[2]) printf "[build/qemu.sh]   %s steps\n", s > "/dev/stderr"; fflush() }
		     /error:|FAILED:/ { print > "/dev/stderr" }' || st=("${PIPESTATUS[@]}")
	# ninja 1.12 ends with 2 only when interrupted (1 for any failure).
	[ "${#st[@]}" -eq 0 ] || shstk_build_failed "${st[*]}" "$log" "QEMU build" 2
}
cold=incremental
[ -x "$BIN" ] || cold=cold
t0=$EPOCHREALTIME
shstk_step "building $QEMU_PROG in $BUILD" build >&2
printf '%s %s %s %.0f\n' "$(date -u +%FT%TZ)" "$QEMU_PROG" "$cold" \
	"$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" >>"$BUILD/shstk-build-times"

head=$(git_src rev-parse --short HEAD)
npatch=$(git_src rev-list --count shstk-base..HEAD)
{
	echo "version: $QEMU_VERSION"
	echo "series: $npatch patches, hash $want${edit_hash:+, edits $edit_hash}"
	echo "head: $head"
	echo "id: qemu $QEMU_VERSION + $npatch patches ($want)"
} >"$STAMP"
[ -z "$edit_hash" ] || sed -i "s/^id: .*/& + local edits $edit_hash/" "$STAMP"
echo "$inputs" >"$INPUTS"
id=$(sed -n 's/^id: //p' "$STAMP")
shstk_msg "built $id -> $BIN"
shstk_build_current "$BIN"
printf '%s\n' "$BIN" "$id"
