# SPDX-License-Identifier: GPL-2.0
"""Each guest program's verdict on the terminal as the program ends.

    python3 -m checks.live OUTDIR ARCH EMU PID [TAG]

Follows OUTDIR/guest.out, the results channel scripts/vm/boot.sh writes,
while the process PID (that boot.sh) runs, and prints on stderr, as
"[TAG] guest: ...": each program's start and its progress lines ("#
progress: ..."), its verdict when it ends, and the programs TESTS= left
out.  A verdict is the program's lines as checks.report reads them, known
failures applied (OUTDIR/emulator.build names the emulator's build, as
vm.json will) and counted alike, so the two never disagree; the report
after the run stays the judge.  Ends at the guest's DONE, or once PID is
gone and the channel read to its end (scripts/lib/entry.sh
shstk_start_boot starts it, shstk_wait_boot waits for it).
"""
import os
import sys
import time

from checks import ktap, report

POLL = 0.02     # seconds between looks at the channel
SHOWN = 3       # problems a failed program's line names


def pid_alive(pid):
    """Whether PID runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat.rpartition(") ")[2][:1] not in ("Z", "X", "")


class Follower:
    """The channel's lines in, the lines for the user out (through @say)."""

    def __init__(self, arch, emu, build, say, known=None):
        self.arch, self.emu, self.build, self.say = arch, emu, build, say
        self.known = report.known_failures() if known is None else known
        self.block = None       # the running program's lines, its BEGIN first
        self.started = 0.0
        self.left_out = []

    def feed(self, line, now=None):
        """One line of the channel; True at the guest's DONE."""
        now = time.monotonic() if now is None else now
        if line.startswith("SHSTK-LAB BEGIN "):
            self.said_left_out()
            self.block, self.started = [line], now
            self.say(f"running {line.split(None, 2)[2].strip()}")
        elif line.startswith("SHSTK-LAB END ") and self.block is not None:
            self.block.append(line)
            self.verdict(now)
        elif line.startswith("SHSTK-LAB NOT-SELECTED "):
            self.left_out.append(line.split(None, 2)[2].strip())
        elif line.strip() == "SHSTK-LAB DONE":
            self.finish(now)
            return True
        elif self.block is not None:
            self.block.append(line)
            if line.startswith("# progress: "):
                self.say(line[2:])
        return False

    def said_left_out(self):
        if self.left_out:
            self.say(f"{ktap.NOT_SELECTED}: {', '.join(self.left_out)}")
            self.left_out = []

    def verdict(self, now):
        """The line of the program in self.block, ended or not."""
        _, progs, _ = ktap.parse("\n".join(self.block) + "\n")
        self.block = None
        prog = progs[0]
        report.apply_known(self.arch, [prog], self.known, self.emu, self.build())
        passed, failed, skipped = report.counts([prog], [])
        notes = [f"{now - self.started:.1f} s"]
        if prog.cases_left_out:
            notes.append(f"{len(prog.cases_left_out)} cases not selected")
        line = f"{prog.name}: {passed} passed, {failed} failed, {skipped} skipped ({'; '.join(notes)})"
        if prog.verdict == "fail":
            more = len(prog.problems) - SHOWN
            line += ": FAIL: " + "; ".join(prog.problems[:SHOWN]) + (f"; {more} more" if more > 0 else "")
        elif prog.verdict == "xfail":
            line += ": known failures: " + "; ".join(x for x, _ in prog.xfail)
        self.say(line)

    def finish(self, now=None):
        """The channel ended: a program still open never finished."""
        if self.block is not None:
            self.verdict(time.monotonic() if now is None else now)
        self.said_left_out()


def read_build(outdir):
    """What the emulator binary is (vm.json's emu_build to come), or ""."""
    try:
        with open(os.path.join(outdir, "emulator.build")) as f:
            return f.readline().strip()
    except OSError:
        return ""


def follow(path, pid, follower, poll=POLL):
    """Feed @follower the lines of @path as they come, until DONE or until
    @pid is gone and the file is read to its end.  The file may not be
    there yet, and may be made anew (truncated or replaced) before it fills."""
    f, pos, buf = None, 0, b""
    try:
        while True:
            alive = pid_alive(pid)
            if f is None:
                try:
                    f = open(path, "rb")
                except FileNotFoundError:
                    pass
            if f is not None:
                try:
                    renewed = os.stat(path).st_ino != os.fstat(f.fileno()).st_ino
                except FileNotFoundError:
                    renewed = False
                if renewed:
                    f.close()
                    f, pos, buf = open(path, "rb"), 0, b""
                if os.fstat(f.fileno()).st_size < pos:
                    pos, buf = 0, b""
                f.seek(pos)
                data = f.read()
                pos += len(data)
                buf += data
                *lines, buf = buf.split(b"\n")
                for raw in lines:
                    if follower.feed(raw.decode(errors="replace").rstrip("\r")):
                        return
            if not alive:
                follower.finish()
                return
            time.sleep(poll)
    finally:
        if f is not None:
            f.close()


def main(argv):
    if len(argv) not in (5, 6):
        print("usage: python3 -m checks.live OUTDIR ARCH EMU PID [TAG]", file=sys.stderr)
        return 2
    outdir, arch, emu, pid = argv[1], argv[2], argv[3], int(argv[4])
    tag = argv[5] if len(argv) == 6 else "checks/live.py"

    def say(text):
        print(f"[{tag}] guest: {text}", file=sys.stderr, flush=True)

    follower = Follower(arch, emu, lambda: read_build(outdir), say)
    try:
        follow(os.path.join(outdir, "guest.out"), pid, follower)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
