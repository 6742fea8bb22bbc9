# SPDX-License-Identifier: GPL-2.0
"""make replay's check: gdb, in batch, on a replay of a recorded token race
(guest/token_race.c), in one of two modes (SHSTK_REPLAY_MODE):

  stops    run the replay forward and log every stop of the race: each
           racer's token check (commands.TokenCheck.function) and its
           return, the winner's child at its first instruction, each racer
           back from clone3(); each with the guest's instruction count
           (QEMU's "info replay").
           Two replays of one recording must log the same stops.
  reverse  run forward to the program's main() and take a snapshot there
           (reverse execution replays from the nearest one), then to the
           winner's child's first instruction, then reverse-continue to
           the token check that consumed its token (the one that still
           finds the token there),
           reverse-stepi once, then run forward to that call's return, where
           the word must be 0.

Both write JSON lines to SHSTK_STEPS, one per stop, which checks/replay.py
judges; nothing is judged here but what only gdb can tell (which stop this
is).  The check is shstk/racecheck.py's, on the framework make gdb-check
shares (shstk/stepcheck.py).  Started by scripts/replay.sh, with the
environment of shstk/session.py.  Importing this file does nothing; gdb
runs it (main()).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from shstk import session  # noqa: E402


def main():
    session.attach()
    # gdb/shstk's readers build on the kernel's scripts (linux.*), which
    # attach() loads: importable only from here on.
    from shstk import racecheck
    racecheck.main(os.environ["SHSTK_STEPS"], os.environ.get("SHSTK_REPLAY_MODE", "stops"))


if __name__ == "__main__":
    main()
