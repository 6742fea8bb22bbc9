# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2153  # SHSTK_* and the arch variables: from core.sh, sourced first
#
# The build layer's helpers (after core.sh): the series and the kernel
# trees, the kernel, the guest image and its snapshot base, the emulators'
# own builds (scripts/lib/entry.sh has what ties them to an emulator's
# run).  Sourced, never run.

# The patch names a series file lists, in order (comments and blank lines
# dropped).   shstk_series_list FILE
shstk_series_list() {
	[ -f "$1" ] || shstk_die "$1 is missing"
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$1"
}

# A series' identity, by names and contents only (the same series from
# another clone, CI's, is the same series).   shstk_series_hash PATCHDIR
shstk_series_hash() {
	local p names
	mapfile -t names < <(shstk_series_list "$1/series")
	for p in "${names[@]}"; do
		[ -f "$1/$p" ] || shstk_die "$1/series names $p, which does not exist"
	done
	[ "${#names[@]}" -gt 0 ] || { printf '' | sha256sum | cut -c1-16; return; }
	# One sha256sum for all, its lines in the form "NAME HASH  -", which
	# the caches' keys are made of.
	(cd "$1" && sha256sum -- "${names[@]}") |
		awk '{ print $2, $1 "  -" }' | sha256sum | cut -c1-16
}

# shstk_rootfs_disk DIR: the bpftrace root filesystem DIR
# (scripts/build/rootfs.sh) as an EROFS disk image beside it, DIR.erofs, made
# again when the directory was rebuilt since.  Every emulator attaches it
# read-only, as a disk (QEMU's virtio-blk, Bochs's IDE), not as a 9p share:
# a guest with a share mounted cannot be saved, and make trace starts from a
# snapshot taken once bpftrace has attached.  Uncompressed and without
# extended attributes, the EROFS the kernels are configured for (why EROFS:
# config/kernel/common.config).  Padded to whole cylinders of 16 heads x 63
# sectors, the geometry Bochs gives it.
# Under a lock: make test's two lanes may trace at once (not IMAGE.lock,
# the file Bochs locks an image with).
shstk_rootfs_disk() {
	local dir=$1 img=$1.erofs cyl=$((16 * 63 * 512)) bytes lock rc=0
	exec {lock}>"$dir.disk-lock"
	flock "$lock"
	if ! [ "$img" -nt "$dir/.shstk-rootfs" ]; then
		shstk_msg "making the root filesystem disk image $img"
		rm -f "$img.new"
		if shstk_tb mkfs.erofs --quiet -b4096 -x -1 -L shstk-rootfs "$img.new" "$dir" >"$img.log" 2>&1; then
			bytes=$(stat -c %s "$img.new")
			truncate -s $(((bytes + cyl - 1) / cyl * cyl)) "$img.new"
			mv "$img.new" "$img"
		else
			shstk_msg "mkfs.erofs failed; see $img.log"
			rc=1
		fi
	fi
	exec {lock}>&-
	[ "$rc" -eq 0 ] && echo "$img"
}

# make test's list of the builds it found current once (kernels, the
# project's QEMU), by their output: scripts/test.sh names a file for it in
# SHSTK_CHECKED_BUILDS.  Within one make test the trees do not change, and
# a look at them is git on the kernel tree's tens of thousands of files;
# outside make test every run looks.  A build script asks
# shstk_build_checked OUTPUT before it looks, and says shstk_build_current
# OUTPUT once OUTPUT is current.
shstk_build_checked() {
	[ -n "${SHSTK_CHECKED_BUILDS:-}" ] && [ -e "$1" ] &&
		grep -qxF -- "$1" "$SHSTK_CHECKED_BUILDS" 2>/dev/null
}
#   shstk_build_checked OUTPUT; shstk_build_current OUTPUT
shstk_build_current() {
	[ -z "${SHSTK_CHECKED_BUILDS:-}" ] || echo "$1" >>"$SHSTK_CHECKED_BUILDS"
}

# Commit the unpacked tree DIR as the pristine base the series apply to
# (tag shstk-base).  No automatic gc: the commit's tens of thousands of
# loose objects would start a "git gc --auto" in the background, minutes of
# both CPUs spent packing them beside the first build, and nothing here
# needs them packed.   shstk_git_commit_pristine DIR MESSAGE
shstk_git_commit_pristine() {
	git -C "$1" init -q
	git -C "$1" config gc.auto 0
	# By force: Debian's kernel tree has a .gitignore that ignores
	# everything.
	git -C "$1" add -A -f .
	git -C "$1" -c user.name=shstk-lab -c user.email=shstk-lab@localhost commit -q -m "$2"
	git -C "$1" tag shstk-base
}

# The directory holding the stamps of the kernel tree TREE (.shstk-series,
# .shstk-edits, .shstk-kernel-version, .shstk-series-name: written by
# build/kernel-source.sh): the tree itself, or the cache for KSRC, which
# is never written to.   shstk_tree_stamps TREE
shstk_tree_stamps() {
	if [ -n "$SHSTK_KSRC" ] && [ "$1" -ef "$SHSTK_KSRC" ]; then
		echo "$SHSTK_KSRC_STAMPS"
	else
		echo "$1"
	fi
}

# Whether the kernel tree this run builds can serve ARCH: it has the
# arch's shadow stack option (config/arches.ini kernel_shstk_option).
# Asked of KSRC only: the project's own tree serves every arch of the
# table.  Prints the reason when it cannot.   shstk_tree_serves ARCH
shstk_tree_serves() {
	local fact opt since karch
	[ -n "$SHSTK_KSRC" ] || return 0
	shstk_arch_fact_to fact "$1" kernel_shstk_option
	shstk_arch_fact_to karch "$1" kernel_arch
	opt=${fact%% *} since=${fact#"$opt"}
	grep -qsE "^[[:space:]]*config[[:space:]]+$opt\b" "$SHSTK_KSRC"/arch/"$karch"/Kconfig* && return 0
	echo "KSRC=$SHSTK_KSRC has no CONFIG_$opt in arch/$karch/Kconfig (the $1 user shadow stack${since:+, Linux$since or later})"
	return 1
}

# A worktree DIR of the repository REPO at its pristine base (tag
# shstk-base), made if missing.   shstk_base_worktree REPO DIR
shstk_base_worktree() {
	if [ ! -d "$2" ]; then
		git -C "$1" worktree prune
		git -C "$1" worktree add -q --detach "$2" shstk-base
	fi
}

# Apply PATCHDIR's series with git am on a fresh worktree WORKTREE of the
# pristine tree SRC (tag shstk-base), made if missing; a patch that does not
# apply is named, with the files it failed on, as not applying to WHAT.
#   shstk_git_am_series SRC WORKTREE PATCHDIR WHAT
shstk_git_am_series() {
	local src=$1 am=$2 dir=$3 what=$4 p n=0 total files log=$2.am.log
	shstk_base_worktree "$src" "$am"
	git -C "$am" am --abort >/dev/null 2>&1 || true
	git -C "$am" reset -q --hard shstk-base
	git -C "$am" clean -qfd
	total=$(shstk_series_list "$dir/series" | wc -l)
	while read -r p; do
		n=$((n + 1))
		if ! git -C "$am" -c user.name=shstk-lab -c user.email=shstk-lab@localhost \
			am -q --keep-cr "$dir/$p" >"$log" 2>&1; then
			cat "$log" >&2
			git -C "$am" am --abort >/dev/null 2>&1 || true
			# "error: patch failed: FILE:LINE", "error: FILE: does not exist in index"
			files=$(sed -nE 's/^error: patch failed: (.*):[0-9]+$/\1/p; s/^error: (.*): (does not exist|already exists) in .*/\1/p' \
				"$log" | sort -u | tr '\n' ' ')
			shstk_die "patch $n/$total ($p) does not apply to $what${files:+ (in ${files% })}"
		fi
	done < <(shstk_series_list "$dir/series")
	shstk_msg "applied $n patches"
}

# scripts/build/guest.sh for this arch, against the series' kernel headers
# and tree whatever kernel this run boots.   shstk_build_guest ARGS...
shstk_build_guest() {
	SHSTK_BASELINE='' SHSTK_KCONFIG_VARIANT='' "$SHSTK_TOP/scripts/build/guest.sh" "$ARCH" "$@"
}

# TOKEN_MISSING: why the guest programs cannot pass a token to this arch's
# kernel (its headers have none: a developer's tree without the series),
# or empty; as scripts/build/guest.sh left it beside the programs.
#   shstk_token_vars
shstk_token_vars() {
	local f=$GUEST_DIR/token-missing
	[ -f "$f" ] || shstk_die "no $f: scripts/build/guest.sh has not built $ARCH's guest programs"
	# shellcheck disable=SC2034  # read by the scripts that call this
	TOKEN_MISSING=$(<"$f")
}

# The guest image a post-boot snapshot boots (guest.sh --snapshot-base)
# that goes with IMAGE: the one guest.sh made with IMAGE while it is still
# the one there (its key, kept beside IMAGE, against the base's own), else
# one made now.   shstk_guest_snapshot_base IMAGE
shstk_guest_snapshot_base() {
	local base=${1%/*}/snapshot-base.cpio.gz want have
	if { read -r want <"$1.snapshot-base" && read -r have <"$base.key"; } 2>/dev/null &&
		[ "$want" = "$have" ] && [ -f "$base" ]; then
		echo "$base"
		return 0
	fi
	shstk_build_guest --snapshot-base
}

# A user's PROG must be a static executable for $ARCH (after shstk_arch_vars):
# checked before any long step, so a wrong one is named at once.
#   shstk_prog_check PROG
shstk_prog_check() {
	local why
	[ -f "$1" ] || shstk_die "PROG=$1 does not exist"
	why=$(shstk_py "$SHSTK_TOP/scripts/build/elfcheck.py" "$1" "$ARCH" 2>&1) || shstk_die "$why"
}

# A build whose pipeline (make or ninja first, then what shows its
# progress) ended with STATUSES, not all 0: a tool that a HUP, INT or TERM
# ended (the run being stopped), or that ended with its own INTERRUPTED
# status, is said to have stopped; anything else (a compiler's error, a
# crash, the OOM killer) is a failure, shown by the last lines of its LOG.
#   shstk_build_failed "STATUSES" LOG WHAT [INTERRUPTED]
shstk_build_failed() {
	local tool=${1%% *}
	case "$tool" in
	129 | 130 | 143 | "${4:--}") shstk_die "$3 stopped (status $tool: a Ctrl-C or TERM)" ;;
	esac
	tail -n 30 "$2" >&2
	shstk_die "$3 failed (full log: $2)"
}

# make in the kernel tree for the current arch (after shstk_arch_vars), out of
# tree, with the table's compiler for the target and the host's for the
# programs the build runs.
#   shstk_kmake MAKE-ARGS...
# shellcheck disable=SC2153  # KARCH, ARCH_CC: set by shstk_arch_vars
shstk_kmake() {
	shstk_tb make -C "$SHSTK_SRC" O="$KBUILD_DIR" ARCH="$KARCH" \
		CROSS_COMPILE="$CROSS_COMPILE" CC="$ARCH_CC" HOSTCC="$SHSTK_HOST_CC" "$@"
}
