# SPDX-License-Identifier: GPL-2.0
"""Compare the per-case verdicts of one guest suite under two emulators.

    python3 -m checks.compare A/results.json B/results.json

Both runs must be of the same arch and suite (make run writes
results.json).  Every test point of every program is matched by program,
case name and, for a name a program uses more than once, which use it is;
a point passes when both runs gave the same result (and, for a skip, the
same reason).  Two runs with nothing to compare fail, and so does a
point one run has and the other lacks, a program whose own verdict
differs, or a run that is missing.  Prints
KTAP, one point per case, and exits 1 on any difference.

This is how make test holds x86 under the project's QEMU (CET in TCG) to
what Bochs, an independent CET implementation, gives for the same kernel
and programs.
"""
import json
import sys


def load(path):
    with open(path) as f:
        run = json.load(f)
    points = {}
    verdicts = {}
    for prog in run["programs"]:
        verdicts[prog["name"]] = prog["verdict"]
        for p in prog["points"]:
            n = 1
            while (prog["name"], p["name"], n) in points:
                n += 1
            points[(prog["name"], p["name"], n)] = (p["result"], p.get("reason") or "")
    if "arch" not in run or "emu" not in run:
        raise ValueError(f"{path} names no arch or emulator")
    return run, verdicts, points


def describe(run):
    return f"{run['emu']} ({run.get('vm', {}).get('emu_build') or run['emu']})"


def compare(a_path, b_path, out=sys.stdout):
    """Print KTAP comparing the two runs; return the number of differences."""
    try:
        a, a_verdicts, a_points = load(a_path)
        b, b_verdicts, b_points = load(b_path)
    except (OSError, ValueError, KeyError) as e:
        print("KTAP version 1\n1..1", file=out)
        print(f"# cannot read a run: {e}", file=out)
        print("not ok 1 both runs read", file=out)
        return 1
    lines = []
    if not a_points and not b_points:
        lines.append((False, "test points to compare", "neither run has any"))
    if a["arch"] != b["arch"]:
        lines.append((False, "arch", f"{a['arch']} against {b['arch']}"))
    for name in sorted(set(a_verdicts) | set(b_verdicts)):
        va, vb = a_verdicts.get(name, "missing"), b_verdicts.get(name, "missing")
        lines.append((va == vb, f"{name} (program)", f"{a['emu']} {va}, {b['emu']} {vb}"))
    for key in sorted(set(a_points) | set(b_points)):
        ra, rb = a_points.get(key), b_points.get(key)
        same = ra is not None and ra == rb
        show = [f"{run['emu']} " + ("missing" if r is None else r[0] + (f" ({r[1]})" if r[1] else ""))
                for run, r in ((a, ra), (b, rb))]
        name = f"{key[0]} {key[1]}" + (f" ({key[2]})" if key[2] > 1 else "")
        lines.append((same, name, ", ".join(show)))
    print("KTAP version 1", file=out)
    print(f"# {a['arch']}: {describe(a)} against {describe(b)}", file=out)
    print(f"1..{len(lines)}", file=out)
    failed = 0
    for n, (ok, name, detail) in enumerate(lines, 1):
        failed += not ok
        print(f"# {detail}", file=out)
        # A "#" in a case name would start a KTAP directive.
        print(f"{'ok' if ok else 'not ok'} {n} {name.replace('#', '%23')}", file=out)
    print(f"# {len(lines) - failed} same, {failed} different", file=out)
    return failed


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    return 1 if compare(argv[1], argv[2]) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
