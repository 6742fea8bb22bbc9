#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The project's Bochs: 3.0 from Debian trixie's own source package with the
# project's patches (patches/bochs/series, applied with git am onto the
# pristine source, committed in the cache and tagged shstk-base), built in
# two configurations, and every Bochs run of the harness uses one of them:
#
#   run      no debugger and no gdbstub, so Bochs can chain its instruction
#            handlers (configure refuses that speedup with either): every
#            run but a gdb session, because chaining makes it faster
#            (docs/boot.md);
#   gdbstub  the gdbstub (Bochs builds either its internal debugger, which
#            Debian's package has, or this): make debug and make gdb-check.
#
# Both have the CPU features the runs' CPU model needs (CET among them) and
# no display but nogui.
# The patches: the stock stub reads whatever a linear address names, and
# crashes on a kernel address while the CPU is still in real mode; and it
# stops for gdb at every guest exception (each page fault), which makes a
# stepped boot crawl; "-save DIR" saves the state and quits when the guest executes
# "xchg %bx,%bx", and "-r DIR" restores it reading the saved RAM in place,
# not copied first (the post-boot snapshot of scripts/vm/emulators/bochs.sh).
# Built once into the cache, in the toolbox; again when this script or the
# series changes.
#
#   scripts/build/bochs.sh CONFIG   -> prints the path of CONFIG's bochs
#                                      binary, then a line saying what it is
#                                      (for vm.json)
#   scripts/build/bochs.sh all      -> builds both, prints nothing
set -euo pipefail
# shellcheck source=../lib/core.sh
. "$(dirname "$0")/../lib/core.sh"
# shellcheck source=../lib/build.sh
. "$SHSTK_TOP/scripts/lib/build.sh"

case "${1:-}" in
run | gdbstub) CONFIG=$1 ;;
all)
	"$0" run >/dev/null
	"$0" gdbstub >/dev/null
	exit 0
	;;
*) shstk_die "usage: scripts/build/bochs.sh run|gdbstub|all" ;;
esac

# Its BIOS images and what makes its boot ISO, for the runs of this build.
shstk_toolbox_need bochs
DIR=$SHSTK_CACHE/bochs
OUT=$DIR/$CONFIG
BIN=$OUT/install/bin/bochs
PATCHES=$SHSTK_TOP/patches/bochs
want=$({ cat "$0" && shstk_series_hash "$PATCHES"; } | sha256sum | cut -c1-16)
built() {
	echo "$BIN"
	echo "bochs $(cat "$DIR/.shstk-version") + $(shstk_series_list "$PATCHES/series" | wc -l) patches ($want), $CONFIG configuration"
}
current() {
	[ -x "$BIN" ] && [ "$(cat "$OUT/.shstk-bochs" 2>/dev/null)" = "$want" ]
}
if current; then
	built
	exit 0
fi

# One at a time: both configurations start from the one patched source.
mkdir -p "$DIR"
shstk_lock_or_wait "$DIR/bochs.lock" "another build/bochs.sh"
if current; then
	built
	exit 0
fi

git_src() { git -C "$DIR/src" -c user.name=shstk-lab -c user.email=shstk-lab@localhost "$@"; }

# DIR/src: Debian's source with the series applied, made once for both.
patched_source() {
	local orig
	cd "$DIR" || shstk_die "no $DIR"
	if ! ls bochs_*.orig.tar.* >/dev/null 2>&1; then
		# The .dsc may be missing from a mirror; the tarballs are what we use.
		"$SHSTK_TOP/scripts/tools/apt-local" -qq source --download-only bochs >/dev/null 2>&1 || true
		ls bochs_*.orig.tar.* >/dev/null 2>&1 || shstk_die "could not download Debian's bochs source"
	fi
	orig=$(ls bochs_*.orig.tar.*)
	rm -rf src src-am
	mkdir src
	tar -xf "$orig" -C src --strip-components=1 || shstk_die "unpacking $orig failed"
	cd src || shstk_die "no $DIR/src"
	git_src init -q
	git_src add -A -f .
	git_src commit -q -m "$orig (pristine, Debian's orig tarball)"
	git_src tag shstk-base
	shstk_git_am_series "$DIR/src" "$DIR/src-am" "$PATCHES" "Debian's bochs source"
	git_src checkout -q -f --detach "$(git -C "$DIR/src-am" rev-parse HEAD)" ||
		shstk_die "checking out the patched Bochs source failed"
	basename "$orig" | sed 's/^bochs_\(.*\)\.orig\.tar\..*/\1/' >"$DIR/.shstk-version"
	echo "$want" >"$DIR/.shstk-src"
}

# OUT/src: a copy of the patched source, configured and built in place (its
# configure does not build out of tree), removed once installed: it is
# big and nothing reads it after.
# step runs this with set -e off: each command checks its own exit.
build() {
	local flags
	[ "$(cat "$DIR/.shstk-src" 2>/dev/null)" = "$want" ] || patched_source
	rm -rf "$OUT"
	mkdir -p "$OUT/src"
	git_src archive HEAD | tar -x -C "$OUT/src" || shstk_die "copying the patched Bochs source failed"
	cd "$OUT/src" || shstk_die "no $OUT/src"
	# What the CPU model the runs ask for (cpu: model=tigerlake in
	# scripts/vm/emulators/bochs.sh) needs of Debian's feature set
	# (debian/rules), without its internal debugger, and no display.  Not
	# its VMX, SVM, AMX, UINTR or 3DNow!: each is built only to be offered
	# where the model has it (VMX is left out of the model's CPUID, the
	# others it never has), and each of Bochs's two builds compiled them
	# (docs/pipeline.md).  AVX-512 stays: the model has it, and Bochs 3.0's
	# AVX10.2 code does not compile without it.
	# No "ips =" line in the log every second: Bochs
	# writes it from its SIGALRM handler through stdio, and a signal that
	# comes while the CPU loop is logging (the kernel's unknown RDMSRs,
	# thousands a minute) deadlocks Bochs in a futex wait under
	# bx_show_ips_handler() (docs/boot.md).
	flags=(--prefix="$OUT/install" --with-nogui
		--enable-x86-64 --enable-cpu-level=6 --enable-cet
		--enable-avx --enable-evex --enable-protection-keys --enable-x86-debugger
		--enable-pci --enable-cdrom --enable-a20-pin --enable-fpu
		--enable-repeat-speedups --enable-all-optimizations --disable-docbook --disable-show-ips)
	[ "$CONFIG" != gdbstub ] || flags+=(--enable-gdb-stub)
	shstk_tb env CC="$SHSTK_HOST_CC" CXX="$SHSTK_HOST_CXX" ./configure "${flags[@]}" \
		>"$OUT/configure.log" 2>&1 || shstk_die "configuring Bochs failed; see $OUT/configure.log"
	[ "$CONFIG" != run ] || grep -q '^#define BX_SUPPORT_HANDLERS_CHAINING_SPEEDUPS 1' config.h ||
		shstk_die "Bochs configured without handlers chaining, the run configuration's reason to be; see $OUT/configure.log"
	shstk_tb make -j"$(nproc)" >"$OUT/build.log" 2>&1 || shstk_die "building Bochs failed; see $OUT/build.log"
	shstk_tb make install >>"$OUT/build.log" 2>&1 || shstk_die "installing Bochs failed; see $OUT/build.log"
	cd "$OUT" && rm -rf "$OUT/src"
	echo "$want" >"$OUT/.shstk-bochs"
}
shstk_step "building Bochs 3.0, the $CONFIG configuration (a few minutes)" build >&2
built
