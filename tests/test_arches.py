# SPDX-License-Identifier: GPL-2.0
"""config/arches.ini: complete for every arch, the same facts from shell and
Python, and an unknown arch an error everywhere."""
import re
import subprocess
import tempfile
import unittest

from config import arches
from tests import gdbmock
from tests.test_harness import TOP


def documented_keys():
    """The keys the table's header describes ("#   key   what it is")."""
    with open(arches.TABLE) as f:
        return [m.group(1) for m in re.finditer(r"^#   ([a-z0-9_]+) ", f.read(), re.M)]


def shell(script):
    r = subprocess.run(["bash", "-c", ". scripts/lib/core.sh; " + script], cwd=TOP,
                       capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


class ArchTableTest(unittest.TestCase):
    def test_every_arch_has_every_key(self):
        keys = documented_keys()
        self.assertIn("kernel_arch", keys)
        for name in arches.names(all=True):
            a = arches.get(name)
            with self.subTest(arch=name):
                self.assertEqual(sorted(k for k in vars(a) if k != "name"), sorted(keys))

    def test_supported_and_in_progress(self):
        self.assertEqual(arches.names(), ["x86_64", "arm64", "riscv64"])
        for name in arches.names(all=True):
            status = arches.get(name).status
            with self.subTest(arch=name):
                self.assertTrue(status == "supported" or status.startswith("in progress: "), status)
        # Under set -e, as every script runs it: a last arch in progress
        # must not make the list itself fail.  A copy of the table with the
        # last arch in progress stands in for the real one.
        with open(arches.TABLE) as f:
            table = f.read()
        last = arches.names(all=True)[-1]
        head, sep, tail = table.rpartition(f"[{last}]")
        tail = re.sub(r"^status = .*$", "status = in progress: a test", tail, count=1, flags=re.M)
        with tempfile.NamedTemporaryFile("w", suffix=".ini") as t:
            t.write(head + sep + tail)
            t.flush()
            rc, out, err = shell(f"SHSTK_ARCH_TABLE={t.name}; set -euo pipefail; "
                                 "x=$(shstk_arch_names); echo $x; echo --; shstk_arch_names --all")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.split(), arches.names()[:-1] + ["--"] + arches.names(all=True))

    def test_names_and_aliases(self):
        self.assertEqual(arches.get("aarch64").name, "arm64")
        self.assertEqual(arches.get("amd64").name, "x86_64")
        self.assertEqual(arches.by_field("elf_machine", 183).name, "arm64")
        with self.assertRaisesRegex(arches.UnknownArch, "unknown ARCH 'sparc' .use x86_64 or arm64 or riscv64"):
            arches.get("sparc")

    def test_shell_reads_the_same_facts(self):
        # One shell asks every question (a shell per question is slow),
        # each answer on its own line after a marker line.
        pairs = [(name, key) for name in arches.names(all=True) for key in documented_keys()]
        script = "; ".join(f"echo '@@ {name} {key}'; shstk_arch_fact {name} {key}" for name, key in pairs)
        rc, out, err = shell(script)
        self.assertEqual(rc, 0, err)
        answers = dict(re.findall(r"^@@ (\S+ \S+)\n(.*)$", out, re.M))
        for name, key in pairs:
            want = getattr(arches.get(name), key)
            if isinstance(want, tuple):
                want = " ".join(want)
            with self.subTest(arch=name, key=key):
                self.assertEqual(answers.get(f"{name} {key}"), str(want))

    def test_shell_fails_on_an_unknown_arch_or_key(self):
        rc, _, err = shell("shstk_arch_vars sparc; echo reached")
        self.assertNotEqual(rc, 0)
        self.assertIn("unknown ARCH 'sparc' (use x86_64 or arm64 or riscv64)", err)
        rc, out, err = shell("shstk_arch_fact arm64 no_such_key; echo reached")
        self.assertIn("config/arches.ini has no no_such_key for arm64", err)
        self.assertEqual(out, "")

    def test_every_arch_has_gdb_ops(self):
        gdbmock.install()
        from shstk import archops
        for name in arches.names(all=True):
            gdbmock.reset(name)
            with self.subTest(arch=name):
                self.assertEqual(archops.ops().name, name)

    def test_gdb_on_an_unknown_arch(self):
        gdb = gdbmock.install()
        from shstk import archops
        gdbmock.reset("sparc")
        with self.assertRaisesRegex(gdb.GdbError, "no entry in config/arches.ini"):
            archops.ops()


if __name__ == "__main__":
    unittest.main()
