# SPDX-License-Identifier: GPL-2.0
"""A QMP client just big enough to ask QEMU for a dump of the guest.

QEMU listens for QMP on a Unix socket when a backend declares it
(scripts/vm/emulators/qemu.sh, EMU_QMP): one JSON object per line, a
greeting first, then capabilities negotiation, then commands, with events
interleaved that this client skips.  Plain Python: no gdb needed.
"""
import json
import socket
import time


class QMPError(Exception):
    pass


class QMP:
    def __init__(self, path, timeout=120.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.deadline = time.monotonic() + timeout
        self.sock.connect(path)
        self.buf = b""
        greeting = self._read()
        if "QMP" not in greeting:
            raise QMPError(f"not a QMP greeting: {greeting}")
        self.command("qmp_capabilities")

    def _read(self):
        while b"\n" not in self.buf:
            if time.monotonic() > self.deadline:
                raise QMPError("QEMU did not answer in time")
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout as e:
                raise QMPError("QEMU did not answer in time") from e
            except OSError as e:
                raise QMPError(f"QEMU closed the QMP socket ({e})") from e
            if not chunk:
                raise QMPError("QEMU closed the QMP socket")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def command(self, name, **arguments):
        """Run @name; its "return" value, or QMPError with QEMU's error."""
        msg = {"execute": name}
        if arguments:
            msg["arguments"] = arguments
        try:
            self.sock.sendall(json.dumps(msg).encode() + b"\n")
        except OSError as e:
            raise QMPError(f"{name}: QEMU closed the QMP socket ({e})") from e
        while True:
            reply = self._read()
            if "return" in reply:
                return reply["return"]
            if "error" in reply:
                raise QMPError(f"{name}: {reply['error'].get('desc', reply['error'])}")
            # an event: not the answer

    def close(self):
        self.sock.close()


def dump_guest_memory(path, core, timeout=120.0):
    """Write the guest's memory to the ELF core @core (QEMU's
    dump-guest-memory, without paging: physical memory with the vmcoreinfo
    note, which is what drgn reads a kernel from)."""
    qmp = QMP(path, timeout)
    try:
        qmp.command("dump-guest-memory", paging=False, protocol=f"file:{core}")
    finally:
        qmp.close()
