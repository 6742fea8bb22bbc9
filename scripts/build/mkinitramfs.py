#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write a gzipped newc cpio archive from a gen_init_cpio style list.

Lines (as the kernel's usr/gen_init_cpio takes them):
  dir   NAME MODE UID GID
  file  NAME SOURCE MODE UID GID
  slink NAME TARGET MODE UID GID
  nod   NAME MODE UID GID c|b MAJOR MINOR

No root needed and the output depends only on the list and the files'
contents (every mtime is 0), so an unchanged guest gives an identical image.
That also makes a rebuild avoidable: the image's inputs are hashed into
OUTPUT.key, and an image whose key still matches is left as it is (the
compression is most of the cost, and every VM step asks for its image).
Several LIST OUTPUT pairs make several images.
"""
import gzip
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from newc import S_IFBLK, S_IFCHR, S_IFDIR, S_IFLNK, S_IFREG, Writer  # noqa: E402


def build(spec_lines, out):
    w = Writer(out)
    for lineno, line in enumerate(spec_lines, 1):
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        kind, name = f[0], f[1]
        try:
            if kind == "dir":
                w.entry(name, S_IFDIR | int(f[2], 8), uid=int(f[3]), gid=int(f[4]))
            elif kind == "file":
                with open(f[2], "rb") as src:
                    w.entry(name, S_IFREG | int(f[3], 8), src.read(), uid=int(f[4]), gid=int(f[5]))
            elif kind == "slink":
                w.entry(name, S_IFLNK | int(f[3], 8), f[2].encode(), uid=int(f[4]), gid=int(f[5]))
            elif kind == "nod":
                typ = S_IFCHR if f[5] == "c" else S_IFBLK
                w.entry(name, typ | int(f[2], 8), rdev=(int(f[6]), int(f[7])), uid=int(f[3]), gid=int(f[4]))
            else:
                raise ValueError(f"unknown entry type {kind!r}")
        except (IndexError, ValueError, OSError) as e:
            sys.exit(f"mkinitramfs: line {lineno}: {line.strip()!r}: {e}")
    w.trailer()


def inputs_key(spec_lines):
    """A hash of the list and of every file it names."""
    h = hashlib.sha256()
    for line in spec_lines:
        h.update(line.encode())
        f = line.split()
        if len(f) > 2 and f[0] == "file":
            try:
                with open(f[2], "rb") as src:
                    h.update(hashlib.sha256(src.read()).digest())
            except OSError:
                h.update(b"missing")  # build() says which
    return h.hexdigest()


def make(spec_path, out):
    """OUT from the list at SPEC_PATH, unless OUT.key says it is that already."""
    with open(spec_path) as spec:
        lines = spec.readlines()
    key = inputs_key(lines)
    try:
        with open(out + ".key") as f:
            if f.read().strip() == key and os.path.exists(out):
                return
    except OSError:
        pass
    tmp = f"{out}.{os.getpid()}.tmp"
    with open(tmp, "wb") as raw:
        with gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz:
            build(lines, gz)
    os.replace(tmp, out)
    with open(f"{out}.{os.getpid()}.key", "w") as f:
        f.write(key + "\n")
    os.replace(f"{out}.{os.getpid()}.key", out + ".key")


def main():
    # Several images in one run: guest.sh makes a snapshot base with every
    # image, and a second interpreter would slow every VM step.
    args = sys.argv[1:]
    if not args or len(args) % 2:
        sys.exit("usage: mkinitramfs.py LIST OUTPUT.cpio.gz [LIST OUTPUT.cpio.gz ...]")
    for spec_path, out in zip(args[::2], args[1::2]):
        make(spec_path, out)


if __name__ == "__main__":
    main()
