# SPDX-License-Identifier: GPL-2.0
"""What TESTS= chooses: programs of a suite of guest/tests.list, and cases
inside the ones declared with CASE() (guest/lib/case.h).

    python3 -m spec.selection ARCH SUITE TESTS

TESTS is a list of words, comma- or space-separated, each a name or a glob
(* and ? only, which fnmatch(3) in the guest and Python match alike):

    PROG         the programs it matches, whole; a word that matches no
                 program but cases of the suite's programs is CASE alone
    PROG:CASE    the cases CASE matches inside the programs PROG matches,
                 as kselftest's runner takes collection:test

Prints on its first line "some" and the value of init's shstk.tests= word:
the programs chosen, by name, each alone or with the case globs it runs
("some shstk_clone3:*token*,clone3"); "whole" when that is every case of
every program (no word then), "none" when nothing of this arch's suite is;
then lines for the user: what runs and what is left out.  A word that
matches nothing on any arch is an error (exit 1), which names it and the
names there are.  The guest reports what it left out (SHSTK-LAB
NOT-SELECTED, and its programs' "# SKIP not selected by TESTS=" points),
which checks/ reports.
"""
import fnmatch
import os
import re
import sys
from dataclasses import dataclass, field

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS_LIST = os.path.join(TOP, "guest", "tests.list")
# The reason the guest gives for a program or case TESTS= left out; the
# checks tell a partial run by it.
NOT_SELECTED = "not selected by TESTS="
# What a word may hold: test names' characters, and the globs both sides
# match the same way (no brackets, no escapes).
NAME_CHARS = re.compile(r"^[A-Za-z0-9_./*?-]+$")
CASE_RE = re.compile(r"^CASE\((\w+)", re.M)


class SelectionError(ValueError):
    pass


@dataclass
class Program:
    name: str
    arches: tuple
    suites: tuple
    source: str
    # Its CASE() names, in the source's order, for a program of ours that
    # declares them (and takes -t); None for any other.
    cases: list | None = field(default=None)


def case_names(source, top=TOP):
    """The CASE() names of a guest:FILE.c source, or None (a selftest, or a
    program without cases)."""
    if not source.startswith("guest:"):
        return None
    try:
        with open(os.path.join(top, "guest", source[len("guest:"):])) as f:
            found = CASE_RE.findall(f.read())
    except OSError:
        return None
    return found or None


def programs(path=TESTS_LIST, top=TOP):
    """Every program of guest/tests.list, in its order."""
    found = []
    with open(path) as f:
        for line in f:
            words = line.split()
            if not words or words[0].startswith("#") or len(words) < 5:
                continue
            name, arches, suites, _, source = words[:5]
            found.append(Program(name, tuple(arches.split(",")), tuple(suites.split(",")),
                                 source, case_names(source, top)))
    return found


def suite_here(arch, suite, progs=None):
    """The programs of @suite on @arch, in the list's order."""
    progs = programs() if progs is None else progs
    return [p for p in progs if suite in p.suites and arch in p.arches]


def split(text):
    """The words of TESTS: comma- or space-separated."""
    return [w for w in re.split(r"[,\s]+", text) if w]


def matches(glob, name):
    return fnmatch.fnmatchcase(name, glob)


def parse_word(word):
    """(program glob, case glob or None) of one word."""
    parts = word.split(":")
    if len(parts) > 2 or not all(parts):
        raise SelectionError(f"TESTS=: '{word}' is not PROG, PROG:CASE or CASE")
    for part in parts:
        if not NAME_CHARS.match(part):
            bad = "".join(sorted(set(re.sub(r"[A-Za-z0-9_./*?-]", "", part))))
            raise SelectionError(f"TESTS=: '{word}' holds {bad!r}, which no test name has "
                                 f"(names, and globs of * and ?, only)")
    return parts[0], parts[1] if len(parts) == 2 else None


def word_hits(prog_glob, case_glob, progs):
    """{program name: None (whole) or case glob} of what one word picks
    among @progs; a bare word that names no program picks cases."""
    if case_glob is None:
        whole = {p.name: None for p in progs if matches(prog_glob, p.name)}
        if whole:
            return whole
        prog_glob, case_glob = "*", prog_glob
    return {p.name: case_glob for p in progs
            if matches(prog_glob, p.name) and p.cases
            and any(matches(case_glob, c) for c in p.cases)}


def no_match(word, prog_glob, case_glob, suite, in_suite):
    """The first line of the error for a word that matches nothing."""
    named = [p for p in in_suite if matches(prog_glob, p.name)]
    if case_glob is not None and named:
        with_cases = [p.name for p in named if p.cases]
        if not with_cases:
            return (f"TESTS=: '{word}': {', '.join(p.name for p in named)} has no cases "
                    f"TESTS= can choose (only programs declared with CASE() do)")
        return f"TESTS=: '{word}': no case of {', '.join(with_cases)} matches '{case_glob}'"
    return (f"TESTS=: '{word}' matches no program of the {suite} suite on any arch, "
            f"and no case of one")


def valid_names(arch, suite, here, everywhere):
    """The names a word may use here, for an error message."""
    lines = [f"  programs of the {suite} suite on {arch}: {' '.join(p.name for p in here)}"]
    for p in here:
        if p.cases:
            lines.append(f"  cases of {p.name} ({p.name}:CASE, or CASE alone): {' '.join(p.cases)}")
    others = [p.name for p in everywhere if p not in here]
    if others:
        lines.append(f"  on other arches only: {' '.join(others)}")
    return "\n".join(lines)


def resolve(text, arch, suite, progs=None):
    """(chosen, notes) for TESTS=@text on @arch's @suite: chosen is
    {program: None (whole) or [case globs]} in the suite's order, empty when
    nothing of this arch is chosen; notes say what was left out."""
    progs = programs() if progs is None else progs
    in_suite = [p for p in progs if suite in p.suites]
    here = suite_here(arch, suite, progs)
    words = split(text)
    if not words:
        raise SelectionError("TESTS= is empty: name programs or cases, or leave it unset "
                             "for the whole suite")
    picked = {}
    notes = []
    for word in words:
        prog_glob, case_glob = parse_word(word)
        hits = word_hits(prog_glob, case_glob, here)
        if not hits:
            elsewhere = word_hits(prog_glob, case_glob, in_suite)
            if elsewhere:
                where = sorted({a for p in in_suite if p.name in elsewhere for a in p.arches})
                notes.append(f"TESTS=: '{word}' is not in {arch}'s {suite} suite "
                             f"(only on {', '.join(where)})")
                continue
            raise SelectionError(no_match(word, prog_glob, case_glob, suite, in_suite) + "\n"
                                 + valid_names(arch, suite, here, in_suite))
        for name, glob in hits.items():
            if glob is None:
                picked[name] = None
            elif picked.get(name, []) is not None and glob not in picked.setdefault(name, []):
                picked[name].append(glob)
    chosen = {}
    for p in here:
        if p.name not in picked:
            continue
        globs = picked[p.name]
        # Every case chosen is the whole program, run as it always is.
        if globs is not None and all(any(matches(g, c) for g in globs) for c in p.cases):
            globs = None
        chosen[p.name] = globs
    if chosen:
        notes.append(summary(text, here, chosen))
    return chosen, notes


def selected_cases(prog, globs):
    return [c for c in prog.cases if any(matches(g, c) for g in globs)]


def summary(text, here, chosen):
    """One line: what TESTS= runs here and what it leaves out."""
    runs = []
    for p in here:
        if p.name in chosen:
            globs = chosen[p.name]
            runs.append(p.name if globs is None else
                        f"{p.name} ({len(selected_cases(p, globs))} of {len(p.cases)} cases)")
    left = [p.name for p in here if p.name not in chosen]
    line = f"TESTS={text.strip()}: runs {', '.join(runs)}"
    return line + (f"; leaves out {', '.join(left)}" if left else "")


def guest_word(chosen):
    """The value of init's shstk.tests= word (guest/init.sh): each program
    by name, once alone or once per case glob."""
    items = []
    for name, globs in chosen.items():
        items += [name] if globs is None else [f"{name}:{g}" for g in globs]
    return ",".join(items)


def parse_guest_word(word):
    """{program: None or [case globs]} from a shstk.tests= value."""
    chosen = {}
    for item in filter(None, (word or "").split(",")):
        name, _, glob = item.partition(":")
        if not glob:
            chosen[name] = None
        elif chosen.get(name, []) is not None:
            chosen.setdefault(name, []).append(glob)
    return chosen


def main(argv):
    if len(argv) != 4:
        print("usage: python3 -m spec.selection ARCH SUITE TESTS", file=sys.stderr)
        return 2
    try:
        chosen, notes = resolve(argv[3], argv[1], argv[2])
    except (SelectionError, OSError) as e:
        print(e)
        return 1
    if not chosen:
        print("none")
    elif len(chosen) == len(suite_here(argv[1], argv[2])) and \
            all(g is None for g in chosen.values()):
        print("whole")
    else:
        print(f"some {guest_word(chosen)}")
    for note in notes:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
