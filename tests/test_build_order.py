# SPDX-License-Identifier: GPL-2.0
"""What each entry point builds, and in which order, on a fresh cache, and
what a failed build leaves behind: with stub builders (no compiler, no VM).

A copy of scripts/ and checks/ runs against a temporary cache, with
build/kernel.sh, build/guest.sh and vm/boot.sh replaced by stubs that log
their calls and behave like the real ones where it matters: build/guest.sh
fails without the patched kernel's headers, and build/kernel.sh makes the
headers of the kernel it builds.
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from tests.test_harness import TOP

STUB_KERNEL = r"""#!/usr/bin/env bash
set -euo pipefail
. "$(dirname "$0")/../lib/core.sh"
shstk_arch_vars "$1"
echo "kernel ${SHSTK_KCONFIG_VARIANT:-default}${SHSTK_BASELINE:+ baseline} ${2:-}" >>"$SHSTK_CACHE/calls"
[ -z "${STUB_KERNEL_FAILS:-}" ] || shstk_die "stub: the kernel build failed"
mkdir -p "$KBUILD_DIR/usr/include/linux"
"""

STUB_GUEST = r"""#!/usr/bin/env bash
set -euo pipefail
. "$(dirname "$0")/../lib/core.sh"
shstk_arch_vars "$1"
echo "guest $2" >>"$SHSTK_CACHE/calls"
[ -d "$KBUILD_DIR/usr/include/linux" ] || shstk_die "no kernel headers in $KBUILD_DIR/usr/include"
echo "$SHSTK_CACHE/guest.cpio.gz"
"""

STUB_VM = r"""#!/usr/bin/env bash
echo "boot $3" >>"$SHSTK_CACHE/calls"
exit 1
"""


class BuildOrderTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.top = os.path.join(self.tmp, "top")
        for d in ("scripts", "checks", "config", "spec"):
            shutil.copytree(os.path.join(TOP, d), os.path.join(self.top, d))
        for name, text in (("build/kernel.sh", STUB_KERNEL), ("build/guest.sh", STUB_GUEST),
                           ("vm/boot.sh", STUB_VM)):
            path = os.path.join(self.top, "scripts", name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)
        self.cache = os.path.join(self.tmp, "cache")
        self.out = os.path.join(self.tmp, "out")
        os.makedirs(self.cache)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_script(self, *cmd, **env):
        e = dict(os.environ, SHSTK_CACHE=self.cache, SHSTK_OUT=self.out, **env)
        r = subprocess.run([os.path.join(self.top, "scripts", cmd[0]), *cmd[1:]], env=e,
                           capture_output=True, text=True, timeout=60)
        try:
            with open(os.path.join(self.cache, "calls")) as f:
                calls = f.read().splitlines()
        except OSError:
            calls = []
        return r, calls

    def test_fuzz_on_a_fresh_cache(self):
        # The debug kernel for the VM, the patched kernel's headers for the
        # guest programs, and no guest build before those headers exist.
        r, calls = self.run_script("fuzz.sh", "arm64", KCONFIG="debug", CALLS="1", ROUNDS="1")
        self.assertNotIn("no kernel headers", r.stderr)
        self.assertEqual(calls[:3], ["kernel default --headers", "kernel debug ", "guest fuzz"],
                         r.stderr)

    def test_baseline_run_on_a_fresh_cache(self):
        r, calls = self.run_script("run.sh", "run", "arm64", SHSTK_BASELINE="1")
        self.assertNotIn("no kernel headers", r.stderr)
        self.assertEqual(calls[:3], ["kernel default --headers", "kernel default baseline ",
                                     "guest run"], r.stderr)

    def test_a_normal_run_builds_one_kernel(self):
        r, calls = self.run_script("run.sh", "run", "arm64")
        self.assertEqual(calls[:2], ["kernel default ", "guest run"], r.stderr)

    def test_a_failed_build_leaves_no_old_results(self):
        # The last run's verdict must not survive a step that died before
        # its report: make test's summary would count it.
        for step, sub in ((("run.sh", "run", "arm64"), "arm64"),
                          (("fuzz.sh", "arm64"), os.path.join("arm64", "fuzz")),
                          (("run.sh", "smoke", "arm64"), os.path.join("arm64", "smoke"))):
            with self.subTest(step=step):
                d = os.path.join(self.out, sub)
                os.makedirs(d, exist_ok=True)
                for name in ("results.json", "results.ktap"):
                    with open(os.path.join(d, name), "w") as f:
                        json.dump({"passed": 99, "failed": 0, "skipped": 0}, f)
                r, _ = self.run_script(*step, STUB_KERNEL_FAILS="1", KCONFIG="debug")
                self.assertNotEqual(r.returncode, 0)
                self.assertIn("stub: the kernel build failed", r.stderr)
                left = [n for n in os.listdir(d) if n.startswith("results.")] if os.path.isdir(d) else []
                self.assertEqual(left, [], f"{step}: old results left in {d}")


if __name__ == "__main__":
    unittest.main()
