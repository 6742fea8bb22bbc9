#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot one guest to completion under an emulator, with a hard timeout.
#
#   scripts/vm/boot.sh ARCH EMU KERNEL INITRD OUTDIR TIMEOUT [EXTRA-APPEND]
#
# Writes OUTDIR/console.log (kernel console), OUTDIR/guest.out (the results
# channel) and OUTDIR/vm.json (how the emulator ended and how long it took),
# and before the emulator starts OUTDIR/emulator.cmd (its command line) and
# OUTDIR/emulator.build (what its binary is, vm.json's emu_build to come,
# for whoever follows the results channel meanwhile).
# Exit status: the emulator's, or 124 on timeout.  Nothing is judged here:
# checks/ reads these files.  With GDB_PORT set the emulator waits for gdb.
# Nothing is built here either: what the boot needs comes from the caller
# (scripts/lib/entry.sh shstk_build_boot), in the environment:
#   SHSTK_EMU_BIN, SHSTK_EMU_DESCRIPTION  the project's build of the
#       emulator and what it is, where the backend declares one
#       (EMU_SOURCE_BUILD); SHSTK_EMU_PURPOSE: run, or gdb for a build a
#       gdb attaches to
#   SHSTK_SNAPSHOT_BASE  the guest image a post-boot snapshot boots; not
#       needed with SHSTK_SNAPSHOT=0
#   SHSTK_LIVE_VERDICTS=1  the caller follows the results channel itself
#       and prints each program's start and verdict: this script then
#       leaves those lines to it
set -euo pipefail
# shellcheck source=../lib/core.sh
. "$(dirname "$0")/../lib/core.sh"
# shellcheck source=../lib/vm.sh
. "$SHSTK_TOP/scripts/lib/vm.sh"

shstk_arch_vars "${1:-}"
shstk_emu_vars "${2:-}"
KERNEL=${3:?kernel image}
INITRD=${4:?initramfs}
OUT=${5:?output directory}
TIMEOUT=${6:?timeout in seconds}
APPEND=${7:-}
# An emulator that boots another image beside it checks that one.
[ "$EMU_BOOT_IMAGE" = no ] || [ -f "$KERNEL" ] || shstk_die "no kernel image $KERNEL (make kernel ARCH=$ARCH)"
[ -f "$INITRD" ] || shstk_die "no guest image $INITRD"

# The kernel command line, for every emulator: the arch's console, a panic
# or oops ends the VM at once (the host finds it in console.log), the
# results channel, the arch's own arguments, what this emulator needs, and
# why the guest has no shadow stack if it has none (guest programs put it
# in their SKIP lines).
KERNEL_CMDLINE="console=$KCONSOLE panic=-1 oops=panic loglevel=5 shstk.out=$EMU_RESULTS_DEV"
[ -z "$KAPPEND" ] || KERNEL_CMDLINE+=" $KAPPEND"
[ -z "$EMU_CMDLINE" ] || KERNEL_CMDLINE+=" $EMU_CMDLINE"
[ -z "$EMU_NO_SHSTK_WHY" ] || KERNEL_CMDLINE+=" shstk.why=${EMU_NO_SHSTK_WHY// /_}"
[ -z "${SHSTK_ROOTFS:-}" ] || KERNEL_CMDLINE+=" shstk.rootfs=$EMU_ROOTFS_DEV"
[ -z "$APPEND" ] || KERNEL_CMDLINE+=" $APPEND"

mkdir -p "$OUT"
rm -f "$OUT/console.log" "$OUT/guest.out" "$OUT/vm.json" "$OUT/first-output" "$OUT/emulator.cmd" \
	"$OUT/emulator.build"
: >"$OUT/console.log"
: >"$OUT/guest.out"
follower=''
emu_starting=''
emu_pid=''
emu_reaped=''
emu_exit_seen=''
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	# The follower first (its tail would run until this script ends).
	# No wait here, for it or the emulator: in a trap, bash may already
	# have collected a child without noticing, and a wait for it blocks
	# until another child ends: the emulator, at the end of the guest's
	# whole run (scripts/lib/core.sh, _shstk_pid_alive).
	if [ -n "$follower" ]; then
		{
			pkill -P "$follower" || true
			kill "$follower" || true
		} 2>/dev/null
	fi
	# A signal between the emulator's start and "emu_pid=$!" finds its
	# pid in $! only, as _shstk_stop_children does (unless that is still
	# the follower's: then it did not start).
	if [ -n "$emu_starting" ] && [ -z "$emu_pid" ] && [ "${!:-}" != "$follower" ]; then
		emu_pid=${!:-}
	fi
	# An emulator whose exit timeout reported (its status, not a
	# signal's) left nothing: timeout waits for it.  Otherwise its whole
	# process group goes: timeout makes one of its own, with its pid, for
	# itself and the emulator, so a wrapper killed on the way cannot
	# leave the emulator running, and nothing of another run is touched.
	[ -n "$emu_pid" ] && [ -z "$emu_exit_seen" ] || return 0
	shstk_stop_group ${emu_reaped:+--reaped} "$emu_pid"
}
# Before the boot medium is made: making it may boot a VM (a Bochs
# snapshot), which a TERM must stop too.
trap cleanup EXIT
# INT reaches this script only when a user runs it in the foreground: as a
# background child of another script it starts with SIGINT ignored, and its
# parent passes a Ctrl-C on as TERM (scripts/lib/core.sh, shstk_start_child).
shstk_exit_on_signals

# An emulator may need its boot medium made first (Bochs: an ISO).  Not
# in a condition, which would switch set -e off inside it.
if declare -F emu_prepare >/dev/null; then
	emu_prepare
fi
emu_command
# The command line, as a shell would take it: to run this VM again by hand.
printf '%q ' "${EMU_CMD[@]}" >"$OUT/emulator.cmd"
echo >>"$OUT/emulator.cmd"
printf '%s\n' "${EMU_DESCRIPTION:-}" >"$OUT/emulator.build"

# Follow the results channel and show which guest program is running, and
# the progress lines of long ones (unless SHSTK_LIVE_VERDICTS: the caller
# does).
# tail --pid ends with this script, whatever happens to it.
# The first program's start is also timed (vm.json "first_output").
# Its messages go to a saved copy of stderr, and its own stderr nowhere, so
# the shell's "Terminated" when cleanup stops it never shows.
# -s: with --pid, tail polls rather than waits on inotify, by default once a
# second, so a program's "running" line came up to a second late.
exec {msg_fd}>&2
live=${SHSTK_LIVE_VERDICTS:-}
follow() {
	tail -s 0.02 -n +1 -F --pid=$$ "$OUT/guest.out" 2>/dev/null | while read -r line; do
		line=${line%$'\r'}	# a serial line ends in CR LF
		case "$line" in
		"SHSTK-LAB BEGIN "*)
			[ -f "$OUT/first-output" ] || echo "$EPOCHREALTIME" >"$OUT/first-output"
			[ -n "$live" ] || shstk_msg "guest: running ${line#SHSTK-LAB BEGIN }" 2>&"$msg_fd"
			;;
		"SHSTK-LAB END "*) [ -n "$live" ] || shstk_msg "guest: ${line#SHSTK-LAB END }" 2>&"$msg_fd" ;;
		# A long program's own progress lines (make fuzz).
		"# progress: "*) [ -n "$live" ] || shstk_msg "guest: ${line#\# }" 2>&"$msg_fd" ;;
		esac
	done
}
follow 2>/dev/null &
follower=$!

t0=$EPOCHREALTIME
rc=0
# timeout sends TERM, then KILL 5 s later; its own status is 124 on expiry.
# The tb script itself, not core.sh's shstk_tb function: "FUNCTION &" forks a
# subshell that runs tb as its child, so $! (what cleanup signals) would be
# the subshell, and a TERM to it would leave tb to start the emulator
# anyway.  "SCRIPT &" execs: $! is tb, then timeout, through every exec.
# The host kernel's log so far: an emulator that crashes is named there.
klog_lines=$(dmesg 2>/dev/null | wc -l) || klog_lines=
emu_starting=1
"$SHSTK_TOP/scripts/tools/tb" timeout -k 5 "$TIMEOUT" "${EMU_CMD[@]}" </dev/null >"$OUT/emulator.log" 2>&1 &
emu_pid=$!
wait "$emu_pid" || rc=$?
emu_reaped=1
[ "$rc" -gt 128 ] || emu_exit_seen=1
# Died of a signal (timeout's own expiry is 124): what the host kernel said
# about it (program, address, library) goes to the end of emulator.log,
# which checks/report.py shows with the failure.
if [ "$rc" -gt 128 ] && [ -n "$klog_lines" ]; then
	shstk_msg "the emulator died of signal $((rc - 128)); the host kernel's new lines about it:"
	dmesg 2>/dev/null | tail -n "+$((klog_lines + 1))" | grep -aiE 'segfault|general protection|trap|killed' |
		tail -n 5 | tee -a "$OUT/emulator.log" >&2 || true
fi
t1=$EPOCHREALTIME
sleep 0.05	# let the follower (polling every 0.02 s) print the last lines
first=null
[ ! -s "$OUT/first-output" ] || first=$(awk -v a="$t0" -v b="$(cat "$OUT/first-output")" 'BEGIN { printf "%.2f", b - a }')
# The outcome in the emulator's own terms made plain: "poweroff_exit" is
# the status this emulator gives a guest power-off, so checks/ compares
# "exit" with it and knows no emulator by name; "xstate_format" the XSAVE
# format its x86 CPU makes the kernel choose and "kernel_ibt" whether the
# kernel runs with indirect branch tracking on it, which the guest reports.
# "snapshot": the key of the post-boot snapshot the run was restored from
# (Bochs: EMU_SNAPSHOT), null after a cold boot.
snapshot=null
[ -z "${EMU_SNAPSHOT:-}" ] || snapshot="\"$EMU_SNAPSHOT\""
# "series": what the booted kernel was built from, as the kernel build
# recorded it beside the image (the series' words, and the hash of its
# patches); "local_edits": the tree had uncommitted changes then.
series=unknown series_hash=unknown edits=unknown
if [ -f "$KBUILD_DIR/.shstk-series-info" ]; then
	{ read -r series; read -r series_hash; read -r edits; } <"$KBUILD_DIR/.shstk-series-info"
	[ "$edits" = "$SHSTK_NO_EDITS" ] && edits=false || edits=true
fi
[ "$edits" != unknown ] || edits=null
json_str() { sed 's/\\/\\\\/g; s/"/\\"/g' <<<"$1"; }
printf '{"arch": "%s", "emu": "%s", "emu_build": "%s", "exit": %d, "poweroff_exit": %d, "timeout": %s, "seconds": %.2f, "first_output": %s, "smp": %d, "xstate_format": "%s", "kernel_ibt": "%s", "cmdline": "%s", "snapshot": %s, "series": "%s", "series_hash": "%s", "local_edits": %s}\n' \
	"$ARCH" "$EMU" "${EMU_DESCRIPTION:-}" "$rc" "$EMU_POWEROFF_EXIT" "$([ "$rc" -eq 124 ] && echo true || echo false)" \
	"$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$first" "$EMU_SMP" "${EMU_XSTATE_FORMAT:-}" "${EMU_KERNEL_IBT:-}" \
	"$(json_str "$KERNEL_CMDLINE")" "$snapshot" "$(json_str "$series")" "$(json_str "$series_hash")" "$edits" >"$OUT/vm.json"
[ "$rc" -ne 124 ] || shstk_msg "emulator timed out after $TIMEOUT s; console log: $OUT/console.log"
exit "$rc"
