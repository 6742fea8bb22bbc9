#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make trace: boot the guest with the bpftrace root filesystem, attach
# trace/ scripts, run the token scenario (or PROG) under them, bring the
# logs back and check each against what the guest program saw.
#
#   scripts/trace.sh ARCH [EMU] [SCRIPTS] [PROG]
#
# SCRIPTS: trace/ script names, comma-separated, all attached in one boot
# (default: every script in trace/).  Leaves out/<arch>[-bochs]/trace/
# (console.log, guest.out) and out/<arch>[-bochs]/trace-SCRIPT.log each.
set -euo pipefail
# shellcheck source=lib/entry.sh
. "$(dirname "$0")/lib/entry.sh"

shstk_host_check
shstk_arch_vars "${1:-}"
shstk_emu_vars "${2:-}"
# The trace suite is the one program the scripts trace, and check.
[ -z "${SHSTK_TESTS:-}" ] ||
	shstk_die "TESTS= goes with make run and make fuzz: make trace runs shstk_gdb alone, which every trace/ script watches (SCRIPT= chooses the scripts)"
scripts=()
if [ -n "${3:-}" ]; then
	IFS=, read -ra scripts <<<"$3"
else
	# Every script, not its arch parts (NAME.ARCH.bt).
	for bt in "$SHSTK_TOP"/trace/*.bt; do
		name=$(basename "$bt" .bt)
		[[ $name == *.* ]] || scripts+=("$name")
	done
fi
[ "${#scripts[@]}" -gt 0 ] || shstk_die "no trace scripts given"
OUT=$EMU_OUT/trace
for i in "${!scripts[@]}"; do
	scripts[i]=$(basename "${scripts[i]}" .bt)
	[ -f "$SHSTK_TOP/trace/${scripts[i]}.bt" ] || shstk_die "no trace script trace/${scripts[i]}.bt"
done
list=$(IFS=,; echo "${scripts[*]}")
PROG=${4:-}
# Checked before any long step (a kernel build takes minutes).
[ -z "$PROG" ] || shstk_prog_check "$PROG"
# The trace-SCRIPT.log files beside it are this run's too.
shstk_lock_out "$OUT"
for s in "${scripts[@]}"; do
	rm -f "$EMU_OUT/trace-$s.log"
done

if [ -n "$PROG" ]; then
	shstk_build_boot --prog "$PROG"
else
	shstk_build_boot trace
fi
shstk_token_vars
[ -z "$TOKEN_MISSING" ] || shstk_skip_step trace "$TOKEN_MISSING"
rootfs=$("$SHSTK_TOP/scripts/build/rootfs.sh" "$ARCH" --disk)
# The scripts trace the first program the guest runs (guest.sh writes its
# list beside the image), by its command name, which the kernel cuts to 15
# characters.
comm=$(awk 'NF { print $2; exit }' "${GUEST_IMAGE%.cpio.gz}.tests")
comm=${comm##*/}
comm=${comm:0:15}
[ -n "$comm" ] || shstk_die "the guest image $GUEST_IMAGE runs no program to trace"
t0=$EPOCHREALTIME
shstk_msg "booting $ARCH with bpftrace (${scripts[*]}) on $comm; logs in $OUT"
export SHSTK_ROOTFS=$rootfs
shstk_run_child "$SHSTK_TOP/scripts/vm/boot.sh" "$ARCH" "$EMU" "$KBUILD_DIR/$KIMAGE" "$GUEST_IMAGE" \
	"$OUT" "${SHSTK_TRACE_TIMEOUT:-300}" "shstk.trace=$list shstk.trace_comm=$comm" || true
rc=0
PYTHONPATH=$SHSTK_TOP shstk_py -m checks.trace "$OUT" "$ARCH" "$list" "$EMU_OUT" \
	"${PROG:+user}" || rc=$?
shstk_msg "trace $ARCH: $(shstk_elapsed "$t0") s"
exit "$rc"
