# SPDX-License-Identifier: GPL-2.0
"""The words against the tree: make help and the README list the same
targets and options, and every path of the repository a document names
exists."""
import glob
import os
import re
import subprocess
import unittest

from tests.test_harness import TOP

DIRS = ("scripts", "docs", "guest", "gdb", "checks", "config", "trace", "tests", "patches")
# A path of the repository as documents write it: a top folder, then names;
# one with a placeholder (<arch>, NAME.<arch>.bt) or a glob is not a path.
PATH = re.compile(r"(?<![\w./~<$-])((?:%s)/[\w./<>*-]*[\w>*])" % "|".join(DIRS))
# Paths in the other projects' trees the documents speak of (the kernel's,
# QEMU's), which share a top folder name with this one's.
UPSTREAM = ("scripts/gdb/linux", "scripts/checkpatch.pl", "scripts/get_maintainer.pl",
            "scripts/kconfig", "tests/tcg/", "tests/functional", "docs/system")


def exists(path):
    """@path, or a file it is the start of (patches/qemu/0007)."""
    full = os.path.join(TOP, path)
    return os.path.exists(full) or bool(glob.glob(glob.escape(full) + "*"))


def documents():
    return [os.path.join(TOP, "README.md")] + sorted(glob.glob(os.path.join(TOP, "docs", "*.md")))


def make_help():
    return subprocess.run(["make", "--no-print-directory", "help"], cwd=TOP, check=True,
                          capture_output=True, text=True, timeout=60).stdout


def readme_table():
    """The rows of the README's table of commands: its first cells."""
    with open(os.path.join(TOP, "README.md")) as f:
        return [m.group(1) for m in re.finditer(r"^\| `([^`]+)`", f.read(), re.M)]


class HelpAndReadmeTest(unittest.TestCase):
    def assert_same(self, name):
        """make help's entries and the README table's first cells that
        start with the regex @name (its first group) are the same set."""
        in_help = set(re.findall(r"^  " + name, make_help(), re.M))
        in_readme = {m.group(1) for cell in readme_table() for m in [re.match(name, cell)] if m}
        self.assertTrue(in_help)
        self.assertEqual(in_help, in_readme)

    def test_same_targets(self):
        self.assert_same(r"make ([\w-]+)")

    def test_same_options(self):
        self.assert_same(r"([A-Z_]+)=")


class DocumentsTest(unittest.TestCase):
    def test_no_placeholder_left(self):
        left = []
        for doc in documents():
            with open(doc) as f:
                left += [f"{os.path.relpath(doc, TOP)}:{n}: {m}" for n, line in enumerate(f, 1)
                         for m in re.findall(r"@[A-Z_]+@", line)]
        self.assertEqual(left, [])

    def test_every_path_named_exists(self):
        missing = []
        for doc in documents():
            with open(doc) as f:
                for n, line in enumerate(f, 1):
                    for path in PATH.findall(line):
                        path = path.rstrip(".")
                        if (re.search(r"[<*]|\b[A-Z]{3,}\b", path) or path.startswith(UPSTREAM)):
                            continue
                        if not exists(path):
                            missing.append(f"{os.path.relpath(doc, TOP)}:{n}: {path}")
        self.assertEqual(missing, [])


if __name__ == "__main__":
    unittest.main()
