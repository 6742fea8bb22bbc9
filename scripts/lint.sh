#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Static checks of the repository's own code: shellcheck on every shell
# script, a byte-compile of every Python file and pyflakes on them (unused
# imports and names, undefined names), and the kernel's checkpatch.pl (file
# mode) on the guest C code, and QEMU's checkpatch.pl on patches/qemu/ (the
# kernel series has its own step, check-series.sh).  KTAP, one line per
# check.
set -euo pipefail
# shellcheck source=lib/entry.sh
. "$(dirname "$0")/lib/entry.sh"
cd "$SHSTK_TOP"

mapfile -t shells < <(git ls-files '*.sh' scripts/tools/tb scripts/tools/apt-local .ci/run | sort -u)
mapfile -t pys < <(git ls-files '*.py')
mapfile -t cs < <(git ls-files 'guest/*.c' 'guest/*.h')
checkpatch=$SHSTK_PATCHED_SRC/scripts/checkpatch.pl
qemu_checkpatch=$SHSTK_CACHE/qemu/src/scripts/checkpatch.pl
mapfile -t qemu_patches < <(for d in qemu qemu-master; do shstk_series_list "patches/$d/series" | sed "s|^|patches/$d/|"; done)

echo "KTAP version 1"
echo "1..5"
rc=0
if ! command -v shellcheck >/dev/null; then
	echo "not ok 1 shellcheck # shellcheck is not installed (apt-get install shellcheck)"
	rc=1
elif out=$(shellcheck -x "${shells[@]}" 2>&1); then
	echo "ok 1 shellcheck (${#shells[@]} scripts)"
else
	printf '%s\n' "$out" | sed 's/^/# /'
	echo "not ok 1 shellcheck"
	rc=1
fi
if out=$(shstk_py -m py_compile "${pys[@]}" 2>&1); then
	echo "ok 2 python3 py_compile (${#pys[@]} files)"
else
	printf '%s\n' "$out" | sed 's/^/# /'
	echo "not ok 2 python3 py_compile"
	rc=1
fi
# Debian's pyflakes3, not pip's: it runs the Python the system has.
if ! command -v pyflakes3 >/dev/null; then
	echo "not ok 3 pyflakes # pyflakes3 is not installed (apt-get install pyflakes3)"
	rc=1
elif out=$(pyflakes3 "${pys[@]}" 2>&1); then
	echo "ok 3 pyflakes (${#pys[@]} files)"
else
	printf '%s\n' "$out" | sed 's/^/# /'
	echo "not ok 3 pyflakes"
	rc=1
fi
if [ ! -x "$checkpatch" ]; then
	echo "ok 4 checkpatch guest C # SKIP no kernel tree yet ($checkpatch)"
# User space, not the kernel: stdint types and plain __attribute__ (there
# are no u64 or __noreturn here), volatile for memory another process writes,
# and kselftest-harness style CHECK() macros that return.
elif out=$("$checkpatch" --no-tree --strict -q --show-types \
	--ignore PREFER_KERNEL_TYPES,PREFER_DEFINED_ATTRIBUTE_MACRO,VOLATILE,MACRO_WITH_FLOW_CONTROL \
	-f "${cs[@]}" 2>&1); then
	echo "ok 4 checkpatch guest C (${#cs[@]} files)"
else
	printf '%s\n' "$out" | sed 's/^/# /'
	if grep -q '^ERROR' <<<"$out"; then
		echo "not ok 4 checkpatch guest C"
		rc=1
	else
		echo "ok 4 checkpatch guest C (warnings above)"
	fi
fi
# QEMU's checkpatch.pl comes with its source, which the first QEMU build
# fetches (scripts/build/qemu.sh).
if [ ! -f "$qemu_checkpatch" ]; then
	echo "ok 5 checkpatch patches/qemu, patches/qemu-master # SKIP no QEMU source yet ($qemu_checkpatch)"
elif out=$(perl "$qemu_checkpatch" -q "${qemu_patches[@]}" 2>&1); then
	echo "ok 5 checkpatch patches/qemu, patches/qemu-master (${#qemu_patches[@]} patches)"
else
	printf '%s\n' "$out" | sed 's/^/# /'
	echo "not ok 5 checkpatch patches/qemu, patches/qemu-master"
	rc=1
fi
exit "$rc"
