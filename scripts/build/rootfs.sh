#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A root filesystem with bpftrace for the guest, from Debian trixie's
# packages only, assembled on the host without running any foreign binary:
# debootstrap --foreign resolves and downloads bpftrace's dependency closure,
# then every downloaded package is unpacked with dpkg-deb -x.  The guest
# gets it read-only, as an EROFS disk image made from it (make trace).
#
#   scripts/build/rootfs.sh ARCH          -> $SHSTK_CACHE/rootfs/<arch>
#   scripts/build/rootfs.sh ARCH --disk   -> $SHSTK_CACHE/rootfs/<arch>.erofs
set -euo pipefail
# shellcheck source=../lib/core.sh
. "$(dirname "$0")/../lib/core.sh"
# shellcheck source=../lib/build.sh
. "$SHSTK_TOP/scripts/lib/build.sh"

shstk_arch_vars "${1:-}"
case "${2:-}" in
"" | --disk) ;;
*) shstk_die "usage: build/rootfs.sh ARCH [--disk]" ;;
esac
ROOTFS=$SHSTK_CACHE/rootfs/$ARCH
PKGS=bpftrace
stamp=$ROOTFS/.shstk-rootfs
# The directory, or the disk image made from it.
result() {
	if [ "${2:-}" = --disk ]; then
		shstk_rootfs_disk "$ROOTFS"
	else
		echo "$ROOTFS"
	fi
}
built() { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$PKGS" ]; }
if built; then
	result "$@"
	exit 0
fi
# One build at a time, and a build that waited finds the other's result:
# on a fresh cache make test's two x86 lanes (QEMU's and Bochs's trace
# steps) ask for it at the same moment, and two debootstraps in one
# $ROOTFS.new remove each other's files.
mkdir -p "${ROOTFS%/*}"
shstk_lock_or_wait "$ROOTFS.build-lock" "another build of the $ARCH root filesystem"
if built; then
	result "$@"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || shstk_die "debootstrap needs root"
command -v debootstrap >/dev/null || shstk_die "debootstrap is not installed (apt-get install debootstrap)"
mirror=$("$SHSTK_TOP/scripts/tools/apt-local" -qq --print-uris download bash 2>/dev/null |
	sed -nE "s|^'([^']*)/pool/.*|\1|p" | head -n1 || true)
mirror=${SHSTK_MIRROR:-$mirror}
[ -n "$mirror" ] || shstk_die "could not find the Debian mirror (run scripts/tools/apt-local update, or set SHSTK_MIRROR)"

make_rootfs() {
	local new=$ROOTFS.new deb n=0
	rm -rf "$new"
	mkdir -p "$new"
	debootstrap --foreign --variant=minbase --arch="$DEB_ARCH" --include="$PKGS" \
		trixie "$new" "$mirror" >"$new.log" 2>&1 ||
		shstk_die "debootstrap --foreign failed; see $new.log"
	# The first stage unpacked only the essential packages: unpack them all.
	for deb in "$new"/var/cache/apt/archives/*.deb; do
		dpkg-deb -x "$deb" "$new"
		n=$((n + 1))
	done
	rm -f "$new"/var/cache/apt/archives/*.deb
	mkdir -p "$new/mnt/trace" "$new/tmp"
	echo "$PKGS" >"$new/.shstk-rootfs"
	rm -rf "$ROOTFS"
	mv "$new" "$ROOTFS"
	shstk_msg "$n packages unpacked; $(du -sh "$ROOTFS" | cut -f1) in $ROOTFS"
}
shstk_step "building the $ARCH bpftrace root filesystem (debootstrap, about 3-4 minutes)" make_rootfs
result "$@"
