# SPDX-License-Identifier: GPL-2.0
"""The harness's evidence for a series, as a cover letter shows it.

    python3 -m checks.evidence OUTROOT SERIES_HASH [TAG]

For each arch and emulator under OUTROOT (out/<arch>[-<tag>][-<emu>], TAG
the series' tag when it is not patches/):
the suite's counts (make run; marked when TESTS= chose part of it),
gdb-check's steps, and make fuzz's seeds and calls, each only from a run
whose vm.json names SERIES_HASH: a result of another series, or of the tree
with local changes, is not evidence for this one.  Prints a plain-text table, one line per arch and emulator.
"""
import json
import os
import re
import sys


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def of_series(vm, series_hash):
    """Was this run's kernel built from exactly this series?"""
    return bool(vm) and vm.get("series_hash") == series_hash and not vm.get("local_edits")


def suite(d, series_hash):
    r = read_json(os.path.join(d, "results.json"))
    if not r or not of_series(r.get("vm"), series_hash):
        return "-"
    counts = f"{r['passed']}/{r['failed']}/{r['skipped']}"
    # Part of the suite is no evidence for the whole of it: said so.
    if r.get("selection"):
        counts += f" (only TESTS={r['selection']['tests']})"
    return counts


def gdb_check(d, series_hash):
    gdb = os.path.join(d, "gdb")
    r = read_json(os.path.join(gdb, "gdb-check.json"))
    if not r or not of_series(read_json(os.path.join(gdb, "vm.json")), series_hash):
        return "-"
    return f"{r['passed']}/{r['failed']}/{r['skipped']}"


def fuzz(d, series_hash):
    """"seed S, N calls" per fuzz VM of this series, or "-"."""
    found = []
    root = os.path.join(d, "fuzz")
    for vm_dir in sorted(os.listdir(root)) if os.path.isdir(root) else ():
        r = read_json(os.path.join(root, vm_dir, "results.json"))
        if not r or not of_series(r.get("vm"), series_hash):
            continue
        if "fuzz_clone3" in (r.get("selection") or {}).get("programs_left_out", ()):
            continue
        try:
            with open(os.path.join(root, vm_dir, "guest.out"), errors="replace") as f:
                m = re.search(r"# seed (0x[0-9a-f]+), (\d+) calls", f.read())
        except OSError:
            m = None
        seed = f"seed {m.group(1)}, {m.group(2)} calls" if m else "seed unknown"
        found.append(seed + (": FAILED" if r.get("failed") else ""))
    return "; ".join(found) or "-"


def rows(outroot, series_hash, tag=""):
    """(arch, emu, suite, gdb-check, fuzz) for every run directory of the
    series' tag under @outroot."""
    out = []
    suffix = f"-{tag}" if tag else ""
    for name in sorted(os.listdir(outroot)) if os.path.isdir(outroot) else ():
        d = os.path.join(outroot, name)
        # Any run of the directory says whose it is: make run's, gdb-check's
        # or make fuzz's first VM's.
        vm = next((v for v in (read_json(os.path.join(d, *p, "vm.json"))
                               for p in ((), ("gdb",), ("fuzz", "vm0"))) if v), {})
        arch, emu = vm.get("arch"), vm.get("emu")
        if not arch or name not in (f"{arch}{suffix}", f"{arch}{suffix}-{emu}"):
            continue
        row = (arch, emu, suite(d, series_hash), gdb_check(d, series_hash),
               fuzz(d, series_hash))
        if row[2:] != ("-", "-", "-"):
            out.append(row)
    return out


def table(found):
    head = ("arch", "emulator", "suite p/f/s", "gdb-check p/f/s", "fuzz")
    lines = [head] + list(found)
    widths = [max(len(str(r[i])) for r in lines) for i in range(len(head) - 1)]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)) + "  " + r[-1]
                     for r in lines)


def main(argv):
    if len(argv) not in (3, 4):
        sys.exit("usage: python3 -m checks.evidence OUTROOT SERIES_HASH [TAG]")
    found = rows(*argv[1:])
    if not found:
        print(f"no run of series {argv[2]} under {argv[1]}")
        return 1
    print(table(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
