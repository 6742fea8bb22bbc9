# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# What every shstk-lab script sources first: where the cache and the
# outputs live, how messages and errors look, the arch table, the toolbox's
# tools, and the child processes a signal must stop.  The layers' own
# helpers are in build.sh (the build layer) and vm.sh (the VM layer), which
# scripts source after this one as they need them.  Sourced, never run.

# Kept from the parent when it names this file's repository: a process
# less at every script's start.
if [ -z "${SHSTK_TOP:-}" ] || ! [ "$SHSTK_TOP/scripts/lib/core.sh" -ef "${BASH_SOURCE[0]}" ]; then
	case ${BASH_SOURCE[0]} in
	*/*) SHSTK_TOP=$(cd "${BASH_SOURCE[0]%/*}/../.." && pwd) ;;
	*) SHSTK_TOP=$(cd ../.. && pwd) ;;
	esac
fi
# Everything big (toolbox, kernel trees, builds, images) lives outside the
# repository, so a fresh clone and an old cache work together.
SHSTK_CACHE=${SHSTK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shstk-lab}
# The toolbox's stamp: what its base package set's list was when it was
# installed (scripts/tools/toolbox.sh writes it and the other sets' stamps
# beside it; builds that use its tools read them).
SHSTK_TOOLBOX_STAMP=$SHSTK_CACHE/toolbox/root/.shstk-toolbox
SHSTK_OUT=${SHSTK_OUT:-$SHSTK_TOP/out}
# Debian package that provides the kernel source; the exact version used is
# recorded with every build (see scripts/build/kernel-source.sh).
SHSTK_KERNEL_PKG=${SHSTK_KERNEL_PKG:-linux-source-7.3}
SHSTK_KERNEL_SUITE=${SHSTK_KERNEL_SUITE:-trixie-backports}
# SHSTK_BASELINE=1 builds and boots the pristine kernel, without the series,
# for A/B comparisons (make run BASELINE=1).  Its tree and builds are apart.
SHSTK_BASELINE=${SHSTK_BASELINE:-}
# A name for the things a path given by the user owns: PREFIX, the
# path's last part less SUFFIX, and a hash of the whole path, in
# characters a file name may hold.   _shstk_path_tag PATH PREFIX SUFFIX
_shstk_path_tag() {
	local base=${1##*/} tag
	tag=$2${base%"$3"}-$(printf '%s' "$1" | sha256sum | cut -c1-8)
	echo "${tag//[^A-Za-z0-9._-]/_}"
}

# SHSTK_SERIES (make SERIES=) names another version of the series than
# patches/: a folder of patches or mails, or an mbox.  Its tree, builds,
# guest programs and outputs are apart from the default's, all named by
# SHSTK_SERIES_TAG: the folder's name and a hash of its full path.
SHSTK_SERIES=${SHSTK_SERIES:-}
if [ -z "$SHSTK_SERIES" ]; then
	SHSTK_SERIES_TAG=
elif [ "${SHSTK_SERIES_TAG_OF:-}" != "$SHSTK_SERIES" ]; then
	[ -e "$SHSTK_SERIES" ] || { printf 'error: SERIES=%s does not exist\n' "$SHSTK_SERIES" >&2; exit 1; }
	SHSTK_SERIES=$(realpath -- "$SHSTK_SERIES")
	SHSTK_SERIES_TAG=$(_shstk_path_tag "$SHSTK_SERIES" "" .mbox)
	SHSTK_SERIES_TAG_OF=$SHSTK_SERIES
fi
# SHSTK_KSRC (make KSRC=) names a developer's own kernel git tree, used as
# it is, at its HEAD with its uncommitted changes, and never written to:
# its builds, stamps and installed headers are in the cache, apart from
# the default tree's and named by SHSTK_KSRC_TAG ("ksrc-", the folder's
# name and a hash of its full path).  With SERIES, the series is applied
# onto a clone of it in the cache.
SHSTK_KSRC=${SHSTK_KSRC:-}
if [ -z "$SHSTK_KSRC" ]; then
	SHSTK_KSRC_TAG=
elif [ "${SHSTK_KSRC_TAG_OF:-}" != "$SHSTK_KSRC" ]; then
	[ -d "$SHSTK_KSRC" ] || { printf 'error: KSRC=%s is not a directory\n' "$SHSTK_KSRC" >&2; exit 1; }
	SHSTK_KSRC=$(realpath -- "$SHSTK_KSRC")
	SHSTK_KSRC_TAG=$(_shstk_path_tag "$SHSTK_KSRC" ksrc- "")
	SHSTK_KSRC_TAG_OF=$SHSTK_KSRC
fi
# The kernel git repository (Debian's source, committed pristine and
# tagged shstk-base), which is also the tree with patches/ applied.
SHSTK_KERNEL_REPO=$SHSTK_CACHE/src/linux
# The repository the series is applied in: Debian's, or for KSRC with
# SERIES a clone of KSRC (build/kernel-source.sh ksrc_repo).
SHSTK_BASE_REPO=$SHSTK_KERNEL_REPO${SHSTK_SERIES:+${SHSTK_KSRC_TAG:+-$SHSTK_KSRC_TAG}}
# What every name of this tree's own things (builds, guest programs,
# outputs) ends in: "-<KSRC's tag>", "-<SERIES's tag>", both, or nothing.
SHSTK_TREE_SUFFIX=${SHSTK_KSRC_TAG:+-$SHSTK_KSRC_TAG}${SHSTK_SERIES_TAG:+-$SHSTK_SERIES_TAG}
# The series folder git am applies: patches/, or SERIES as
# scripts/build/series.py lays it out in the cache.
SHSTK_SERIES_DIR=$SHSTK_TOP/patches
[ -z "$SHSTK_SERIES_TAG" ] || SHSTK_SERIES_DIR=$SHSTK_CACHE/src/series-$SHSTK_SERIES_TAG
# The tree with this run's series: the repository, a worktree of it for
# SERIES, KSRC itself, or a clone of KSRC with SERIES applied.
SHSTK_PATCHED_SRC=$SHSTK_KERNEL_REPO$SHSTK_TREE_SUFFIX
[ -z "$SHSTK_KSRC" ] || [ -n "$SHSTK_SERIES" ] || SHSTK_PATCHED_SRC=$SHSTK_KSRC
# Where KSRC's stamps are (build/kernel-source.sh writes a tree's stamps in
# it, and KSRC is not ours): see build.sh shstk_tree_stamps.
SHSTK_KSRC_STAMPS=$SHSTK_KERNEL_REPO$SHSTK_TREE_SUFFIX.stamps
# A tree's .shstk-edits when it has no local edits: the hash of an empty
# diff (build/kernel-source.sh stamp_tree).
# shellcheck disable=SC2034  # used by the scripts that source this file
SHSTK_NO_EDITS=e3b0c44298fc1c14
# The scratch worktree git am applies the series in.
SHSTK_AM_SRC=$SHSTK_KERNEL_REPO$SHSTK_TREE_SUFFIX-am
# The tree this run builds: the series' one, or the pristine one for
# BASELINE.
SHSTK_SRC=$SHSTK_PATCHED_SRC
[ -z "$SHSTK_BASELINE" ] || SHSTK_SRC=$SHSTK_KERNEL_REPO-base

export SHSTK_TOP SHSTK_CACHE SHSTK_OUT SHSTK_KERNEL_PKG SHSTK_KERNEL_SUITE SHSTK_BASELINE \
	SHSTK_SERIES SHSTK_SERIES_TAG SHSTK_SERIES_TAG_OF SHSTK_SERIES_DIR \
	SHSTK_KSRC SHSTK_KSRC_TAG SHSTK_KSRC_TAG_OF SHSTK_TREE_SUFFIX SHSTK_KERNEL_REPO SHSTK_BASE_REPO \
	SHSTK_PATCHED_SRC SHSTK_KSRC_STAMPS SHSTK_AM_SRC SHSTK_SRC

# Messages name their script by its place under scripts/ ("vm/boot.sh").
case "$0" in
"$SHSTK_TOP"/scripts/*) _shstk_prog=${0#"$SHSTK_TOP/scripts/"} ;;
*)
	_shstk_prog=$(realpath -m --relative-to="$SHSTK_TOP/scripts" -- "$0")
	[[ $_shstk_prog != ../* ]] || _shstk_prog=${0##*/}
	;;
esac

# Messages on stderr, each named by its script: progress, a warning, and
# the reason a script stops (then it exits 1).
#   shstk_msg TEXT...; shstk_warn TEXT...; shstk_die TEXT...
shstk_msg()  { printf '[%s] %s\n' "$_shstk_prog" "$*" >&2; }
shstk_warn() { printf '[%s] warning: %s\n' "$_shstk_prog" "$*" >&2; }
shstk_die()  { _shstk_stopped "$*"; exit 1; }

# A VM step that cannot check anything here ends as one skip that says why,
# in the form make test counts (checks/summary.py).   shstk_skip_step STEP WHY
shstk_skip_step() {
	echo "$ARCH   SKIP  make $1  # SKIP $2"
	echo "$1 $ARCH: 0 passed, 0 failed, 1 skipped"
	exit 0
}

# _shstk_stopped REASON: say why this script stops, on stderr and, when
# the script is the shell a caller asked about (not one of its subshells),
# in SHSTK_STATUS_FILE, where scripts/each-arch.sh finds it.
_shstk_stopped() {
	printf '[%s] error: %s\n' "$_shstk_prog" "$1" >&2
	[ -z "${SHSTK_STATUS_FILE:-}" ] || [ "$BASH_SUBSHELL" -ne 0 ] ||
		printf '%s: %s\n' "$_shstk_prog" "$1" >>"$SHSTK_STATUS_FILE" 2>/dev/null || true
}

# No script stops without saying why.  Under set -e a failing command ends
# the script, and one whose message went to /dev/null (or into a $(...))
# would end it without a word.  This ERR trap, which set -E hands on to
# functions and subshells, names the file, the line, the functions it was
# called from and the command, once: in the script's own shell, where set
# -e is about to end it.  A subshell's failure is named by the command that
# ran it; a failure that a condition (if, ||, &&) handles runs no trap.
#   _shstk_failed STATUS PIPESTATUS COMMAND LINE
# shellcheck disable=SC2317  # called by the trap
_shstk_failed() {
	local rc=$1 statuses=$2 cmd=$3 line=$4 i where from='' file
	[[ $- == *e* ]] && [ "$BASH_SUBSHELL" -eq 0 ] || return 0
	file=${BASH_SOURCE[1]:-$0}
	where=$(_shstk_where "$file"):$line
	for ((i = 1; i < ${#FUNCNAME[@]} - 1; i++)); do
		from+=", in ${FUNCNAME[i]}() called from $(_shstk_where "${BASH_SOURCE[i + 1]}"):${BASH_LINENO[i]}"
	done
	case "$cmd" in
	return*)
		# BASH_COMMAND is the function's own return: the call is
		# the line's text.
		cmd=$(sed -n "${line}{s/^[[:space:]]*//;p}" "$file" 2>/dev/null) || cmd=''
		cmd="'${cmd:-a function call}' returned $rc"
		;;
	*)
		cmd="'$cmd'"
		[[ $statuses != *' '* ]] || cmd="the pipeline ending in $cmd (its statuses: $statuses)"
		cmd+=" failed with status $rc"
		;;
	esac
	[ -z "$_shstk_step" ] || from+=", in the step \"$_shstk_step\" after $(($(date +%s) - _shstk_step_t0)) s"
	_shstk_stopped "$where: $cmd$from"
}
# A source file as messages name it: relative to the repository.
_shstk_where() { printf '%s' "${1#"$SHSTK_TOP"/}"; }
set -E
trap '_shstk_failed "$?" "${PIPESTATUS[*]}" "$BASH_COMMAND" "$LINENO"' ERR

# What the harness needs of the host, checked by every entry point before
# it downloads or builds anything (once: the scripts it starts skip it):
# the host's own tools, and root, which the toolbox's debootstrap and
# chroot need unless every tool comes from the host (scripts/tools/tb;
# the bpftrace root filesystem's debootstrap needs root either way).
#   shstk_host_check
shstk_host_check() {
	local t lacking=()
	[ -z "${SHSTK_HOST_CHECKED:-}" ] || return 0
	for t in git:git python3:python3 flock:util-linux unshare:util-linux dpkg-deb:dpkg \
		apt-get:apt tar:tar xz:xz-utils gzip:gzip pgrep:procps pkill:procps; do
		command -v "${t%%:*}" >/dev/null || lacking+=("${t%%:*} (package ${t#*:})")
	done
	if [ "${#lacking[@]}" -gt 0 ]; then
		printf -v t '%s, ' "${lacking[@]}"
		shstk_die "the host lacks ${t%, }: apt-get install those packages"
	fi
	if [ "$EUID" -ne 0 ] && [ "$("$SHSTK_TOP/scripts/tools/tb" --which)" = toolbox ]; then
		shstk_die "shstk-lab needs root: it makes its toolbox with debootstrap and runs its tools" \
			"in a chroot (SHSTK_TOOLBOX=no uses the host's tools, if new enough: scripts/tools/tb --help)"
	fi
	export SHSTK_HOST_CHECKED=1
}

# Run a long step with a start and end line, so the user sees progress and
# how long each step took.  The command runs outside any condition, so that
# set -e stops at its first failure, which the ERR trap names with the step.
# Never call shstk_step itself in a condition: that would switch set -e off
# in it.
#   shstk_step WHAT CMD ARGS...
shstk_step() {
	local what=$1 t0
	shift
	t0=$(date +%s)
	shstk_msg "$what ..."
	_shstk_step=$what _shstk_step_t0=$t0
	"$@"
	_shstk_step=''
	shstk_msg "$what: done in $(($(date +%s) - t0)) s"
}
_shstk_step=''
_shstk_step_t0=0

# Seconds since T0 (an $EPOCHREALTIME), with one decimal ("took 3.2"), or
# PLACES of them.
#   shstk_elapsed T0 [PLACES]
shstk_elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" -v p="${2:-1}" 'BEGIN { printf "%." p "f\n", b - a }'; }

# Hold an exclusive lock on FILE until the script ends (the processes it
# starts inherit it), first saying "waiting for WHAT" when another has it.
#   shstk_lock_or_wait FILE WHAT
shstk_lock_or_wait() {
	local fd
	exec {fd}>"$1"
	if ! flock -n "$fd"; then
		shstk_msg "waiting for $2"
		# Polled: a TERM trap waits for a foreground child to end,
		# and a blocking flock ends only when the other run does.
		until flock -n "$fd"; do sleep 0.2; done
	fi
}

# VAR=the stamp FILE holds (its one line), which WRITER, an earlier build
# step, leaves; a missing one ends the script naming both.
#   shstk_read_stamp VAR FILE WRITER
shstk_read_stamp() {
	local line
	{ IFS= read -r line <"$2"; } 2>/dev/null || shstk_die "$2 is missing: $3 leaves it, and has not run (or failed)"
	printf -v "$1" '%s' "$line"
}

# Hold DIR, the output directory this run writes, until the script ends:
# a second run that would write the same one (two make runs in one
# checkout, make run beside make test) waits for it, and says so.  The
# lock is a file beside DIR, which a run may empty or remove.
#   shstk_lock_out DIR
shstk_lock_out() {
	mkdir -p "$(dirname "$1")"
	shstk_lock_or_wait "$1.lock" "another run that writes $1 to end (it holds $1.lock)"
}

# The architecture table: every per-arch fact, for shell and Python alike
# (config/arches.py reads it too).  Its keys are described at its top.
SHSTK_ARCH_TABLE=$SHSTK_TOP/config/arches.ini
# The compiler of the host programs: the toolbox has it, the QEMU and
# Bochs builds use it, and so do the programs a kernel build runs on the build machine, whatever the target.
# shellcheck disable=SC2034  # used by the scripts that source this file
SHSTK_HOST_CC=gcc-14
# shellcheck disable=SC2034
SHSTK_HOST_CXX=g++-14

# The supported architectures of the table, in its order; with --all, also
# the ones in progress (status: usable with ARCH= only).
#   shstk_arch_names [--all]
shstk_arch_names() {
	local a status
	[ -r "$SHSTK_ARCH_TABLE" ] || shstk_die "$SHSTK_ARCH_TABLE is missing"
	[ "$SHSTK_FACTS_FROM" = "$SHSTK_ARCH_TABLE" ] || shstk_load_arch_facts
	for a in ${SHSTK_FACTS[" arches"]}; do
		[ "${1:-}" = --all ] || { shstk_arch_fact_to status "$a" status && [ "$status" = supported ]; } || continue
		echo "$a"
	done
}

# Every arch's Debian architecture, the host's (amd64) first.
#   shstk_deb_arches
shstk_deb_arches() {
	local a
	{
		echo amd64
		for a in $(shstk_arch_names --all); do
			shstk_arch_fact "$a" deb_arch
		done
	} | awk '!seen[$0]++'
}

# The table, read once per shell into SHSTK_FACTS["ARCH KEY"], because
# scripts ask it dozens of times, mostly from $(...) subshells, which
# inherit the array.  Read again if SHSTK_ARCH_TABLE names another table
# (the harness's tests do that).  The first script to read it hands it on
# to the scripts it starts, quoted in the environment (SHSTK_FACTS_QUOTED,
# for the table SHSTK_FACTS_TABLE), since an eval is cheaper than an awk
# and a loop at every script's start.
declare -gA SHSTK_FACTS=()
SHSTK_FACTS_FROM=
#   shstk_load_arch_facts
shstk_load_arch_facts() {
	local k v
	SHSTK_FACTS=()
	SHSTK_FACTS_FROM=$SHSTK_ARCH_TABLE
	if [ "${SHSTK_FACTS_TABLE:-}" = "$SHSTK_ARCH_TABLE" ] && [ -n "${SHSTK_FACTS_QUOTED:-}" ]; then
		eval "SHSTK_FACTS=($SHSTK_FACTS_QUOTED)"
		return 0
	fi
	SHSTK_FACTS_QUOTED=
	# The arches in the table's order, as a fact of its own ("" ARCHES).
	SHSTK_FACTS[" arches"]=
	while IFS=$'\x1f' read -r k v; do
		SHSTK_FACTS[$k]=$v
		SHSTK_FACTS_QUOTED+="[${k@Q}]=${v@Q} "
		[[ " ${SHSTK_FACTS[" arches"]} " == *" ${k%% *} "* ]] || SHSTK_FACTS[" arches"]+=" ${k%% *}"
	done < <(awk '
		/^\[/ { sec = substr($0, 2, length($0) - 2); next }
		sec != "" && $2 == "=" && !seen[sec " " $1]++ {
			key = $1; sub(/^[^=]*=[ \t]*/, ""); printf "%s %s\x1f%s\n", sec, key, $0
		}' "$SHSTK_ARCH_TABLE")
	k=" arches"
	SHSTK_FACTS_QUOTED+="[${k@Q}]=${SHSTK_FACTS[$k]@Q}"
	SHSTK_FACTS_TABLE=$SHSTK_ARCH_TABLE
	export SHSTK_FACTS_TABLE SHSTK_FACTS_QUOTED
}
shstk_load_arch_facts

# One fact about an architecture from the table; dies if the table lacks it.
#   shstk_arch_fact ARCH KEY
shstk_arch_fact() {
	local fact
	shstk_arch_fact_to fact "$1" "$2"
	echo "$fact"
}

# VAR=the fact KEY about ARCH, in this shell: no $(...) subshell (a process
# each, and scripts ask dozens); a missing one ends the script, as shstk_die
# does.  No locals: VAR may be the caller's.
#   shstk_arch_fact_to VAR ARCH KEY
shstk_arch_fact_to() {
	[ "$SHSTK_FACTS_FROM" = "$SHSTK_ARCH_TABLE" ] || shstk_load_arch_facts
	[ -n "${SHSTK_FACTS["$2 $3"]+set}" ] || shstk_die "config/arches.ini has no $3 for $2"
	printf -v "$1" '%s' "${SHSTK_FACTS["$2 $3"]}"
}

# VAR=the canonical architecture name of NAME, a name or an alias in the
# table (the host's by default), in this shell.
#   shstk_arch_resolve VAR [NAME]
shstk_arch_resolve() {
	local want=${2:-} a
	[ -n "$want" ] || want=$(uname -m)
	[ "$SHSTK_FACTS_FROM" = "$SHSTK_ARCH_TABLE" ] || shstk_load_arch_facts
	for a in ${SHSTK_FACTS[" arches"]}; do
		if [ "$want" = "$a" ] || [[ " ${SHSTK_FACTS["$a aliases"]-} " == *" $want "* ]]; then
			printf -v "$1" '%s' "$a"
			return 0
		fi
	done
	shstk_die "unknown ARCH '$want' (use $(shstk_arch_names | paste -sd' ' | sed 's/ / or /g'))"
}

# VAR=the fact KEY about $ARCH; a missing one ends the script, as
# shstk_die does.
#   shstk_arch_set VAR KEY
# shellcheck disable=SC2153  # ARCH: set by shstk_arch_vars
shstk_arch_set() { shstk_arch_fact_to "$1" "$ARCH" "$2"; }

# The facts about ARCH every script uses, as variables; the rest through
# shstk_arch_fact.
#   shstk_arch_vars [ARCH]
# shellcheck disable=SC2034  # used by the scripts that source this file
shstk_arch_vars() {
	shstk_arch_resolve ARCH "${1:-}"
	shstk_arch_set KARCH kernel_arch
	shstk_arch_set DEB_ARCH deb_arch
	shstk_arch_set CROSS_COMPILE cross_prefix
	# The target compiler, by its full name (the unversioned one may be
	# another version).
	shstk_arch_set ARCH_CC cc
	ARCH_CC=$CROSS_COMPILE$ARCH_CC
	shstk_arch_set KIMAGE kernel_image
	shstk_arch_set QEMU_KIMAGE qemu_kernel_image
	shstk_arch_set KTARGET kernel_target
	shstk_arch_set KCONSOLE console
	shstk_arch_set KAPPEND kernel_append
	local tree=$SHSTK_TREE_SUFFIX
	[ -z "$SHSTK_BASELINE" ] || tree=-base
	KBUILD_DIR=$SHSTK_CACHE/build/$ARCH${SHSTK_KCONFIG_VARIANT:+-$SHSTK_KCONFIG_VARIANT}$tree
	# make bench times a cold build in a scratch directory of its own.
	KBUILD_DIR=${SHSTK_BUILD_DIR:-$KBUILD_DIR}
	ARCH_OUT=$SHSTK_OUT/$ARCH$SHSTK_TREE_SUFFIX${SHSTK_BASELINE:+-base}
	# The guest programs and images (scripts/build/guest.sh), built
	# against the series' tree whatever kernel boots.
	GUEST_DIR=$SHSTK_CACHE/guest/$ARCH$SHSTK_TREE_SUFFIX
}

# Whether runs may be restored from post-boot snapshots (docs/boot.md):
# not with SHSTK_SNAPSHOT=0 (SHSTK_BOCHS_SNAPSHOT=0, its older name, for
# Bochs).  The build layer makes a snapshot's base image only then, and
# each VM backend says which of its runs it restores.
#   shstk_snapshot_wanted
shstk_snapshot_wanted() {
	[ "${SHSTK_SNAPSHOT:-1}" != 0 ]
}

# The hash of what a git tree's HEAD does not hold: the diff of its
# tracked files and the contents of its untracked, not ignored, ones (under
# PATHSPEC... only, if given), read without writing the tree's index: it
# may be a developer's own (KSRC), in use meanwhile.
#   shstk_tree_edits_hash TREE [PATHSPEC...]
shstk_tree_edits_hash() {
	local tree=$1
	shift
	{
		GIT_OPTIONAL_LOCKS=0 git -C "$tree" -c diff.autoRefreshIndex=false diff HEAD --binary -- "$@"
		GIT_OPTIONAL_LOCKS=0 git -C "$tree" ls-files -z --others --exclude-standard -- "$@" |
			(cd "$tree" && xargs -0r sha256sum --)
	} | sha256sum | cut -c1-16
}

# Run a tool from the toolbox (or the host, when it is new enough).  Every
# script calls tools through this, so none of them knows which one it got.
#   shstk_tb TOOL ARGS...
shstk_tb() { "$SHSTK_TOP/scripts/tools/tb" "$@"; }

# VAR=the stamp of the toolbox's package set SET (scripts/tools/toolbox.sh):
# .shstk-toolbox for base, .shstk-set-arch-x86_64 for arch:x86_64.
#   shstk_toolbox_set_stamp_to VAR SET
shstk_toolbox_set_stamp_to() {
	if [ "$2" = base ]; then
		printf -v "$1" '%s' "$SHSTK_TOOLBOX_STAMP"
	else
		printf -v "$1" '%s/.shstk-set-%s' "${SHSTK_TOOLBOX_STAMP%/*}" "${2//:/-}"
	fi
}

# Whether a stamp of the sets SET... is older than what the sets' lists are
# made of (toolbox.sh and the arch table): only then is toolbox.sh asked to
# compare them with their lists, which spares a process at every tool's
# start (tb asks for the base set).
#   shstk_toolbox_unchecked SET...
shstk_toolbox_unchecked() {
	local s f
	for s in "$@"; do
		shstk_toolbox_set_stamp_to f "$s"
		[ "$f" -nt "$SHSTK_TOP/scripts/tools/toolbox.sh" ] && [ "$f" -nt "$SHSTK_ARCH_TABLE" ] || return 0
	done
	return 1
}

# The toolbox's package sets a step needs besides the base one that every
# tool's start asks for, installed now if missing; never for the host's
# tools (tb --which).
#   shstk_toolbox_need SET...
shstk_toolbox_need() {
	! shstk_toolbox_unchecked "$@" || [ "$(shstk_tb --which)" = host ] ||
		"$SHSTK_TOP/scripts/tools/toolbox.sh" "$@"
}

# VAR=the stamps of the toolbox's sets an ARCH build or boot uses (the
# base and the arch's own), for the keys of what is built or saved with
# them.  Read with the shell's own read: no process at a restored boot.
#   shstk_toolbox_stamps_to VAR ARCH
shstk_toolbox_stamps_to() {
	local base='' own='' f
	shstk_toolbox_set_stamp_to f "arch:$2"
	read -r base 2>/dev/null <"$SHSTK_TOOLBOX_STAMP" || true
	read -r own 2>/dev/null <"$f" || true
	printf -v "$1" '%s %s' "$base" "$own"
}

# The host's Python for the harness's own scripts (checks/, the builders'
# helpers): Debian's /usr/bin/python3, which .ci/run installs, not the first
# python3 on PATH, because a version manager's shim there makes every call
# many times slower and a VM step makes several.  SHSTK_PYTHON overrides.
if [ -z "${SHSTK_PYTHON:-}" ]; then
	SHSTK_PYTHON=python3
	[ ! -x /usr/bin/python3 ] || SHSTK_PYTHON=/usr/bin/python3
fi
#   shstk_py ARGS...
shstk_py() { "$SHSTK_PYTHON" "$@"; }

# Children that a TERM or INT to this script must stop: a VM boot, gdb, the
# VMs of make fuzz, a build beside another.  Bash waits for a foreground
# child before it runs any trap, and a killed parent would leave its
# children behind, so long children run in the background, recorded here,
# and the traps below pass a signal on to them: a TERM to each child and to
# every process under it, since a script runs no trap of its own while it
# waits for the make or compiler in its foreground.  They always get TERM,
# even for a Ctrl-C: a non-interactive shell starts its background
# children with SIGINT ignored, and a shell cannot trap a signal that was
# ignored when it started, so an INT would never reach vm/boot.sh's trap.
_shstk_children=()
# $! when the last child was started: a signal before "CMD &" must not
# take a process substitution (each-arch.sh's tee) for that child.
_shstk_bg_before=

# Whether this script started with SIGINT ignored (a background child of
# another script).  Bash sets an INT trap there all the same, and taking it
# off again ("trap - INT") leaves INT at its default: the next Ctrl-C then
# kills the script outright, its own INT trap unrun and its EXIT trap cut
# short by the parent's TERM, which can leave its VM running.  Its INT
# traps are for a script run in the foreground only: shstk_trap_int CMD (or -).
_shstk_int_ignored=
[ "$(trap -p INT)" != "trap -- '' SIGINT" ] || _shstk_int_ignored=1
#   shstk_trap_int CMD|-
shstk_trap_int() {
	# shellcheck disable=SC2064  # CMD is the trap's text, given as such
	[ -n "$_shstk_int_ignored" ] || trap "$1" INT
}

# The traps of a script with children: stop them, say why, exit.
#   _shstk_stop_children STATUS WHY
# shellcheck disable=SC2317  # called by the traps
_shstk_stop_children() {
	local status=$1 p started=
	local -A seen=()
	# Ignored, not reset: a second signal must neither kill this script
	# before its children are gone nor run this again; nor may a message
	# to a terminal or pipe that is gone (EPIPE, EIO).
	trap '' TERM INT HUP PIPE
	# $! as well: a signal may come between "CMD &" and its recording.
	[ "${!:-}" = "$_shstk_bg_before" ] || started=$!
	# Each child is signalled once: a second TERM would reach it in its
	# own EXIT trap, and its TERM trap's exit would cut that cleanup short.
	for p in "${_shstk_children[@]}" ${started:+"$started"}; do
		[ -z "${seen[$p]:-}" ] || continue
		seen[$p]=1
		_shstk_term_child "$p"
	done
	shstk_msg "$2; stopping what it started" || true
	for p in "${!seen[@]}"; do shstk_wait_pid_gone "$p" "$BASHPID" || true; done
	exit "$status"
}

# Whether PID is still a running child of this shell: bash collects an
# ended child at once, and the system may give its pid to another process
# long before this shell waits for it.
_shstk_own_child() { _shstk_pid_alive "$1" "$BASHPID"; }

# TERM one child, if it still runs, and every process under it (taken
# before the child ends and its children go to init).
_shstk_term_child() {
	local under=()
	_shstk_own_child "$1" || return 0
	# Not $(...): in a trap that interrupted a wait, an assignment from one
	# failed now and then with the wait's status (143), and set -e ended
	# the trap before it had stopped anything.
	mapfile -t under < <(_shstk_descendants "$1")
	kill -TERM "$1" "${under[@]}" 2>/dev/null || true
}

# The pids of every process under PID, one a line.
#   _shstk_descendants PID
_shstk_descendants() {
	ps -A -o pid=,ppid= | awk -v top="$1" '
		{ under[$2] = under[$2] " " $1 }
		END {
			n = split(under[top], q, " ")
			for (i = 1; i <= n; i++) {
				print q[i]
				m = split(under[q[i]], more, " ")
				for (j = 1; j <= m; j++)
					q[++n] = more[j]
			}
		}'
}

# Run CMD ARGS... every 0.1 s until it fails (what it looks for is gone);
# non-zero if it still succeeds after SECONDS.
#   shstk_poll_until_gone SECONDS CMD ARGS...
shstk_poll_until_gone() {
	local n=$(($1 * 10)) _
	shift
	for _ in $(seq "$n"); do
		"$@" || return 0
		sleep 0.1
	done
	return 1
}

# Whether PID still runs: it exists and is not a zombie.  Read from /proc,
# never with wait: in a trap (SIGCHLD held back), bash 5.2 can collect a
# child while waiting for a foreground command and leave it "Running" in
# its job table, and a later "wait PID" then blocks until some other child
# ends, which would keep a stopped VM step waiting for its whole guest run
# (tests/vm_harness.py).  A zombie is collected at the latest when the
# script exits.
# With PARENT, also whether PARENT is still its parent.
#   _shstk_pid_alive PID [PARENT]
_shstk_pid_alive() {
	local stat state ppid
	# 2>/dev/null first: it must be in place when the < fails.
	read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
	# "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses.
	read -r state ppid _ <<<"${stat##*) }"
	case "$state" in Z | X) return 1 ;; esac
	[ -z "${2:-}" ] || [ "$ppid" = "$2" ]
}

# Wait until the signalled PID is gone (at most 15 s: a VM's own cleanup
# takes a few), or, with PARENT, is no longer PARENT's child.  Neither wait
# nor kill -0: see _shstk_pid_alive.
#   shstk_wait_pid_gone PID [PARENT]
shstk_wait_pid_gone() {
	shstk_poll_until_gone 15 _shstk_pid_alive "$@" || shstk_warn "pid $1 still running 15 s after its TERM"
}

# For an EXIT trap: TERM whatever children this script still has (a gdb in
# the foreground, which a TERM to the script does not reach) and wait until
# they are gone.  gdb acts on a TERM only at its next check, which can be
# seconds away while it loads a kernel's symbols: a script that exits at
# once leaves it running.
#   shstk_stop_own_children
shstk_stop_own_children() {
	pkill -TERM -P $$ 2>/dev/null || true
	shstk_poll_until_gone 15 pgrep -P $$ >/dev/null ||
		shstk_warn "still running 15 s after their TERM: $(pgrep -a -P $$ | tr '\n' ';')"
}

# Exit with the shell's status for TERM (143) or INT (130), saying which,
# once: further TERMs and INTs are ignored from then on, so that one coming
# while the EXIT trap stops a VM cannot end that trap half way (a parent
# and a user may both signal; an EXIT trap cut short leaves the VM).
#   shstk_exit_on_signals
shstk_exit_on_signals() {
	trap '_shstk_signalled 143 "stopped (TERM)"' TERM
	shstk_trap_int '_shstk_signalled 130 interrupted'
}

# shellcheck disable=SC2317  # called by the traps
_shstk_signalled() {
	trap '' TERM INT HUP PIPE
	shstk_msg "$2" || true
	exit "$1"
}

# Start CMD ARGS... in the background as a child to stop on TERM or INT;
# its pid is CHILD_PID.  Redirections given to shstk_start_child apply to CMD.
# CMD is a program, never a shell function: a function runs in a forked
# subshell, whose death on TERM would leave the program it started.
#   shstk_start_child CMD ARGS...
shstk_start_child() {
	# The script's own traps, put back by shstk_wait_children.
	[ "${#_shstk_children[@]}" -gt 0 ] || _shstk_saved_traps=$(trap -p TERM INT HUP)
	_shstk_bg_before=${!:-}
	trap '_shstk_stop_children 143 "stopped (TERM)"' TERM
	trap '_shstk_stop_children 129 "stopped (HUP)"' HUP
	shstk_trap_int '_shstk_stop_children 130 interrupted'
	"$@" &
	CHILD_PID=$!
	_shstk_children+=("$CHILD_PID")
}

# Stop one child that shstk_start_child started, wait until it is
# gone, and forget it (an error path that leaves the others running).
#   shstk_stop_child PID
shstk_stop_child() {
	_shstk_term_child "$1"
	shstk_wait_pid_gone "$1" "$BASHPID"
	shstk_wait_child "$1" || true
}

# Wait for every child shstk_start_child started; returns the last non-zero
# status among them (0 if all succeeded).  The script's own TERM and INT
# traps, if it had any, are back afterwards.
#   shstk_wait_children
shstk_wait_children() {
	local p st rc=0
	for p in "${_shstk_children[@]}"; do
		st=0
		wait "$p" || st=$?
		[ "$st" -eq 0 ] || rc=$st
	done
	_shstk_children=()
	trap - TERM HUP
	shstk_trap_int -
	eval "${_shstk_saved_traps:-}"
	return "$rc"
}

# Wait for one child that shstk_start_child started, and forget it, while the
# others go on (and are still stopped on TERM or INT); returns its status.
# The script's own traps are back once it has no children left.
#   shstk_wait_child PID
shstk_wait_child() {
	local p st=0 kept=()
	wait "$1" || st=$?
	for p in "${_shstk_children[@]}"; do
		[ "$p" = "$1" ] || kept+=("$p")
	done
	_shstk_children=("${kept[@]}")
	if [ "${#kept[@]}" -eq 0 ]; then
		trap - TERM HUP
		shstk_trap_int -
		eval "${_shstk_saved_traps:-}"
	fi
	return "$st"
}

# Run one long child (a VM boot, a build) so that a TERM or INT to this
# script stops it too, and wait for it alone: other children (a build
# beside it) go on.   shstk_run_child CMD ARGS...   (returns its status)
shstk_run_child() {
	shstk_start_child "$@"
	shstk_wait_child "$CHILD_PID"
}
