#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Write the entries of one gzipped newc cpio archive that another lacks.

  cpiodiff.py BASE.cpio.gz IMAGE.cpio.gz OUTPUT.cpio

OUTPUT (not compressed) has every entry of IMAGE that BASE has not, or has
with another mode, owner, device or content, in IMAGE's order.  A run
restored from a snapshot (scripts/lib/vm.sh shstk_snapshot_payload_cpio, for
QEMU and Bochs) has BASE booted and unpacks this over it in the guest,
where each byte costs: busybox, init and the bpftrace scripts are in
both, and only the run's programs need to go.  Not compressed, because
gunzip in an emulated guest costs more than the bytes it saves.
"""
import gzip
import io
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from newc import Writer, entries  # noqa: E402

def same(a, b):
    """Equal as the guest sees them: mode, owner, device, content (inode
    numbers and link counts aside)."""
    (fa, ba), (fb, bb) = a, b
    keep = (1, 2, 3, 9, 10)  # mode, uid, gid, rdevmajor, rdevminor
    return ba == bb and all(fa[i] == fb[i] for i in keep)


def diff(base, image):
    """The newc archive of IMAGE's entries that BASE lacks (both raw),
    written as every guest image is."""
    have = {name: (fields, body) for name, fields, body in entries(base)}
    out = io.BytesIO()
    w = Writer(out)
    for name, fields, body in entries(image):
        if name not in have or not same(have[name], (fields, body)):
            w.entry(name, fields[1], body, rdev=(fields[9], fields[10]), uid=fields[2], gid=fields[3])
    w.trailer()
    return out.getvalue()


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: cpiodiff.py BASE.cpio.gz IMAGE.cpio.gz OUTPUT.cpio")
    try:
        with gzip.open(sys.argv[1]) as f:
            base = f.read()
        with gzip.open(sys.argv[2]) as f:
            image = f.read()
        data = diff(base, image)
    except (OSError, ValueError) as e:
        sys.exit(f"cpiodiff: {e}")
    with open(sys.argv[3], "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
