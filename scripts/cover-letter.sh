#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make cover-letter: the series (patches/, or SERIES) as mails ready for
# git send-email, in out/cover-letter[-<tag>]/: git format-patch
# --cover-letter --base, each patch with the Cc list the tree's
# scripts/get_maintainer.pl gives it, and a cover letter made of
# patches/cover-letter (patches/vN/cover-letter for SERIES version N: the
# project's words and the changelog against v23) and the harness's evidence for exactly this series (checks/evidence.py:
# the results in out/ whose kernel was built from it).  checkpatch --strict
# runs on every patch: an error stops it, a warning is listed with the
# explanation patches/checkpatch-notes gives it, or stops it without one.
#
#   scripts/cover-letter.sh [VERSION]     the version to send as (default 24)
set -euo pipefail
# shellcheck source=lib/entry.sh
. "$(dirname "$0")/lib/entry.sh"
shstk_host_check

version=${1:-}
version=${version:-24}
[[ $version =~ ^[0-9]+$ ]] || shstk_die "the version to send as must be a number, not '$version'"
OUT=$SHSTK_OUT/cover-letter$SHSTK_TREE_SUFFIX
SRC=$SHSTK_PATCHED_SRC
NOTES=$SHSTK_TOP/patches/checkpatch-notes

# Mails of a series applied here; a KSRC tree's own commits are its
# developer's to send (git format-patch there).
[ -z "$SHSTK_KSRC" ] || [ -n "$SHSTK_SERIES" ] ||
	shstk_die "KSRC=$SHSTK_KSRC without SERIES=: no series is applied here to make mails of (git format-patch in your tree)"
"$SHSTK_TOP/scripts/build/kernel-source.sh" >&2
series_hash=$(cat "$SRC/.shstk-series")
if [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no)" ]; then
	shstk_die "$SRC has local edits: they would not be in the mails (commit or format-patch them first)"
fi
shstk_lock_out "$OUT"
rm -rf "$OUT"
mkdir -p "$OUT"

shstk_step "git format-patch (v$version, $(git -C "$SRC" rev-list --count shstk-base..HEAD) patches)" \
	git -C "$SRC" format-patch -q --cover-letter --base=shstk-base --zero-commit \
	--subject-prefix="PATCH v$version" -o "$OUT" shstk-base..HEAD

# Each patch's Cc list, as mail headers, from the tree's MAINTAINERS.
add_cc() {
	local p ccs
	for p in "$OUT"/[0-9]*.patch; do
		[[ $p != */0000-cover-letter.patch ]] || continue
		# Its complaints about commits the tree does not have go to a log.
		ccs=$(cd "$SRC" && perl scripts/get_maintainer.pl --no-rolestats --no-git \
			--no-git-fallback "$p" 2>>"$OUT/get_maintainer.log") ||
			shstk_die "get_maintainer.pl failed on $p (see $OUT/get_maintainer.log)"
		[ -n "$ccs" ] || continue
		awk -v ccs="$ccs" 'BEGIN { n = split(ccs, cc, "\n") }
			!done && /^$/ { for (i = 1; i <= n; i++) print "Cc: " cc[i]; done = 1 }
			{ print }' "$p" >"$p.cc"
		mv "$p.cc" "$p"
	done
}
shstk_step "Cc lists (scripts/get_maintainer.pl)" add_cc

# The cover letter: the subject and body of patches/cover-letter, then the
# evidence, in place of format-patch's placeholders.
fill_cover() {
	local cover=$OUT/0000-cover-letter.patch text evidence rc=0
	# patches/cover-letter, or the one of the SERIES version's overlay,
	# which scripts/build/series.py puts beside the series it lays out.
	text=$SHSTK_SERIES_DIR/cover-letter
	[ -f "$text" ] || shstk_die "no cover letter text for this series ($text): write patches/v<N>/cover-letter for its version"
	evidence=$(PYTHONPATH=$SHSTK_TOP shstk_py -m checks.evidence "$SHSTK_OUT" "$series_hash" \
		"$SHSTK_SERIES_TAG") || rc=$?
	[ "$rc" -le 1 ] || shstk_die "checks/evidence.py failed (exit $rc)"
	[ "$rc" -eq 0 ] || evidence="No run of this series (hash $series_hash) in $SHSTK_OUT yet: make test first."
	{
		sed -n '3,$p' "$text"
		echo
		echo "What the shstk-lab harness saw on this series (hash $series_hash),"
		echo "under emulation; suite and gdb-check counts are passed/failed/skipped,"
		echo "\"-\" where it has not run on it:"
		echo
		printf '  %s\n' "${evidence//$'\n'/$'\n'  }"
		echo
		echo "Applies to Debian's $(cat "$SRC/.shstk-kernel-version"), committed as the"
		echo "base-commit below."
	} >"$OUT/blurb"
	SUBJECT=$(head -n1 "$text") BLURB=$OUT/blurb shstk_py - "$cover" <<-'EOF'
		import os, sys
		path = sys.argv[1]
		with open(path) as f:
		    text = f.read()
		with open(os.environ["BLURB"]) as f:
		    blurb = f.read().rstrip("\n")
		for placeholder, value in (("*** SUBJECT HERE ***", os.environ["SUBJECT"]),
		                           ("*** BLURB HERE ***", blurb)):
		    if placeholder not in text:
		        sys.exit(f"{path}: no '{placeholder}' to fill")
		    text = text.replace(placeholder, value)
		with open(path, "w") as f:
		    f.write(text)
	EOF
	rm -f "$OUT/blurb"
}
shstk_step "cover letter" fill_cover

# checkpatch --strict: errors stop it; every warning or check must have a
# line of patches/checkpatch-notes.
check() {
	local p report finding subject why unexplained=0
	for p in "$OUT"/[0-9]*.patch; do
		[[ $p != */0000-cover-letter.patch ]] || continue
		# checkpatch exits 1 on any finding: the report says which.
		report=$(cd "$SRC" && { perl scripts/checkpatch.pl --strict --show-types -q "$p" 2>&1 || :; })
		if grep -q '^ERROR:' <<<"$report"; then
			printf '%s\n' "$report" >&2
			shstk_die "checkpatch: errors in $(basename "$p")"
		fi
		subject=$(basename "$p" .patch)
		subject=${subject#[0-9][0-9][0-9][0-9]-}
		while read -r finding; do
			[ -n "$finding" ] || continue
			why=$(grep -F "$subject: $finding: " "$NOTES" 2>/dev/null | head -n1 || true)
			if [ -n "$why" ]; then
				shstk_msg "  $(basename "$p"): $finding: ${why#"$subject: $finding: "}"
			else
				shstk_warn "$(basename "$p"): checkpatch $finding, not explained in patches/checkpatch-notes"
				unexplained=$((unexplained + 1))
			fi
		done < <(sed -nE 's/^(WARNING|CHECK):([A-Z_]+):.*/\1:\2/p' <<<"$report" | sort -u)
	done
	[ "$unexplained" -eq 0 ] || shstk_die "$unexplained checkpatch findings without an explanation"
}
shstk_step "checkpatch --strict" check

shstk_msg "the series as mails: $OUT (git send-email $OUT/*.patch)"
