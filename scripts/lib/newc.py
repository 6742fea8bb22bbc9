# SPDX-License-Identifier: GPL-2.0
"""The newc cpio format the kernel unpacks an initramfs from: a writer, for
the guest images (scripts/build/mkinitramfs.py), and a reader, for the
payload of a run restored from a snapshot (scripts/vm/cpiodiff.py)."""

S_IFDIR, S_IFREG, S_IFLNK, S_IFCHR, S_IFBLK = 0o040000, 0o100000, 0o120000, 0o020000, 0o060000


class Writer:
    def __init__(self, out):
        self.out = out
        self.ino = 1

    def entry(self, name, mode, data=b"", rdev=(0, 0), uid=0, gid=0):
        name_b = name.lstrip("/").encode() + b"\0"
        fields = [self.ino, mode, uid, gid, 2 if mode & S_IFDIR else 1, 0, len(data),
                  0, 0, rdev[0], rdev[1], len(name_b), 0]
        self.ino += 1
        hdr = b"070701" + b"".join(b"%08X" % f for f in fields)
        self.out.write(hdr + name_b)
        self.out.write(b"\0" * (-(len(hdr) + len(name_b)) % 4))
        self.out.write(data)
        self.out.write(b"\0" * (-len(data) % 4))

    def trailer(self):
        self.ino = 0
        self.entry("TRAILER!!!", 0)


HEADER = 110


def entries(data):
    """(name, header fields, body) of each entry of a newc archive, the
    trailer left out."""
    pos = 0
    while pos + HEADER <= len(data):
        hdr = data[pos:pos + HEADER]
        if hdr[:6] != b"070701":
            raise ValueError(f"not a newc cpio archive at offset {pos}")
        fields = [int(hdr[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
        namesize, filesize = fields[11], fields[6]
        name = data[pos + HEADER:pos + HEADER + namesize - 1].decode()
        pos = (pos + HEADER + namesize + 3) & ~3
        body = data[pos:pos + filesize]
        pos = (pos + filesize + 3) & ~3
        if name == "TRAILER!!!":
            return
        yield name, fields, body
    raise ValueError("no cpio trailer")
