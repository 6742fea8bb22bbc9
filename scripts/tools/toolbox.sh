#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Provide the tools this machine lacks: a Debian trixie (+ backports)
# environment made with debootstrap, in the cache, in package sets that a
# step asks for when it needs them (core.sh shstk_toolbox_need), so that a
# first make run ARCH=x86_64 waits for no other arch's compilers, Bochs or
# gdb:
#
#   scripts/tools/toolbox.sh [SET...]
#     base         always: the host compiler, the kernel's and QEMU's build
#                  needs, Python, git (what every tb call may use)
#     arch:NAME    NAME's compiler, libraries and QEMU (config/arches.ini)
#     bochs        Bochs's BIOS images and what makes its boot ISO
#     gdb          gdb-multiarch and drgn
#     bench        virtme-ng, which make bench compares boots against
#     all          every set (make toolbox, make test)
#
# Idempotent: each set's stamp records the package list it was installed
# with, and a changed list (or a half-made tree) installs it again.  The
# machine's apt sources are untouched.
#
# Why trixie: arm64 GCS needs QEMU >= 10.2 (backports has 11.1), the gdb
# scripts want gdb >= 16 with Python, and gcc 14 places one breakpoint
# location per function where gcc 12 gives two.
set -euo pipefail
# shellcheck source=../lib/core.sh
. "$(dirname "$0")/../lib/core.sh"

TB=$SHSTK_CACHE/toolbox
ROOT=$TB/root

# The base set's packages from trixie (erofs-utils makes the bpftrace's
# root filesystem disk; the -dev libraries, meson, ninja and pkg-config
# build the project's QEMU, scripts/build/qemu.sh) and from trixie-backports
# (qemu-img for make replay's snapshot disk, the firmware every QEMU boots,
# the libelf the kernel's objtool and gdb 18 need).  An arch's set is its
# entry in config/arches.ini (packages; qemu_package from backports); a
# package named PKG/forky comes from forky, with what it needs from there
# (apt says "because of").
#   set_packages SET    (prints the trixie packages, "--", the backports)
set_packages() {
	case "$1" in
	base)
		echo "$SHSTK_HOST_CC" "$SHSTK_HOST_CXX" libc6-dev binutils make bc bison flex cpio kmod \
			python3 libssl-dev dwarves xz-utils zstd rsync git ca-certificates erofs-utils \
			libglib2.0-dev libpixman-1-dev libfdt-dev libattr1-dev libcap-ng-dev \
			meson ninja-build python3-venv pkg-config \
			-- qemu-system-data qemu-utils libelf-dev
		;;
	arch:*)
		shstk_arch_names --all | grep -x "${1#arch:}" >/dev/null ||
			shstk_die "toolbox.sh: no arch '${1#arch:}' in config/arches.ini"
		echo "$(shstk_arch_fact "${1#arch:}" packages) -- $(shstk_arch_fact "${1#arch:}" qemu_package)"
		;;
	bochs) echo bochs bochsbios vgabios bochs-term isolinux syslinux-common xorriso -- ;;
	gdb) echo python3-drgn -- gdb-multiarch ;;
	bench) echo virtme-ng udev -- ;;
	*) shstk_die "toolbox.sh: no package set '$1' (base, arch:NAME, bochs, gdb, bench or all)" ;;
	esac
}

sets=(base)
asked=("$@")
if [[ " ${asked[*]} " == *" all "* ]]; then
	asked=()
	for a in $(shstk_arch_names --all); do asked+=("arch:$a"); done
	asked+=(bochs gdb bench)
fi
for s in "${asked[@]}"; do
	set_packages "$s" >/dev/null
	[[ " ${sets[*]} " == *" $s "* ]] || sets+=("$s")
done

# A set's stamp: the hash of its list, then the hash of every package's
# version in the toolbox after the last install, which any set's install
# may have changed (shared libraries, QEMU's common files and firmware), so
# that what is keyed on a stamp moves with them.
list_hash() { set_packages "$1" | sha256sum | cut -c1-16; }

# The sets not installed, or installed from another list; a stamp found
# current is touched (tb and shstk_toolbox_need ask this script only when a
# stamp is older than it or the arch table).
missing=()
check_sets() {
	local s f have
	missing=()
	for s in "${sets[@]}"; do
		shstk_toolbox_set_stamp_to f "$s"
		have=''
		read -r have _ 2>/dev/null <"$f" || true
		if [ "$have" = "$(list_hash "$s")" ]; then
			touch "$f"
		else
			missing+=("$s")
		fi
	done
}
check_sets
[ "${#missing[@]}" -gt 0 ] || exit 0
# One maker at a time: every tool call comes through here, and on a fresh
# cache several may at once (make test's steps, two arches side by side, a
# kernel build beside the emulator's).  The others wait for the lock, then
# find their sets there.
mkdir -p "$TB"
shstk_lock_or_wait "$TB/lock" "another toolbox.sh to finish installing in the toolbox"
check_sets
[ "${#missing[@]}" -gt 0 ] || exit 0

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
	local new=$TB/root.new s f deb state have line pkgs=() backports=() words
	local -A foreign=()
	mkdir -p "$TB"
	if [ -f "$SHSTK_TOOLBOX_STAMP" ]; then
		# Sets added to a toolbox, or installed again from a newer list:
		# in place.
		new=$ROOT
	else
		rm -rf "$new"
		debootstrap --variant=minbase trixie "$new" "$mirror" >"$TB/debootstrap.log" 2>&1 ||
			shstk_die "debootstrap failed; see $TB/debootstrap.log"
	fi
	for s in "${missing[@]}"; do
		line=$(set_packages "$s")
		read -ra words <<<"${line%%--*}"
		pkgs+=("${words[@]}")
		read -ra words <<<"${line#*--}"
		backports+=("${words[@]}")
		if [[ "$s" = arch:* ]]; then
			deb=$(shstk_arch_fact "${s#arch:}" deb_arch)
			[ "$deb" = amd64 ] || foreign[$deb]=1
		fi
	done
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
	if [ "$new" = "$ROOT" ]; then
		# An install stopped half way (a TERM to the build that made it)
		# finished first, or no later one would run.
		DEBIAN_FRONTEND=noninteractive in_root dpkg --configure -a >>"$TB/debootstrap.log" 2>&1 ||
			shstk_die "dpkg --configure -a in the toolbox failed; see $TB/debootstrap.log"
	fi
	for deb in "${!foreign[@]}"; do
		in_root dpkg --add-architecture "$deb"
	done
	# Lists fetched now, not kept from the toolbox's making: the mirror
	# keeps only its newest packages.
	in_root apt-get -q update >>"$TB/debootstrap.log" 2>&1 || shstk_die "apt-get update in the toolbox failed"
	DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -q --no-install-recommends \
		"${pkgs[@]}" >>"$TB/debootstrap.log" 2>&1 ||
		shstk_die "installing the toolbox packages (${missing[*]}) failed; see $TB/debootstrap.log"
	if [ "${#backports[@]}" -gt 0 ]; then
		DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -q --no-install-recommends \
			-t trixie-backports "${backports[@]}" >>"$TB/debootstrap.log" 2>&1 ||
			shstk_die "installing the toolbox backports (${missing[*]}) failed; see $TB/debootstrap.log"
	fi
	# What came from forky, for the record.
	in_root apt list --installed 2>/dev/null | grep -E '/(forky|testing)' >"$TB/from-forky.txt" || true
	[ ! -s "$TB/from-forky.txt" ] ||
		shstk_msg "from forky: $(cut -d/ -f1 "$TB/from-forky.txt" | paste -sd' ') (see $TB/from-forky.txt)"
	in_root apt-get clean
	# shellcheck disable=SC2016  # dpkg-query's own format
	state=$(in_root dpkg-query -W -f '${binary:Package} ${Version}\n' | LC_ALL=C sort | sha256sum | cut -c1-16)
	for s in "${missing[@]}"; do
		shstk_toolbox_set_stamp_to f "$s"
		list_hash "$s" >"${f/#"$ROOT"/"$new"}"
	done
	# Every set's stamp, those installed before under their own lists.
	for f in "$new/.shstk-toolbox" "$new"/.shstk-set-*; do
		if [ -f "$f" ] && read -r have _ <"$f"; then
			echo "$have $state" >"$f"
		fi
	done
	if [ "$new" != "$ROOT" ]; then
		rm -rf "$ROOT"
		mv "$new" "$ROOT"
	fi
}

if [ -f "$SHSTK_TOOLBOX_STAMP" ]; then
	shstk_step "installing ${missing[*]} in the trixie toolbox $ROOT" build_root
else
	shstk_step "making the trixie toolbox in $ROOT with ${missing[*]} (about 1-2 minutes)" build_root
fi
