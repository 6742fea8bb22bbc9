# SPDX-License-Identifier: GPL-2.0
"""A QMP client just big enough to ask QEMU for a dump of the guest, and
to save a booted guest as the post-boot snapshot runs are restored from.

QEMU listens for QMP on a Unix socket when a backend declares it
(scripts/vm/emulators/qemu.sh, EMU_QMP): one JSON object per line, a
greeting first, then capabilities negotiation, then commands, with events
interleaved that this client skips.  Plain Python: no gdb needed.
"""
import json
import os
import socket
import sys
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


SNAPSHOT_POINT = "shstk-lab: snapshot point"


def wait_for_line(console, line, pid, timeout):
    """Wait until @console (a file QEMU writes) has @line, while the process
    @pid lives; QMPError if it ends or @timeout seconds pass first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(console, errors="replace") as f:
                if any(text.rstrip("\r\n") == line for text in f):
                    return
        except FileNotFoundError:
            pass
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            raise QMPError(f"QEMU ended before its guest printed '{line}'") from None
        if time.monotonic() > deadline:
            raise QMPError(f"no '{line}' on the console in {timeout:.0f} s")
        time.sleep(0.05)


def save_to_file(path, target, timeout=120.0, poll=0.02):
    """Save the running guest to the file @target (a migration to "file:",
    the guest left running: a restore then starts it at once) and quit
    QEMU; QMPError if the migration does not complete."""
    qmp = QMP(path, timeout)
    try:
        qmp.command("migrate", uri=f"file:{target}")
        while True:
            status = qmp.command("query-migrate")
            state = status.get("status")
            if state == "completed":
                break
            if state in ("failed", "cancelled"):
                raise QMPError(f"migrate: {state}: {status.get('error-desc', 'no reason given')}")
            if time.monotonic() > qmp.deadline:
                raise QMPError(f"migrate: still {state} after {timeout:.0f} s")
            time.sleep(poll)
        try:
            qmp.command("quit")
        except QMPError:
            pass    # QEMU may close the socket before it answers
    finally:
        qmp.close()


def wait_loaded(path, timeout=60.0, poll=0.02):
    """Wait until a VM restored from a snapshot (-incoming) has loaded it:
    gdb must not continue a VM still loading.  A VM that was booted, not
    restored, is never "inmigrate"."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise QMPError(f"no QMP socket {path} in {timeout:.0f} s")
        time.sleep(poll)
    qmp = QMP(path, timeout)
    try:
        while qmp.command("query-status").get("status") == "inmigrate":
            if time.monotonic() > qmp.deadline:
                raise QMPError(f"the snapshot still loading after {timeout:.0f} s")
            time.sleep(poll)
    finally:
        qmp.close()


USAGE = """usage: qmp.py snapshot SOCKET CONSOLE PID TARGET TIMEOUT
       qmp.py wait-loaded SOCKET TIMEOUT"""


def main(argv):
    """qmp.py snapshot SOCKET CONSOLE PID TARGET TIMEOUT: once the guest
    says it is at its snapshot point (guest/init.sh), save it to TARGET.
    qmp.py wait-loaded SOCKET TIMEOUT: wait_loaded()."""
    try:
        if len(argv) == 6 and argv[0] == "snapshot":
            sock, console, pid, target, timeout = argv[1], argv[2], int(argv[3]), argv[4], float(argv[5])
            start = time.monotonic()
            wait_for_line(console, SNAPSHOT_POINT, pid, timeout)
            save_to_file(sock, target, max(1.0, timeout - (time.monotonic() - start)))
        elif len(argv) == 3 and argv[0] == "wait-loaded":
            wait_loaded(argv[1], float(argv[2]))
        else:
            sys.exit(USAGE)
    except (OSError, QMPError) as e:
        sys.exit(f"qmp.py: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
