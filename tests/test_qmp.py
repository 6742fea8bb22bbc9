# SPDX-License-Identifier: GPL-2.0
"""scripts/vm/qmp.py: the VM layer's QMP client, against a fake QEMU."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "vm"))
import qmp  # noqa: E402


class FakeQEMU(threading.Thread):
    """A QMP server answering with @replies to each command, in turn."""

    def __init__(self, path, replies):
        super().__init__(daemon=True)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(1)
        self.replies = list(replies)
        self.commands = []

    def run(self):
        conn, _ = self.server.accept()
        f = conn.makefile("rwb")
        f.write(b'{"QMP": {"version": {}, "capabilities": []}}\n')
        f.flush()
        for reply in self.replies:
            line = f.readline()
            if not line:
                break
            self.commands.append(json.loads(line))
            for obj in reply:
                f.write(json.dumps(obj).encode() + b"\n")
            f.flush()
        conn.close()
        self.server.close()


class QMPTest(unittest.TestCase):
    def serve(self, replies):
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: os.path.exists(d) and __import__("shutil").rmtree(d))
        path = os.path.join(d, "qmp.sock")
        server = FakeQEMU(path, replies)
        server.start()
        return path, server

    def test_dump_skips_events_and_sends_the_path(self):
        path, server = self.serve([[{"return": {}}],
                                   [{"event": "STOP"}, {"event": "DUMP_COMPLETED"},
                                    {"return": {}}]])
        qmp.dump_guest_memory(path, "/tmp/vmcore", timeout=10)
        server.join(10)
        self.assertEqual(server.commands[0], {"execute": "qmp_capabilities"})
        self.assertEqual(server.commands[1]["execute"], "dump-guest-memory")
        self.assertEqual(server.commands[1]["arguments"],
                         {"paging": False, "protocol": "file:/tmp/vmcore"})

    def test_an_error_is_raised_with_qemus_words(self):
        path, _ = self.serve([[{"return": {}}],
                              [{"error": {"class": "GenericError", "desc": "no space"}}]])
        with self.assertRaisesRegex(qmp.QMPError, "dump-guest-memory: no space"):
            qmp.dump_guest_memory(path, "/tmp/vmcore", timeout=10)

    def test_a_closed_socket_is_an_error_not_a_hang(self):
        path, _ = self.serve([[{"return": {}}]])
        with self.assertRaisesRegex(qmp.QMPError, "closed"):
            qmp.dump_guest_memory(path, "/tmp/vmcore", timeout=10)

    def test_save_waits_for_the_migration_then_quits(self):
        path, server = self.serve([[{"return": {}}], [{"return": {}}],
                                   [{"return": {"status": "active"}}],
                                   [{"event": "MIGRATION"}, {"return": {"status": "completed"}}],
                                   [{"return": {}}]])
        qmp.save_to_file(path, "/tmp/snap", timeout=10, poll=0)
        server.join(10)
        names = [c["execute"] for c in server.commands]
        self.assertEqual(names, ["qmp_capabilities", "migrate", "query-migrate", "query-migrate",
                                 "quit"])
        self.assertEqual(server.commands[1]["arguments"], {"uri": "file:/tmp/snap"})

    def test_a_failed_migration_is_an_error_with_its_reason(self):
        path, _ = self.serve([[{"return": {}}], [{"return": {}}],
                              [{"return": {"status": "failed", "error-desc": "disk full"}}]])
        with self.assertRaisesRegex(qmp.QMPError, "migrate: failed: disk full"):
            qmp.save_to_file(path, "/tmp/snap", timeout=10, poll=0)

    def test_the_snapshot_point_is_waited_for_while_qemu_lives(self):
        with tempfile.TemporaryDirectory() as d:
            console = os.path.join(d, "console.log")
            with open(console, "w") as f:
                f.write("[    1.0] booting\r\n" + qmp.SNAPSHOT_POINT + "\r\n")
            qmp.wait_for_line(console, qmp.SNAPSHOT_POINT, os.getpid(), timeout=5)
            with open(console, "w") as f:
                f.write("[    1.0] Kernel panic - not syncing: x\n")
            dead = subprocess.Popen(["true"])
            dead.wait()
            with self.assertRaisesRegex(qmp.QMPError, "QEMU ended before"):
                qmp.wait_for_line(console, qmp.SNAPSHOT_POINT, dead.pid, timeout=5)
            with self.assertRaisesRegex(qmp.QMPError, "in 0 s"):
                qmp.wait_for_line(console, qmp.SNAPSHOT_POINT, os.getpid(), timeout=0)


if __name__ == "__main__":
    unittest.main()
