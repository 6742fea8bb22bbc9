#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the guest image for one architecture: the programs of
# guest/tests.list (ours and the patched kernel's selftests, all static),
# busybox, and guest/init.sh, packed into an initramfs.
#
#   scripts/build/guest.sh ARCH [SUITE]        a suite of guest/tests.list
#                                              (run by default, or smoke)
#   scripts/build/guest.sh ARCH --prog FILE    one user program instead
#   scripts/build/guest.sh ARCH --snapshot-base  no program: init, busybox
#                                              and guest/snapshot_point.c,
#                                              the image a post-boot
#                                              snapshot boots (build.sh
#                                              shstk_guest_snapshot_base)
#
# Prints the path of the image it built, SUITE.cpio.gz; beside it, SUITE.tests
# is the list of what its init runs ("name path timeout", in order).  Every
# image is made together with the snapshot base, whose key (mkinitramfs.py's)
# goes beside the image in SUITE.cpio.gz.snapshot-base: a restored run then
# knows the base that goes with its image without running this script again.
set -euo pipefail
# shellcheck source=../lib/core.sh
. "$(dirname "$0")/../lib/core.sh"
# shellcheck source=../lib/build.sh
. "$SHSTK_TOP/scripts/lib/build.sh"

shstk_arch_vars "${1:-}"
shift || true
prog=
base=
suite=run
if [ "${1:-}" = --prog ]; then
	prog=${2:?--prog needs a file}
	shstk_prog_check "$prog"
	prog=$(readlink -f "$prog")
elif [ "${1:-}" = --snapshot-base ]; then
	base=yes
elif [ -n "${1:-}" ]; then
	suite=$1
fi

SRC=$SHSTK_PATCHED_SRC
SEL=$SRC/tools/testing/selftests
GUEST=$GUEST_DIR
HDR=$KBUILD_DIR/usr/include
CC=$ARCH_CC
read -ra ARCH_CFLAGS <<<"$(shstk_arch_fact "$ARCH" guest_cflags)"
[ -d "$HDR/linux" ] || shstk_die "no kernel headers in $HDR: build the kernel first (make kernel ARCH=$ARCH)"
# What the programs are built from, besides their sources: the tree (its
# series) and the kernel headers in $HDR.
tree_series='' headers=''
stamps=$(shstk_tree_stamps "$SRC")
shstk_read_stamp tree_series "$stamps/.shstk-series" scripts/build/kernel-source.sh
shstk_read_stamp headers "$KBUILD_DIR/.shstk-headers" scripts/build/kernel.sh
# The name of the token's field, clone_args' twelfth u64 (offset 88), as
# the kernel headers have it: shadow_stack_token up to v20 of the series,
# shstk_token since v21.  The static_assert of guest/lib/shstk.h and the
# bpftrace scripts use it by that name (SHSTK_TOKEN_FIELD), which
# kernel_clone_args shares.
[ -f "$HDR/linux/sched.h" ] || shstk_die "no linux/sched.h in the kernel headers $HDR"
token_field=$(awk '/^struct clone_args \{/ { in_struct = 1; next }
	in_struct && /^\};/ { exit }
	in_struct && $1 == "__aligned_u64" { if (++n == 12) { sub(/;.*/, "", $2); print $2; exit } }' \
	"$HDR/linux/sched.h")
case $token_field in
"" | shstk_token | shadow_stack_token) ;;
*) shstk_die "the u64 at offset 88 of struct clone_args in $HDR/linux/sched.h is $token_field, not a shadow stack token (shstk_token, or shadow_stack_token up to v20)" ;;
esac
# A developer's tree without the series (KSRC alone) has none: the
# programs are built all the same, and every case, gdb-check, trace and
# replay that needs the token skips with this reason, which they read from
# $GUEST/token-missing.  A series of the project's, or SERIES, must have it.
token_missing=
if [ -z "$token_field" ]; then
	token_missing="this kernel has no shadow stack token in struct clone_args"
	token_missing+=" (no u64 at offset 88 in $SRC/include/uapi/linux/sched.h)"
	if [ -z "$SHSTK_KSRC" ] || [ -n "$SHSTK_SERIES" ]; then
		shstk_die "$token_missing: the series was not applied as it should be"
	fi
fi
mkdir -p "$GUEST/bin" "$GUEST/ksft" "$GUEST/include"
if [ -n "$token_field" ]; then
	token_flag=(-DSHSTK_TOKEN_FIELD="$token_field")
else
	# A C string: the tree's path may hold a quote or a backslash.
	c_string=${token_missing//\\/\\\\}
	token_flag=(-DSHSTK_NO_TOKEN="\"${c_string//\"/\\\"}\"")
fi
# One build per arch at a time: make test's two lanes (after a kernel
# change, every image is rebuilt) and make fuzz's VMs may ask for one
# arch's images at the same moment, and two builds would both write its
# lists (a suite listed twice ran each program twice) and its programs.
exec {build_lock}>"$GUEST/.build.lock"
flock "$build_lock"
printf '%s\n' "$token_missing" >"$GUEST/token-missing.$$"
mv "$GUEST/token-missing.$$" "$GUEST/token-missing"
# The gdb scenario's cases, for guest/shstk_gdb.c, from their one
# description (spec/scenario.py, which imports nothing of the project's):
# made again when that file's content changed, rewritten only when the
# cases did.
scenario_h=$GUEST/include/shstk_scenario.h
scenario_key=$(sha256sum <"$SHSTK_TOP/spec/scenario.py")
if [ ! -f "$scenario_h" ] || [ "$(cat "$scenario_h.key" 2>/dev/null)" != "$scenario_key" ]; then
	PYTHONPATH=$SHSTK_TOP shstk_py -m spec.scenario --c-header >"$scenario_h.$$"
	if cmp -s "$scenario_h.$$" "$scenario_h"; then
		rm -f "$scenario_h.$$"
	else
		mv "$scenario_h.$$" "$scenario_h"
	fi
	echo "$scenario_key" >"$scenario_h.key"
fi

# The tests of guest/tests.list for this arch and suite: "name timeout source".
suite() {
	awk -v arch="$ARCH" -v suite="$suite" '!/^#/ && NF >= 5 &&
		index("," $2 ",", "," arch ",") && index("," $3 ",", "," suite ",") { print $1, $4, $5 }' \
		"$SHSTK_TOP/guest/tests.list"
}

# A program is compiled again only when what it is made of changed (its
# source, the guest's headers, what the kernel headers hold, the toolbox's
# compiler, the flags), because every VM step builds its guest and a
# static link is not cheap.
build_ours() {
	local name=$1 file=$2 out=$GUEST/bin/$1 key flags toolbox
	# The binary must not depend on where the repository is (a CI clone's
	# path would make every program, and the snapshots of the images
	# that hold them, new): sources named relative to it, compiled from
	# it, and the key without it.
	flags=(-static -O2 -g -Wall -Wextra -Wno-unused-parameter -Werror "${ARCH_CFLAGS[@]}"
		"${token_flag[@]}"
		-isystem "$HDR" -I"$SHSTK_TOP/guest" -I"$GUEST/include" -ffile-prefix-map="$SHSTK_TOP=.")
	shstk_toolbox_stamps_to toolbox "$ARCH"
	key=$({
		printf '%s\n' "$CC" "${flags[@]//"$SHSTK_TOP"/@TOP@}"
		echo "$headers"
		echo "$toolbox"
		cat "$SHSTK_TOP/guest/$file" "$SHSTK_TOP"/guest/lib/*.h "$GUEST"/include/*.h
	} | sha256sum | cut -c1-16)
	[ ! -x "$out" ] || [ "$(cat "$out.key" 2>/dev/null)" != "$key" ] || return 0
	mkdir -p "$(dirname "$out")"
	# Made aside and moved: two builds may run at once.
	(cd "$SHSTK_TOP" && shstk_tb "$CC" "${flags[@]}" -o "$out.$$" "guest/$file") || {
		rm -f "$out.$$"
		shstk_die "compiling guest/$file for $ARCH failed"
	}
	mv "$out.$$" "$out"
	echo "$key" >"$out.key"
}

# The selftests build against this arch's kernel headers installed in the
# cache (KHDR_INCLUDES), never in the source tree, which may be a
# developer's own (KSRC) and is shared by every arch.
build_kselftests() {
	local names=("$@") t dir target tree tools_edits made missing=
	local stamp=$GUEST/ksft/.shstk-tree built=$GUEST/ksft/.shstk-built
	tree="$tree_series $CC"
	# Nothing to make when every program is there, built from this tree
	# (the series, the compiler), its local edits under tools/ (where the
	# selftests and their includes are: an edit of kernel code alone makes
	# nothing here) and these headers, so that a run does not pay for a
	# make of the selftests.
	tools_edits=$(shstk_tree_edits_hash "$SRC" tools) || shstk_die "reading the edits under tools/ of the kernel tree $SRC failed"
	made="$tree $tools_edits $headers"
	for t in "${names[@]}"; do
		[ -x "$GUEST/ksft/$t" ] || missing=1
	done
	[ -n "$missing" ] || [ "$(cat "$built" 2>/dev/null)" != "$made" ] || return 0
	# Headers an older harness installed in the tree would come first
	# (arm64/gcs's Makefile adds the tree's usr/include with -I).
	if [ -f "$SRC/usr/.shstk-headers" ] && [ -z "$SHSTK_KSRC" ]; then
		git -C "$SRC" clean -qfdx -- usr/include
		rm -f "$SRC/usr/.shstk-headers"
	fi
	# Installed again only for another kernel build: an install is slower
	# than the check.
	local khdr=$GUEST/usr installed=$GUEST/usr/.shstk-headers
	if [ "$(cat "$installed" 2>/dev/null)" != "$headers" ]; then
		rm -f "$installed"
		shstk_kmake -s INSTALL_HDR_PATH="$khdr" headers_install >/dev/null ||
			shstk_die "installing $ARCH kernel headers for the selftests failed"
		echo "$headers" >"$installed"
	fi
	# The selftests' make rebuilds a program when its .c changes, not when
	# a header the series changes does (ksft_shstk.h, clone3_selftests.h):
	# built from another series (or compiler), they are built afresh.
	if [ "$(cat "$stamp" 2>/dev/null)" != "$tree" ]; then
		rm -rf "$GUEST/ksft"
		mkdir -p "$GUEST/ksft"
	fi
	for t in "${names[@]}"; do
		dir=${t%/*} target=${t##*/}
		mkdir -p "$GUEST/ksft/$dir"
		shstk_tb make -s -C "$SEL/$dir" OUTPUT="$GUEST/ksft/$dir" ARCH="$KARCH" \
			CROSS_COMPILE="$CROSS_COMPILE" CC="$CC -static" USERLDFLAGS=-static \
			KHDR_INCLUDES="-isystem $khdr/include" \
			USERCFLAGS="-isystem $khdr/include -I$SEL -I$SRC/tools/include" \
			"$GUEST/ksft/$dir/$target" >"$GUEST/ksft/build.log" 2>&1 || {
			tail -n 20 "$GUEST/ksft/build.log" >&2
			shstk_die "building selftest $t for $ARCH failed"
		}
	done
	# The gcs stress test starts this helper from beside itself.
	if [[ " ${names[*]} " == *" arm64/gcs/gcs-stress "* ]]; then
		shstk_tb make -s -C "$SEL/arm64/gcs" OUTPUT="$GUEST/ksft/arm64/gcs" CC="$CC -static" \
			KHDR_INCLUDES="-isystem $khdr/include" USERCFLAGS="-isystem $khdr/include" \
			"$GUEST/ksft/arm64/gcs/gcs-stress-thread" >>"$GUEST/ksft/build.log" 2>&1 ||
			shstk_die "building gcs-stress-thread failed"
	fi
	echo "$tree" >"$stamp"
	echo "$made" >"$built"
}

# Debian's busybox-static for the guest arch, downloaded once into the cache.
busybox() {
	local bb=$SHSTK_CACHE/busybox/$DEB_ARCH deb
	BUSYBOX=$bb/usr/bin/busybox
	if [ ! -x "$BUSYBOX" ]; then
		mkdir -p "$bb/deb"
		(cd "$bb/deb" && "$SHSTK_TOP/scripts/tools/apt-local" -qq download "busybox-static:$DEB_ARCH" >/dev/null 2>&1) || {
			"$SHSTK_TOP/scripts/tools/apt-local" -qq update >/dev/null ||
				shstk_die "apt update (project-local) failed"
			(cd "$bb/deb" && "$SHSTK_TOP/scripts/tools/apt-local" -qq download "busybox-static:$DEB_ARCH") ||
				shstk_die "downloading busybox-static:$DEB_ARCH failed"
		}
		deb=$(find "$bb/deb" -name 'busybox-static_*.deb' | head -n1)
		dpkg-deb -x "$deb" "$bb"
		[ -x "$BUSYBOX" ] || shstk_die "$deb has no usr/bin/busybox"
	fi
}

[ -z "$prog" ] || suite=prog
[ -z "$base" ] || suite=snapshot-base
list=$GUEST/$suite.list
tests=$GUEST/$suite.tests
image=$GUEST/$suite.cpio.gz
base_list=$GUEST/snapshot-base.list
base_tests=$GUEST/snapshot-base.tests
base_image=$GUEST/snapshot-base.cpio.gz
# The lists of tests are read without this build's lock (vm/boot.sh's
# callers: trace.sh takes the program it traces from one), by the other
# lane of make test too: written aside, moved in whole before packing.
tests_new=$tests.new.$$ base_tests_new=$base_tests.new.$$
: >"$tests_new"
: >"$base_tests_new"
busybox
# What every image has: busybox, init and what init needs from the arch
# table.  (The bpftrace scripts and the list of tests come last, below.)
{
	for d in /bin /sbin /dev /proc /sys /tmp /run /tests /usr /usr/bin /usr/sbin; do
		echo "dir $d 0755 0 0"
	done
	echo "nod /dev/console 0600 0 0 c 5 1"
	echo "file /bin/busybox $BUSYBOX 0755 0 0"
	echo "file /init $SHSTK_TOP/guest/init.sh 0755 0 0"
	echo "file /tests/arch.env $GUEST/arch.env 0644 0 0"
} >"$base_list"
printf 'SHSTK_CPUINFO_FIELD=%s\nSHSTK_CPUINFO_FLAG=%s\n' \
	"$(shstk_arch_fact "$ARCH" cpuinfo_field)" "$(shstk_arch_fact "$ARCH" cpuinfo_flag)" >"$GUEST/arch.env"
[ -n "$base" ] || cp "$base_list" "$list"
# The snapshot base: no program, but the one that tells the host init is at
# its snapshot point.  A run's own image comes later, unpacked over it by
# init.
build_ours snapshot_point snapshot_point.c
echo "file /bin/snapshot_point $GUEST/bin/snapshot_point 0755 0 0" >>"$base_list"

if [ -n "$prog" ]; then
	echo "dir /tests/user 0755 0 0" >>"$list"
	echo "file /tests/user/$(basename "$prog") $prog 0755 0 0" >>"$list"
	echo "user /tests/user/$(basename "$prog") ${SHSTK_PROG_TIMEOUT:-600}" >>"$tests_new"
elif [ -z "$base" ]; then
	ksft=()
	while read -r name timeout src; do
		case "$src" in
		guest:*) build_ours "$name" "${src#guest:}" ;;
		kselftest:*) ksft+=("${src#kselftest:}") ;;
		*) shstk_die "guest/tests.list: unknown source '$src' for $name" ;;
		esac
	done < <(suite)
	[ "${#ksft[@]}" -gt 0 ] || [ -n "$(suite)" ] || shstk_die "suite '$suite' has no programs for $ARCH in guest/tests.list"
	[ "${#ksft[@]}" -eq 0 ] || build_kselftests "${ksft[@]}"
	declare -A dirs=()
	while read -r name timeout src; do
		case "$src" in
		guest:*) host=$GUEST/bin/$name guest=/tests/$name ;;
		kselftest:*) host=$GUEST/ksft/${src#kselftest:} guest=/tests/ksft/${src#kselftest:} ;;
		esac
		d=$(dirname "$guest")
		while [ "$d" != / ] && [ -z "${dirs[$d]:-}" ]; do
			dirs[$d]=1
			d=$(dirname "$d")
		done
		echo "file $guest $host 0755 0 0" >>"$list.files"
		echo "$name $guest $timeout" >>"$tests_new"
	done < <(suite)
	if [ -n "${dirs[/tests/ksft/arm64/gcs]:-}" ]; then
		echo "file /tests/ksft/arm64/gcs/gcs-stress-thread $GUEST/ksft/arm64/gcs/gcs-stress-thread 0755 0 0" >>"$list.files"
	fi
	printf '%s\n' "${!dirs[@]}" | sort | sed 's/.*/dir & 0755 0 0/' >>"$list"
	cat "$list.files" >>"$list"
	rm -f "$list.files"
fi
# The bpftrace scripts, each with its arch part (NAME.ARCH.bt) appended: a
# script with parts for other arches and none for this one would attach to
# nothing here, so that stops the build.  Every image has them: init
# attaches them before the snapshot point.
# (Not trace.list: that is the trace suite's list.)
trace=$GUEST/trace.entries
echo "dir /trace 0755 0 0" >"$trace"
mkdir -p "$GUEST/trace"
arches=" $(shstk_arch_names --all | paste -sd' ') "
for bt in "$SHSTK_TOP"/trace/*.bt; do
	part=${bt%.bt}
	[[ $arches != *" ${part##*.} "* ]] || continue
	name=${bt##*/}
	parts=("$bt")
	if [ -f "$part.$ARCH.bt" ]; then
		parts+=("$part.$ARCH.bt")
	elif compgen -G "$part.*.bt" >/dev/null; then
		shstk_die "trace/$name has arch parts, but none for $ARCH (trace/${name%.bt}.$ARCH.bt)"
	fi
	cat "${parts[@]}" | sed "s/\bSHSTK_TOKEN_FIELD\b/${token_field:-SHSTK_TOKEN_FIELD}/g" >"$GUEST/trace/$name"
	echo "file /trace/$name $GUEST/trace/$name 0644 0 0" >>"$trace"
done
cat "$trace" >>"$base_list"
mv "$base_tests_new" "$base_tests"
# The snapshot base's own build: both are one file.
[ "$tests" = "$base_tests" ] || mv "$tests_new" "$tests"
echo "file /tests/list $base_tests 0644 0 0" >>"$base_list"
if [ -n "$base" ]; then
	shstk_py "$SHSTK_TOP/scripts/build/mkinitramfs.py" "$base_list" "$base_image"
else
	cat "$trace" >>"$list"
	echo "file /tests/list $tests 0644 0 0" >>"$list"
	shstk_py "$SHSTK_TOP/scripts/build/mkinitramfs.py" "$base_list" "$base_image" "$list" "$image"
	cp "$base_image.key" "$image.snapshot-base"
fi
echo "$image"
