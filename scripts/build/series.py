#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Lay out another version of the series (make SERIES=) for git am.

    series.py SERIES OUTDIR OVERLAYS

SERIES is a folder of patches or mails (in the order of its `series` file
if it has one, else by their "[PATCH vN M/T]" numbers, else by name), or
one mbox of several mails, as `b4 am` writes it.  Cover letters (0/T) are
left out.

When OVERLAYS/vN/series exists for the series' version vN, it says what
the harness applies instead of the posted patches alone: each line is a
file of that folder (or of patches/, as ../NAME), or "@M", the posted
patch M as it is.  That is how the project supplies what an archive lacks
and adapts a posting to Debian's kernel, each change a patch of its own.

Writes OUTDIR/series and the patches it names, and prints one line that
says what the series is made of.
"""

import email.parser
import email.policy
import mailbox
import os
import re
import shutil
import sys

# The bracket of a patch mail's subject, "[PATCH v23 4/8]", "[PATCH RFT v5 04/07]".
BRACKET = re.compile(r"\[([^\]]*\bPATCH\b[^\]]*)\]", re.IGNORECASE)
SUFFIXES = (".patch", ".mbox", ".mbx", ".eml", ".diff")


def fail(why):
    sys.stderr.write(f"[build/series.py] error: {why}\n")
    sys.exit(1)


def subject_of(raw):
    msg = email.parser.BytesHeaderParser(policy=email.policy.default).parsebytes(raw)
    return " ".join(str(msg.get("Subject", "")).split())


def numbering(subject):
    """(version, number, total) of "[PATCH vN M/T]", each None if absent."""
    m = BRACKET.search(subject)
    if not m:
        return None, None, None
    version = re.search(r"\bv(\d+)\b", m.group(1), re.IGNORECASE)
    place = re.search(r"\b(\d+)/(\d+)\b", m.group(1))
    return (int(version.group(1)) if version else None,
            int(place.group(1)) if place else None,
            int(place.group(2)) if place else None)


def messages(path):
    """The mails of one file: several for an mbox, else the file itself."""
    with open(path, "rb") as f:
        head = f.read(5)
    if head != b"From ":
        with open(path, "rb") as f:
            return [f.read()]
    box = mailbox.mbox(path, create=False)
    try:
        return [box.get_bytes(key) for key in box.keys()]
    finally:
        box.close()


def posted_patches(series):
    """[(label, raw bytes, subject)] of SERIES, in order, without covers."""
    if os.path.isdir(series):
        listed = os.path.join(series, "series")
        if os.path.isfile(listed):
            with open(listed) as f:
                names = [ln.split("#")[0].strip() for ln in f]
            names = [n for n in names if n]
        else:
            names = sorted(n for n in os.listdir(series) if n.endswith(SUFFIXES))
        files = [os.path.join(series, n) for n in names]
    else:
        files = [series]
    found = []
    for path in files:
        if not os.path.isfile(path):
            fail(f"{series}: no file {path}")
        for i, raw in enumerate(messages(path)):
            label = os.path.basename(path) + (f"#{i + 1}" if i else "")
            found.append((label, raw, subject_of(raw)))
    found = [p for p in found if numbering(p[2])[1] != 0]
    if not found:
        fail(f"{series} holds no patches ({', '.join(SUFFIXES)} files, or an mbox)")
    numbers = [numbering(p[2])[1] for p in found]
    if not os.path.isfile(os.path.join(series, "series")) and None not in numbers:
        if len(set(numbers)) != len(numbers):
            fail(f"{series} has two patches numbered alike: "
                 f"{sorted(n for n in numbers if numbers.count(n) > 1)}")
        found.sort(key=lambda p: numbering(p[2])[1])
    return found


def version_of(found):
    versions = {numbering(p[2])[0] for p in found}
    return versions.pop() if len(versions) == 1 else None


def plan(found, overlays):
    """[(name, raw)] to apply, the words that describe them, and the
    overlay's cover letter text (or None)."""
    version = version_of(found)
    by_number = {numbering(p[2])[1]: p for p in found}
    folder = os.path.join(overlays, f"v{version}") if version else None
    total = numbering(found[0][2])[2] or len(found)
    what = f"v{version}" if version else "no version in the subjects"
    if not folder or not os.path.isfile(os.path.join(folder, "series")):
        return ([(p[0], p[1]) for p in found],
                f"{what}: {len(found)} patches as posted", None)
    out, used = [], set()
    with open(os.path.join(folder, "series")) as f:
        lines = [ln.split("#")[0].strip() for ln in f]
    rel = os.path.relpath(folder, os.path.dirname(overlays))
    for line in (ln for ln in lines if ln):
        if line.startswith("@"):
            n = int(line[1:]) if line[1:].isdigit() else None
            if n not in by_number:
                fail(f"{rel}/series: {line}: the series has no patch {line[1:]}"
                     f" (it has {sorted(k for k in by_number if k is not None)})")
            used.add(n)
            out.append((by_number[n][0], by_number[n][1]))
        else:
            path = os.path.normpath(os.path.join(folder, line))
            if not os.path.isfile(path):
                fail(f"{rel}/series names {line}, which does not exist")
            with open(path, "rb") as f:
                out.append((os.path.basename(path), f.read()))
    posted = len(used)
    dropped = sorted(set(n for n in by_number if n is not None) - used)
    words = f"{what}: {posted} of {total} patches as posted"
    words += f", {len(out) - posted} more from {rel}/series"
    if dropped:
        words += "; in place of " + ", ".join(f"{n}/{total}" for n in dropped)
    absent = sorted(set(range(1, total + 1)) - set(by_number))
    if absent:
        words += "; not in the series: " + ", ".join(f"{n}/{total}" for n in absent)
    cover = os.path.join(folder, "cover-letter")
    return out, words, cover if os.path.isfile(cover) else None


def main():
    if len(sys.argv) != 4:
        fail("usage: series.py SERIES OUTDIR OVERLAYS")
    series, outdir, overlays = sys.argv[1:]
    todo, words, cover = plan(posted_patches(series), overlays)
    # Made aside, and put in place only if it differs: readers of OUTDIR
    # (make check-series, make cover-letter) never see it half written.
    new = outdir + ".new"
    shutil.rmtree(new, ignore_errors=True)
    os.makedirs(new)
    names = []
    for i, (label, raw) in enumerate(todo, 1):
        title = BRACKET.sub("", subject_of(raw)).strip() or os.path.splitext(label)[0]
        stem = re.sub(r"[^A-Za-z0-9_]+", "-", title).strip("-")[:52]
        name = f"{i:04d}-{stem}.patch"
        with open(os.path.join(new, name), "wb") as f:
            f.write(raw)
        names.append(name)
    with open(os.path.join(new, "series"), "w") as f:
        f.write(f"# {series}: {words}\n")
        f.writelines(n + "\n" for n in names)
    if cover:
        shutil.copyfile(cover, os.path.join(new, "cover-letter"))
    if same_tree(new, outdir):
        shutil.rmtree(new)
    else:
        old = outdir + ".old"
        shutil.rmtree(old, ignore_errors=True)
        if os.path.isdir(outdir):
            os.rename(outdir, old)
        os.rename(new, outdir)
        shutil.rmtree(old, ignore_errors=True)
    print(f"{words}; {len(names)} patches in all")


def same_tree(a, b):
    """Do folders @a and @b hold the same files with the same contents?"""
    if not os.path.isdir(b) or sorted(os.listdir(a)) != sorted(os.listdir(b)):
        return False
    for name in os.listdir(a):
        with open(os.path.join(a, name), "rb") as f, open(os.path.join(b, name), "rb") as g:
            if f.read() != g.read():
                return False
    return True


if __name__ == "__main__":
    main()
