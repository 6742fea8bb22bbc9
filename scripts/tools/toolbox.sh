#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Provide the tools this machine lacks: a Debian trixie (+ backports)
# environment made with debootstrap, in the cache.  Idempotent: a stamp
# records the package list it was made with, and a changed list (or a
# half-made tree) makes it again.  The machine's apt sources are untouched.
#
# Why trixie: arm64 GCS needs QEMU >= 10.2 (backports has 11.1), the gdb
# scripts want gdb >= 16 with Python, and gcc 14 places one breakpoint
# location per function where gcc 12 gives two.
set -euo pipefail
# shellcheck source=../lib/core.sh
. "$(dirname "$0")/../lib/core.sh"

TB=$SHSTK_CACHE/toolbox
ROOT=$TB/root

# Packages from trixie (erofs-utils makes the bpftrace's root filesystem
# disk; virtme-ng is what make bench compares boots against; the -dev
# libraries, meson, ninja and pkg-config build the project's QEMU,
# scripts/build/qemu.sh); the ones
# listed in BACKPORTS come from trixie-backports (QEMU 11.1, its qemu-img for
# make replay's snapshot disk, gdb 18 and the libelf that gdb 18 needs).
# Each architecture's compiler, libraries and QEMU come from its entry in
# config/arches.ini (packages, qemu_package); a package named PKG/forky
# comes from forky, with what it needs from there (apt says "because of").
PKGS=(
	"$SHSTK_HOST_CC" "$SHSTK_HOST_CXX" libc6-dev binutils make bc bison flex cpio kmod
	python3 libssl-dev dwarves xz-utils zstd rsync git ca-certificates
	bochs bochsbios vgabios bochs-term isolinux syslinux-common xorriso
	erofs-utils
	virtme-ng udev
	libglib2.0-dev libpixman-1-dev libfdt-dev libattr1-dev libcap-ng-dev
	meson ninja-build python3-venv pkg-config
	python3-drgn
)
stamp=$SHSTK_TOOLBOX_STAMP
# Every tool the harness runs goes through tb, which calls this first
# unless the stamp is newer than this script and the arch table (what the
# list below is made of); a stamp found current is touched.

BACKPORTS=(qemu-system-data qemu-utils gdb-multiarch libelf-dev)
for a in $(shstk_arch_names --all); do
	read -ra more <<<"$(shstk_arch_fact "$a" packages)"
	PKGS+=("${more[@]}")
	BACKPORTS+=("$(shstk_arch_fact "$a" qemu_package)")
done

want=$(printf '%s\n' "${PKGS[@]}" -- "${BACKPORTS[@]}" | sha256sum | cut -c1-16)

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	touch "$stamp"
	exit 0
fi
# One maker at a time: every tool call comes through here, and on a fresh
# cache several may at once (make test's steps, two arches side by side).
# The others wait for the lock, then find the toolbox made.
mkdir -p "$TB"
shstk_lock_or_wait "$TB/lock" "another toolbox.sh to finish making the toolbox"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	exit 0
fi

[ "$(id -u)" -eq 0 ] || shstk_die "the toolbox is made with debootstrap and chroot: run as root"
if ! command -v debootstrap >/dev/null; then
	shstk_msg "installing debootstrap on the host (apt-get)"
	# A fresh machine's package lists may be missing or stale.
	apt-get install -y -q debootstrap >/dev/null 2>&1 ||
		{ apt-get update -q >/dev/null && apt-get install -y -q debootstrap >/dev/null; } ||
		shstk_die "apt-get install debootstrap failed"
fi

# The mirror apt-local uses, read off the address it would download from;
# a fresh cache has no package lists yet, so the first try may need them.
mirror_of_apt_local() {
	"$SHSTK_TOP/scripts/tools/apt-local" -qq --print-uris download bash 2>/dev/null |
		sed -nE "s|^'([^']*)/pool/.*|\1|p" | head -n1 || true
}
mirror=${SHSTK_MIRROR:-$(mirror_of_apt_local)}
if [ -z "$mirror" ]; then
	shstk_msg "fetching the package lists (apt-local update)"
	"$SHSTK_TOP/scripts/tools/apt-local" -qq update || shstk_die "apt-local update failed"
	mirror=$(mirror_of_apt_local)
fi
[ -n "$mirror" ] || shstk_die "could not find the Debian mirror (set SHSTK_MIRROR)"

build_root() {
	local new=$TB/root.new
	mkdir -p "$TB"
	if [ -f "$ROOT/.shstk-toolbox" ]; then
		# A toolbox from an older package list: add to it in place.
		new=$ROOT
	else
		rm -rf "$new"
		debootstrap --variant=minbase trixie "$new" "$mirror" >"$TB/debootstrap.log" 2>&1 ||
			shstk_die "debootstrap failed; see $TB/debootstrap.log"
	fi
	# forky, pinned below everything else, only for what an arch's
	# packages name as PKG/forky (riscv64's gcc 15, see config/arches.ini)
	# and what those need; its Release may be past its Valid-Until here.
	cat >"$new/etc/apt/sources.list" <<SRC
deb $mirror trixie main
deb $mirror trixie-backports main
deb $mirror forky main
SRC
	cat >"$new/etc/apt/preferences.d/shstk-forky" <<PIN
Package: *
Pin: release n=forky
Pin-Priority: 50
PIN
	echo 'Acquire::Check-Valid-Until "false";' >"$new/etc/apt/apt.conf.d/99shstk-valid-until"
	# The chroot needs name resolution to reach the mirror.
	cp /etc/resolv.conf "$new/etc/resolv.conf"
	in_root() { "$SHSTK_TOP/scripts/tools/tb" --root "$new" --raw "$@"; }
	local deb
	for deb in $(shstk_deb_arches); do
		[ "$deb" = amd64 ] || in_root dpkg --add-architecture "$deb"
	done
	in_root apt-get -q update >>"$TB/debootstrap.log" 2>&1 || shstk_die "apt-get update in the toolbox failed"
	DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -q --no-install-recommends \
		"${PKGS[@]}" >>"$TB/debootstrap.log" 2>&1 ||
		shstk_die "installing the toolbox packages failed; see $TB/debootstrap.log"
	DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -q --no-install-recommends \
		-t trixie-backports "${BACKPORTS[@]}" >>"$TB/debootstrap.log" 2>&1 ||
		shstk_die "installing the toolbox backports failed; see $TB/debootstrap.log"
	# What came from forky, for the record.
	in_root apt list --installed 2>/dev/null | grep -E '/(forky|testing)' >"$TB/from-forky.txt" || true
	[ ! -s "$TB/from-forky.txt" ] ||
		shstk_msg "from forky: $(cut -d/ -f1 "$TB/from-forky.txt" | paste -sd' ') (see $TB/from-forky.txt)"
	in_root apt-get clean
	echo "$want" >"$new/.shstk-toolbox"
	if [ "$new" != "$ROOT" ]; then
		rm -rf "$ROOT"
		mv "$new" "$ROOT"
	fi
}

shstk_step "making the trixie toolbox in $ROOT (about 1-2 minutes)" build_root
"$SHSTK_TOP/scripts/tools/tb" --versions >&2
