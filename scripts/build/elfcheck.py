#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check that a user's PROG can run in the guest: an ELF executable for the
guest's architecture, statically linked (the guest has no libraries).

  elfcheck.py FILE ARCH      exit 0 if fine, else one line saying why
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from config import arches  # noqa: E402

PT_INTERP = 3


def check(path, arch):
    """Return None if @path is a static ELF executable for @arch, else why not."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return f"cannot read: {e.strerror}"
    if data[:4] != b"\x7fELF":
        return "not an ELF file"
    if data[4] != 2 or data[5] != 1:
        return "not a 64-bit little-endian ELF file"
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    try:
        want = arches.get(arch)
    except arches.UnknownArch as e:
        return str(e)
    if e_machine != want.elf_machine:
        try:
            built_for = arches.by_field("elf_machine", e_machine).name
        except arches.UnknownArch:
            built_for = f"machine {e_machine}"
        return f"built for {built_for}, not {want.name}"
    if e_type not in (2, 3):
        return "not an executable"
    e_phoff, = struct.unpack_from("<Q", data, 32)
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 54)
    for i in range(e_phnum):
        off = e_phoff + i * e_phentsize
        if off + 4 > len(data):
            return "truncated program headers"
        p_type, = struct.unpack_from("<I", data, off)
        if p_type == PT_INTERP:
            return "dynamically linked (link it with -static)"
    return None


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: elfcheck.py FILE ARCH")
    why = check(sys.argv[1], sys.argv[2])
    if why:
        sys.exit(f"PROG={sys.argv[1]}: {why}")


if __name__ == "__main__":
    main()
