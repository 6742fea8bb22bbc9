# SPDX-License-Identifier: GPL-2.0
"""The guest programs against kernel headers without the series' token.

The host's own kernel headers (Debian 12's linux-libc-dev) have no token
in struct clone_args, which makes them a tree without the series: the
programs are compiled here (never run: they belong in a VM) the way
scripts/build/guest.sh compiles them for such a tree.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from tests.test_harness import TOP



def programs():
    """Every guest program that includes lib/shstk.h."""
    for path in sorted(glob.glob(os.path.join(TOP, "guest", "*.c"))):
        with open(path) as f:
            if '#include "lib/shstk.h"' in f.read():
                yield os.path.basename(path)[:-2]
HOST_SCHED_H = "/usr/include/linux/sched.h"


def host_headers_without_token():
    """Why the host's headers cannot stand in for a tree without the series, or None."""
    if not shutil.which("gcc"):
        return "no host gcc"
    if not os.path.exists(HOST_SCHED_H):
        return f"no {HOST_SCHED_H} (linux-libc-dev)"
    with open(HOST_SCHED_H) as f:
        if "CLONE_ARGS_SIZE_VER3" in f.read():
            return f"{HOST_SCHED_H} has the token: not a tree without the series"
    return None


@unittest.skipIf(host_headers_without_token(), host_headers_without_token())
class WithoutTokenTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.include = tmp.name
        r = subprocess.run([sys.executable, "-m", "spec.scenario", "--c-header"], cwd=TOP,
                           capture_output=True, text=True, check=True)
        with open(os.path.join(self.include, "shstk_scenario.h"), "w") as f:
            f.write(r.stdout)

    def compile(self, program, *defines):
        """Compiled to an object with guest.sh's warnings (-O2's included),
        not linked."""
        return subprocess.run(["gcc", "-c", "-o", os.path.join(self.include, program + ".o"),
                               "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror",
                               *defines, "-I", os.path.join(TOP, "guest"), "-I", self.include,
                               os.path.join(TOP, "guest", program + ".c")],
                              capture_output=True, text=True)

    def test_programs_build_without_the_token(self):
        built = list(programs())
        self.assertIn("shstk_clone3", built)
        for program in built:
            with self.subTest(program=program):
                r = self.compile(program, '-DSHSTK_NO_TOKEN="no token here"')
                self.assertEqual(r.returncode, 0, r.stderr)

    def test_headers_without_a_reason_do_not_build(self):
        r = self.compile("smoke")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("passes SHSTK_TOKEN_FIELD or SHSTK_NO_TOKEN", r.stderr)


if __name__ == "__main__":
    unittest.main()
