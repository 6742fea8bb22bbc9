#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The project's Bochs: 3.0 from Debian trixie's own source package with the
# project's patches (patches/bochs/series, applied with git am onto the
# pristine source, committed in the cache and tagged shstk-base), and every
# Bochs run of the harness uses it.  Bochs builds either its internal
# debugger or a gdbstub; Debian's package has the debugger, this build has
# the gdbstub (make debug and make gdb-check under Bochs need it; a run with
# "gdbstub: enabled=0" runs without it), Debian's CPU features (CET among
# them) and no display but nogui.  The patches: the stub read
# whatever a linear address named, and crashed on a kernel address while
# the CPU was still in real mode; and it stopped for gdb at every guest
# exception (each page fault), which made a stepped boot crawl; "-save
# DIR" saves the state and quits when the guest executes "xchg %bx,%bx",
# and "-r DIR" restores it in under a second, not 3.5 s (the post-boot
# snapshot of scripts/vm/emulators/bochs.sh).
# Built once into the cache, in the toolbox; again when this script or the
# series changes.
#
#   scripts/build/bochs.sh   -> prints the path of the bochs binary, then
#                               a line saying what it is (for vm.json)
set -euo pipefail
# shellcheck source=../lib.sh
. "$(dirname "$0")/../lib.sh"

DIR=$SHSTK_CACHE/bochs
BIN=$DIR/install/bin/bochs
PATCHES=$SHSTK_TOP/patches/bochs
want=$({ cat "$0" && series_hash "$PATCHES"; } | sha256sum | cut -c1-16)
built() {
	echo "$BIN"
	echo "bochs $(cat "$DIR/.shstk-version") + $(series_list "$PATCHES/series" | wc -l) patches ($want)"
}
if [ -x "$BIN" ] && [ "$(cat "$DIR/.shstk-bochs" 2>/dev/null)" = "$want" ]; then
	built
	exit 0
fi

git_src() { git -C "$DIR/src" -c user.name=shstk-lab -c user.email=shstk-lab@localhost "$@"; }

build() {
	local src orig
	mkdir -p "$DIR"
	cd "$DIR"
	if ! ls bochs_*.orig.tar.* >/dev/null 2>&1; then
		# The .dsc may be missing from a mirror; the tarballs are what we use.
		"$SHSTK_TOP/scripts/tools/apt-local" -qq source --download-only bochs >/dev/null 2>&1 || true
		ls bochs_*.orig.tar.* >/dev/null 2>&1 || die "could not download Debian's bochs source"
	fi
	orig=$(ls bochs_*.orig.tar.*)
	rm -rf src src-am
	mkdir src
	tar -xf "$orig" -C src --strip-components=1
	src=$DIR/src
	cd "$src"
	git_src init -q
	git_src add -A -f .
	git_src commit -q -m "$orig (pristine, Debian's orig tarball)"
	git_src tag shstk-base
	git_am_series "$src" "$DIR/src-am" "$PATCHES" "Debian's bochs source"
	git_src checkout -q -f --detach "$(git -C "$DIR/src-am" rev-parse HEAD)"
	# Debian's feature set (debian/rules), with the gdbstub instead of the
	# internal debugger, and no display.  No "ips =" line in the log every
	# second: Bochs writes it from its SIGALRM handler through stdio, and
	# a signal that came while the CPU loop was logging (the kernel's
	# unknown RDMSRs, thousands a minute) deadlocked both VMs of a make
	# fuzz at once, each in a futex wait under bx_show_ips_handler().
	tb env CC="$SHSTK_HOST_CC" CXX="$SHSTK_HOST_CXX" ./configure --prefix="$DIR/install" --with-nogui \
		--enable-gdb-stub --enable-x86-64 --enable-cpu-level=6 --enable-cet \
		--enable-avx --enable-evex --enable-amx --enable-protection-keys --enable-uintr \
		--enable-vmx=2 --enable-svm --enable-3dnow --enable-x86-debugger \
		--enable-pci --enable-cdrom --enable-a20-pin --enable-fpu \
		--enable-repeat-speedups --enable-all-optimizations --disable-docbook --disable-show-ips \
		>"$DIR/configure.log" 2>&1 || die "configuring Bochs failed; see $DIR/configure.log"
	tb make -j"$(nproc)" >"$DIR/build.log" 2>&1 || die "building Bochs failed; see $DIR/build.log"
	tb make install >>"$DIR/build.log" 2>&1 || die "installing Bochs failed; see $DIR/build.log"
	basename "$orig" | sed 's/^bochs_\(.*\)\.orig\.tar\..*/\1/' >"$DIR/.shstk-version"
	echo "$want" >"$DIR/.shstk-bochs"
}
step "building Bochs 3.0 with its gdbstub (a few minutes)" build >&2
built
