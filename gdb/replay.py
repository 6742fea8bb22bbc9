# SPDX-License-Identifier: GPL-2.0
"""make replay: an interactive gdb on the replay of a recorded token race
(guest/token_race.c, one round: two threads clone3() with one token), which
gdb can run backwards.  Started by scripts/replay.sh after the recording;
quitting gdb ends the replay.  A breakpoint waits in each racer's token
check; the banner says how to go from the loser's EINVAL back into the
winner's call.  With stdin not a terminal (a smoke test) it goes there
itself, shows the token word at each end, and gdb quits at the end of its
input.
"""
import os
import sys

import gdb

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from shstk import session  # noqa: E402

BANNER = """
shstk-lab replay session ({arch}): QEMU replays a recording of guest/token_race,
one round of the token race (two threads clone3() with one token; one CPU, so
the scheduler interleaves them).  Every run of it is the same, instruction for
instruction, and it runs backwards too.
  a breakpoint waits in {check}() for token_race: each racer's
  token check.  The first to get there consumes the token; the other finds 0.
  continue / finish       the next token check / its return: 0 for the winner,
                          -22 (EINVAL) for the loser
  shstk-clone-args        the token and the word there now
  reverse-continue        back to the previous token check (from the loser's return:
                          first its own call, then the winner's, where the word is
                          still the token)
  reverse-stepi, reverse-finish   one instruction back / back to the caller
  monitor info replay     the instruction count here
  user labels: race_child_entry (the winner's child's first instruction),
  race_parent_return (each racer back from clone3)
  quit ends gdb and the replay.
"""


def main():
    session.attach()
    from shstk.commands import token_check
    gdb.execute("shstk-context on")
    check = token_check().function
    bp = gdb.Breakpoint(check)
    from shstk import archops
    archops.keep_described_locations(bp)
    bp.condition = '$_streq($shstk_comm(), "token_race")'
    gdb.write(BANNER.format(arch=os.environ.get("SHSTK_ARCH", "?"), check=check))
    no_reverse = os.environ.get("SHSTK_NO_REVERSE_WHY")
    if no_reverse:
        gdb.write(f"  (this replay runs forward only: {no_reverse})\n")
    if sys.stdin.isatty():
        return
    # No one at the keyboard: the way the banner describes, once.
    walk = ["continue", "shstk-clone-args", "finish", "continue", "shstk-clone-args", "finish"]
    if not no_reverse:
        walk += ["reverse-continue", "reverse-continue", "shstk-clone-args"]
    session.run_unattended(walk + ["monitor info replay"])


if __name__ == "__main__":
    main()
