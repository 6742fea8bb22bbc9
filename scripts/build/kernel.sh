#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the patched kernel for one architecture, out of tree in the cache,
# incrementally: only what changed since the last build is rebuilt.
#
#   scripts/build/kernel.sh [x86_64|arm64]
#   SHSTK_KCONFIG_VARIANT=debug scripts/build/kernel.sh arm64   (KASAN etc.)
#   scripts/build/kernel.sh ARCH --boot-image   also the boot image where
#       QEMU boots another one (x86: the bzImage Bochs loads, next to the
#       vmlinux QEMU boots)
#   scripts/build/kernel.sh ARCH --headers   only the configuration and the
#       exported headers (usr/include), which the guest programs need: a
#       run on another kernel (BASELINE, debug) builds no second kernel
#
# Produces, in $SHSTK_CACHE/build/<arch>[-variant]/: the image QEMU boots
# (config/arches.ini qemu_kernel_image) and, when asked or when it is that
# one, the boot image (kernel_image), vmlinux, vmlinux-gdb.py and
# shstk-build.txt (what was built from what).
set -euo pipefail
# shellcheck source=../lib/core.sh
. "$(dirname "$0")/../lib/core.sh"
# shellcheck source=../lib/build.sh
. "$SHSTK_TOP/scripts/lib/build.sh"

shstk_host_check
shstk_arch_vars "${1:-}"
headers_only='' boot_image=''
for opt in "${@:2}"; do
	case "$opt" in
	--headers) headers_only=1 ;;
	--boot-image) boot_image=1 ;;
	*) shstk_die "unknown option '$opt' (--headers, --boot-image or nothing)" ;;
	esac
done
# The boot image where QEMU boots it too, or boots a KASAN variant's from
# it; elsewhere only for a run that loads it: x86's bzImage compresses
# vmlinux with zstd -22, some 10 s of each rebuild that QEMU does not use.
[ "$QEMU_KIMAGE" != "$KIMAGE" ] && [ -z "${SHSTK_KCONFIG_VARIANT:-}" ] &&
	! grep -qs '^CONFIG_KASAN=y' "$KBUILD_DIR/.config" || boot_image=1
want=$KBUILD_DIR/$QEMU_KIMAGE
[ -z "$boot_image" ] || want=$KBUILD_DIR/$KIMAGE
if [ -z "$headers_only" ] && [ "${SHSTK_FORCE_MAKE:-0}" = 0 ] && shstk_build_checked "$want"; then
	shstk_msg "$ARCH kernel up to date (checked earlier in this make test): $KBUILD_DIR"
	exit 0
fi
CONF=$SHSTK_TOP/config/kernel
frags=("$CONF/common.config" "$CONF/$ARCH.config")
if [ -n "${SHSTK_KCONFIG_VARIANT:-}" ]; then
	[ -f "$CONF/$SHSTK_KCONFIG_VARIANT.config" ] ||
		shstk_die "no config fragment config/kernel/$SHSTK_KCONFIG_VARIANT.config"
	frags+=("$CONF/$SHSTK_KCONFIG_VARIANT.config")
fi
# One build of a tree at a time: a make run or make debug started while
# make test builds the same arch's kernel waits for that build and then
# finds it current, instead of running a second make in the same tree.
mkdir -p "$KBUILD_DIR"
shstk_lock_or_wait "$KBUILD_DIR/.shstk-build.lock" "another build of the $ARCH kernel in $KBUILD_DIR"
"$SHSTK_TOP/scripts/build/kernel-source.sh"
# After the source, which needs no toolbox: a fresh machine fetches it
# while the emulator's build beside this one makes the toolbox.
shstk_toolbox_need "arch:$ARCH"
SRC=$SHSTK_SRC
STAMPS=$(shstk_tree_stamps "$SRC")

# Whether any Kconfig file of the tree defines the option NAME.
known_option() {
	grep -rqsE --include='Kconfig*' "^[[:space:]]*(menu)?config[[:space:]]+$1\b" "$SRC"
}

# Every option a fragment asks for must survive olddefconfig: report the ones
# a dependency dropped instead of building a kernel without them.
# shellcheck disable=SC2094  # the fragment is only read
check_config() {
	local f line opt want have bad=0
	for f in "${frags[@]}"; do
		while read -r line; do
			case "$line" in
			CONFIG_*=*) opt=${line%%=*} want=${line#*=} ;;
			"# CONFIG_"*" is not set") opt=${line#\# } opt=${opt%% *} want=n ;;
			*) continue ;;
			esac
			have=$(sed -n "s/^$opt=//p" "$KBUILD_DIR/.config")
			[ -n "$have" ] || have=n
			if [ "$have" != "$want" ]; then
				if [ "$want" != n ] && ! known_option "${opt#CONFIG_}"; then
					shstk_warn "$opt: asked for $want in $(basename "$f"), but the tree $SRC has no such option (no Kconfig defines it)"
				else
					shstk_warn "$opt: asked for $want in $(basename "$f"), got $have"
				fi
				bad=1
			fi
		done <"$f"
	done
	return "$bad"
}

configure() {
	shstk_kmake -s tinyconfig >/dev/null
	shstk_tb "$SRC/scripts/kconfig/merge_config.sh" -m -O "$KBUILD_DIR" \
		"$KBUILD_DIR/.config" "${frags[@]}" >"$KBUILD_DIR/merge_config.log" 2>&1 ||
		shstk_die "merge_config.sh failed; see $KBUILD_DIR/merge_config.log"
	shstk_kmake -s olddefconfig >/dev/null
	check_config || shstk_die "the $ARCH kernel configuration lost options of config/kernel/ (named above) in $SRC"
}

frag_hash=$(cat "${frags[@]}" | sha256sum | cut -c1-16)
# What this build is made of: the series applied, the configuration, the
# package.  The same inputs and an image in place need no make at all.
# The tree's stamps, which kernel-source.sh leaves on every path.
series='' edits='' kversion=''
shstk_read_stamp series "$STAMPS/.shstk-series" scripts/build/kernel-source.sh
shstk_read_stamp edits "$STAMPS/.shstk-edits" scripts/build/kernel-source.sh
shstk_read_stamp kversion "$STAMPS/.shstk-kernel-version" scripts/build/kernel-source.sh
inputs="$series $frag_hash $edits $kversion"
# The series this build's images were made from, for the runs that boot
# them (scripts/vm/boot.sh puts it in vm.json): its words, its hash and the
# hash of the tree's local edits, one a line.
series_info() {
	printf '%s\n' "$(cat "$STAMPS/.shstk-series-name" 2>/dev/null || echo unknown)" \
		"$series" "$edits" >"$KBUILD_DIR/.shstk-series-info"
}
# This build's own stamps: .shstk-inputs, what its images were built from,
# and .shstk-headers, the hash of what its usr/include (the guest
# programs' kernel headers) holds, also after a --headers run: a change to
# kernel code alone leaves it, and so the guest programs, as they were.
headers_stamp() {
	(cd "$KBUILD_DIR/usr/include" && find . -type f -print0 | LC_ALL=C sort -z |
		xargs -0 sha256sum) | sha256sum | cut -c1-16 >"$KBUILD_DIR/.shstk-headers"
}
# .shstk-boot-image: the inputs the boot image was made from, where it is
# made apart from the image QEMU boots; a build without it removes it, so
# that no run boots a boot image older than vmlinux.
if [ "${SHSTK_FORCE_MAKE:-0}" = 0 ] && [ -f "$KBUILD_DIR/$QEMU_KIMAGE" ] &&
	[ "$(cat "$KBUILD_DIR/.shstk-inputs" 2>/dev/null)" = "$inputs" ] &&
	{ [ -z "$boot_image" ] || { [ -f "$KBUILD_DIR/$KIMAGE" ] &&
		[ "$(cat "$KBUILD_DIR/.shstk-boot-image" 2>/dev/null)" = "$inputs" ]; }; }; then
	shstk_msg "$ARCH kernel up to date: $(sed -n 's/^release: //p' "$KBUILD_DIR/shstk-build.txt") ($KBUILD_DIR)"
	[ -f "$KBUILD_DIR/.shstk-headers" ] || headers_stamp
	series_info
	shstk_build_current "$KBUILD_DIR/$QEMU_KIMAGE"
	[ -z "$boot_image" ] || shstk_build_current "$KBUILD_DIR/$KIMAGE"
	exit 0
fi
rm -f "$KBUILD_DIR/.shstk-inputs" "$KBUILD_DIR/.shstk-headers" "$KBUILD_DIR/.shstk-boot-image"
if [ ! -f "$KBUILD_DIR/.config" ] || [ "$(cat "$KBUILD_DIR/.shstk-config" 2>/dev/null)" != "$frag_hash" ]; then
	shstk_step "configuring $ARCH (tinyconfig + ${frags[*]##*/})" configure
	echo "$frag_hash" >"$KBUILD_DIR/.shstk-config"
fi

if [ -n "$headers_only" ]; then
	shstk_kmake -s headers >"$KBUILD_DIR/headers.log" 2>&1 ||
		shstk_die "making the $ARCH kernel headers failed; see $KBUILD_DIR/headers.log"
	headers_stamp
	shstk_msg "$ARCH kernel headers -> $KBUILD_DIR/usr/include"
	exit 0
fi

# Progress: make's own one-line-per-object output goes to the log; the
# terminal gets a line every 500 objects and the errors.
build() {
	local log=$KBUILD_DIR/build.log
	local st=()
	set -o pipefail
	shstk_kmake -j"$(nproc)" "${targets[@]}" 2>&1 | tee "$log" |
		awk '/^  [A-Z]/ { n++; if (n % 500 == 0) printf "[build/kernel.sh]   %d steps, at %s\n", n, $2 > "/dev/stderr"; fflush() }
		     /error:|Error [0-9]/ { print > "/dev/stderr" }' || st=("${PIPESTATUS[@]}")
	[ "${#st[@]}" -eq 0 ] || shstk_build_failed "${st[*]}" "$log" "kernel build for $ARCH"
}
# The image QEMU boots, where it is not the one make built
# (config/arches.ini qemu_kernel_image).
qemu_image() {
	case "$QEMU_KIMAGE" in
	"$KIMAGE") ;;
	vmlinux.stripped)
		shstk_tb "${CROSS_COMPILE}objcopy" --strip-debug "$KBUILD_DIR/vmlinux" \
			"$KBUILD_DIR/vmlinux.stripped.tmp"
		mv "$KBUILD_DIR/vmlinux.stripped.tmp" "$KBUILD_DIR/vmlinux.stripped"
		;;
	*) shstk_die "config/arches.ini: no way to make qemu_kernel_image '$QEMU_KIMAGE' for $ARCH" ;;
	esac
}
cold=incremental
[ -f "$KBUILD_DIR/vmlinux" ] || cold=cold
targets=(vmlinux scripts_gdb headers)
[ -z "$boot_image" ] || targets=("$KTARGET" "${targets[@]}")
tb0=$EPOCHREALTIME
shstk_step "building $ARCH kernel in $KBUILD_DIR (${targets[*]})" build
qemu_image
if [ -n "$boot_image" ]; then
	echo "$inputs" >"$KBUILD_DIR/.shstk-boot-image"
elif [ "$QEMU_KIMAGE" != "$KIMAGE" ]; then
	rm -f "$KBUILD_DIR/$KIMAGE"
fi
# Every build's wall time, for make bench.
printf '%s %s %.0f\n' "$(date -u +%FT%TZ)" "$cold" "$(shstk_elapsed "$tb0")" >>"$KBUILD_DIR/shstk-build-times"

release=$(shstk_kmake -s kernelrelease)
{
	echo "arch: $ARCH"
	echo "source: $kversion"
	echo "tree: $(cat "$STAMPS/.shstk-series-name" 2>/dev/null || echo unknown)"
	echo "release: $release"
	echo "compiler: $(shstk_tb "$ARCH_CC" --version | head -n1)"
	echo "variant: ${SHSTK_KCONFIG_VARIANT:-default}"
} >"$KBUILD_DIR/shstk-build.txt"
headers_stamp
echo "$inputs" >"$KBUILD_DIR/.shstk-inputs"
series_info
shstk_build_current "$KBUILD_DIR/$QEMU_KIMAGE"
[ -z "$boot_image" ] || shstk_build_current "$KBUILD_DIR/$KIMAGE"
shstk_msg "kernel $release ($kversion) -> $want"
