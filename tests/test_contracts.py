# SPDX-License-Identifier: GPL-2.0
"""The contracts every script keeps: between the build steps, and in how
a script checks the host and stops.

scripts/build/kernel-source.sh leaves, on every path it can take, the
stamps the later steps read (.shstk-series, .shstk-edits); a reader whose
stamp is missing stops naming it.  A failing command stops a script with
its file, line and command named, even inside a command substitution whose
stderr went nowhere; scripts/each-arch.sh ends with one line per arch; the
host's tools and root are checked before anything else.

kernel-source.sh runs on a copy of scripts/ and config/ with a small fake
kernel tree (already "unpacked") and a series of its own: no download.
"""
import glob
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
import unittest

from tests.test_harness import TOP

GIT_ID = ["-c", "user.name=t", "-c", "user.email=t@localhost"]


def git(cwd, *args):
    return subprocess.run(["git", *GIT_ID, *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


def short_sha256(data):
    return hashlib.sha256(data).hexdigest()[:16]


class KernelSourceStampsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.top = os.path.join(self.tmp, "top")
        for d in ("scripts", "config"):
            shutil.copytree(os.path.join(TOP, d), os.path.join(self.top, d))
        self.cache = os.path.join(self.tmp, "cache")
        self.src = os.path.join(self.cache, "src", "linux")
        # The pristine tree, as fetch_and_unpack leaves it.
        os.makedirs(os.path.join(self.src, "kernel"))
        self.write("kernel/fork.c", "int copy_process;\n")
        subprocess.run(["bash", "-c", '. scripts/lib/core.sh; . scripts/lib/build.sh; shstk_git_commit_pristine "$1" pristine',
                        "-", self.src], cwd=self.top, check=True, capture_output=True)
        self.write(".shstk-kernel-version", "linux-source-test 1.0\n")
        self.patches = os.path.join(self.top, "patches")
        os.makedirs(self.patches)
        self.add_patch("one", "int copy_process;\nint shstk_token;\n")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write(self, name, text, tree=None):
        with open(os.path.join(tree or self.src, name), "w") as f:
            f.write(text)

    def read(self, name, tree=None):
        with open(os.path.join(tree or self.src, name)) as f:
            return f.read()

    def add_patch(self, subject, fork_c):
        """A patch on top of the series so far that makes kernel/fork.c
        @fork_c, written with git format-patch in a scratch clone."""
        work = os.path.join(self.tmp, "work")
        if not os.path.isdir(work):
            git(self.tmp, "clone", "-q", self.src, work)
            git(work, "checkout", "-q", "shstk-base")
        self.write("kernel/fork.c", fork_c, tree=work)
        git(work, "commit", "-qam", subject)
        name = git(work, "format-patch", "-1", "-o", self.patches).strip()
        with open(os.path.join(self.patches, "series"), "a") as f:
            f.write(os.path.basename(name) + "\n")

    def kernel_source(self, **env):
        e = dict(os.environ, SHSTK_CACHE=self.cache, SHSTK_OUT=os.path.join(self.tmp, "out"), **env)
        return subprocess.run([os.path.join(self.top, "scripts", "build", "kernel-source.sh")],
                              env=e, capture_output=True, text=True, timeout=120)

    def series_hash(self):
        return subprocess.run(["bash", "-c", '. scripts/lib/core.sh; . scripts/lib/build.sh; shstk_series_hash "$1"', "-", self.patches],
                              cwd=self.top, check=True, capture_output=True, text=True).stdout.strip()

    def assert_stamps(self, r, edits_diff=b"", tree=None, series=None):
        """The stamps kernel-source.sh leaves: the series it applied and the
        hash of the tree's uncommitted diff."""
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.read(".shstk-series", tree).strip(), series or self.series_hash())
        self.assertEqual(self.read(".shstk-edits", tree).strip(), short_sha256(edits_diff))

    def test_fresh_apply(self):
        r = self.kernel_source()
        self.assert_stamps(r)
        self.assertIn("shstk_token", self.read("kernel/fork.c"))

    def test_already_applied(self):
        self.kernel_source()
        os.unlink(os.path.join(self.src, ".shstk-edits"))
        self.assert_stamps(self.kernel_source())

    def test_local_edits(self):
        self.kernel_source()
        self.write("kernel/fork.c", self.read("kernel/fork.c") + "int edited;\n")
        r = self.kernel_source()
        diff = subprocess.run(["git", "diff", "HEAD"], cwd=self.src, check=True,
                              capture_output=True).stdout
        self.assert_stamps(r, edits_diff=diff)
        self.assertIn("building with local edits", r.stderr)

    def test_new_series_over_local_edits(self):
        self.kernel_source()
        self.write("kernel/fork.c", self.read("kernel/fork.c") + "int edited;\n")
        self.add_patch("two", "int copy_process;\nint shstk_token;\nint two;\n")
        r = self.kernel_source()
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("has local edits that applying it would lose", r.stderr)
        self.assertIn("int edited;", self.read("kernel/fork.c"))
        r = self.kernel_source(SHSTK_DISCARD_EDITS="1")
        self.assert_stamps(r)
        self.assertNotIn("edited", self.read("kernel/fork.c"))
        self.assertIn("int two;", self.read("kernel/fork.c"))

    def test_baseline(self):
        self.kernel_source()
        r = self.kernel_source(SHSTK_BASELINE="1")
        self.assert_stamps(r, tree=self.src + "-base", series="baseline")
        self.assertNotIn("shstk_token", self.read("kernel/fork.c", self.src + "-base"))


class KsrcTest(unittest.TestCase):
    """kernel-source.sh on a developer's own tree (KSRC): checked, used as
    it is, its stamps in the cache, the tree never written to."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.top = os.path.join(self.tmp, "top")
        for d in ("scripts", "config"):
            shutil.copytree(os.path.join(TOP, d), os.path.join(self.top, d))
        self.cache = os.path.join(self.tmp, "cache")
        self.ksrc = os.path.join(self.tmp, "linux")
        for name, text in (("kernel/fork.c", "int copy_process;\n"),
                           ("scripts/kconfig/merge_config.sh", "#!/bin/sh\n"),
                           ("Makefile", "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 3\nEXTRAVERSION = -rc1\n\n"),
                           (".gitignore", "*.o\n")):
            self.write(name, text)
        git(self.tmp, "init", "-q", self.ksrc)
        git(self.ksrc, "add", "-A")
        git(self.ksrc, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "fork: the tree")

    def write(self, name, text):
        path = os.path.join(self.ksrc, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def kernel_source(self, ksrc=None, **env):
        e = dict(os.environ, SHSTK_CACHE=self.cache, SHSTK_OUT=os.path.join(self.tmp, "out"),
                 SHSTK_KSRC=ksrc or self.ksrc, **env)
        return subprocess.run([os.path.join(self.top, "scripts", "build", "kernel-source.sh")],
                              env=e, capture_output=True, text=True, timeout=120)

    def state(self):
        """What a run must leave as it was: HEAD, the status with ignored
        files, and every file's mtime, .git's included."""
        mtimes = {}
        for d, _, files in os.walk(self.ksrc):
            for name in files:
                path = os.path.join(d, name)
                mtimes[path] = os.stat(path).st_mtime_ns
        # --no-optional-locks: a plain status would refresh the index.
        return (git(self.ksrc, "rev-parse", "HEAD"),
                git(self.ksrc, "--no-optional-locks", "status", "--porcelain", "--ignored"), mtimes)

    def stamps(self):
        d = glob.glob(os.path.join(self.cache, "src", "linux-ksrc-linux-*.stamps"))
        self.assertEqual(len(d), 1, d)
        return {n: open(os.path.join(d[0], n)).read().strip()
                for n in (".shstk-series", ".shstk-edits", ".shstk-series-name", ".shstk-kernel-version")}

    def test_a_clean_tree_is_stamped_in_the_cache_and_untouched(self):
        self.write("kernel/fork.c", "int copy_process;\nint edited;\n")
        self.write("new.o", "ignored\n")
        before = self.state()
        r = self.kernel_source()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.state(), before)
        st = self.stamps()
        self.assertEqual(st[".shstk-series"], "ksrc-" + before[0].strip())
        self.assertNotEqual(st[".shstk-edits"], "e3b0c44298fc1c14")
        self.assertRegex(st[".shstk-series-name"], r'^KSRC=.*/linux at [0-9a-f]+ \("fork: the tree"\)$')
        self.assertIn("+ local changes", r.stderr)
        self.assertEqual(st[".shstk-kernel-version"], "linux 6.12.3-rc1 (KSRC)")
        self.assertEqual([n for n in os.listdir(self.ksrc) if n.startswith(".shstk")], [])

    def test_a_stat_only_change_leaves_the_index_alone(self):
        git(self.ksrc, "status")
        index = os.path.join(self.ksrc, ".git", "index")
        os.utime(os.path.join(self.ksrc, "kernel", "fork.c"), ns=(1, 1))
        before = os.stat(index).st_mtime_ns
        r = self.kernel_source()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.stat(index).st_mtime_ns, before)

    def test_without_local_changes_the_name_says_none(self):
        r = self.kernel_source()
        self.assertEqual(r.returncode, 0, r.stderr)
        st = self.stamps()
        self.assertEqual(st[".shstk-edits"], "e3b0c44298fc1c14")
        self.assertNotIn("local changes", r.stderr)

    def test_what_cannot_be_built_is_named(self):
        plain = os.path.join(self.tmp, "plain")
        os.makedirs(plain)
        for ksrc, said in ((plain, "is not a git tree"),
                           (os.path.join(self.ksrc, "kernel"), "is inside the git tree")):
            with self.subTest(ksrc=ksrc):
                r = self.kernel_source(ksrc)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(said, r.stderr)
        # Built in for an arch the harness does not build: as Kbuild, no matter.
        self.write("arch/arm/include/generated/asm/x.h", "\n")
        r = self.kernel_source()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.write("arch/x86/include/generated/asm/x.h", "\n")
        r = self.kernel_source()
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("has been built in (it has arch/x86/include/generated (make ARCH=x86 mrproper))",
                      r.stderr)
        self.write(".config", "CONFIG_X=y\n")
        r = self.kernel_source()
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("has been built in (it has .config)", r.stderr)
        r = self.kernel_source(SHSTK_BASELINE="1")
        self.assertIn("BASELINE=1 with KSRC=", r.stderr)


class GuestStampTest(unittest.TestCase):
    def test_missing_stamp_is_named(self):
        # The kernel headers are there, the tree's .shstk-series is not:
        # guest.sh stops, naming the file and the step that leaves it.
        with tempfile.TemporaryDirectory() as cache:
            os.makedirs(os.path.join(cache, "build", "arm64", "usr", "include", "linux"))
            src = os.path.join(cache, "src", "linux")
            os.makedirs(src)
            r = subprocess.run([os.path.join(TOP, "scripts", "build", "guest.sh"), "arm64"],
                               env=dict(os.environ, SHSTK_CACHE=cache), capture_output=True,
                               text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"error: {src}/.shstk-series is missing: scripts/build/kernel-source.sh leaves it",
                      r.stderr)


class StopReportTest(unittest.TestCase):
    """core.sh's ERR trap: a script under set -e never stops without a word."""

    def run_script(self, body, status_file=None):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "victim.sh")
            with open(path, "w") as f:
                f.write(textwrap.dedent("""\
                    #!/usr/bin/env bash
                    set -euo pipefail
                    . "$SHSTK_TOP/scripts/lib/core.sh"
                    quiet_failure() { cat /nonexistent 2>/dev/null; }
                    in_a_function() { local v; v=$(quiet_failure); echo "$v"; }
                    """) + body)
            env = dict(os.environ, SHSTK_TOP=TOP)
            if status_file:
                env["SHSTK_STATUS_FILE"] = os.path.join(d, "status")
            r = subprocess.run(["bash", path], env=env, capture_output=True, text=True, timeout=30)
            status = None
            if status_file and os.path.exists(env["SHSTK_STATUS_FILE"]):
                with open(env["SHSTK_STATUS_FILE"]) as f:
                    status = f.read()
            return r, path, status

    def test_failure_in_a_command_substitution_is_named(self):
        r, path, _ = self.run_script("x=$(quiet_failure)\necho not reached\n")
        self.assertEqual(r.returncode, 1)
        self.assertNotIn("not reached", r.stdout)
        self.assertEqual(r.stderr.count("error:"), 1, r.stderr)
        self.assertIn(f"[victim.sh] error: {path}:6: 'x=$(quiet_failure)' failed with status 1",
                      r.stderr)

    def test_the_calls_that_led_there_are_named(self):
        r, path, _ = self.run_script("in_a_function\n")
        self.assertIn(f"{path}:5: 'v=$(quiet_failure)' failed with status 1, "
                      f"in in_a_function() called from {path}:6", r.stderr)

    def test_a_pipeline_says_which_command_failed(self):
        r, path, _ = self.run_script("true | quiet_failure | true\n")
        self.assertIn("(its statuses: 0 1 0)", r.stderr)

    def test_handled_failures_say_nothing(self):
        r, _, _ = self.run_script(textwrap.dedent("""\
            x=$(quiet_failure) || true
            if quiet_failure; then :; fi
            ! quiet_failure
            w=$(quiet_failure; echo ok) || true
            echo "done $w"
            """))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "done ok\n")
        self.assertEqual(r.stderr, "")

    def test_the_reason_goes_to_the_status_file(self):
        _, path, status = self.run_script("x=$(quiet_failure)\n", status_file=True)
        self.assertEqual(status, f"victim.sh: {path}:6: 'x=$(quiet_failure)' failed with status 1\n")
        _, _, status = self.run_script('shstk_die "the reason"\n', status_file=True)
        self.assertEqual(status, "victim.sh: the reason\n")


class EachArchTest(unittest.TestCase):
    """scripts/each-arch.sh: one line per arch, whatever became of it."""

    SCRIPT = textwrap.dedent("""\
        #!/usr/bin/env bash
        set -euo pipefail
        . "$SHSTK_TOP/scripts/lib/core.sh"
        case "$1" in
        x86_64) echo "step x86_64 running" >&2; echo "x86_64/qemu: 5 passed, 0 failed, 1 skipped" ;;
        arm64) x=$(cat /nonexistent 2>/dev/null) ;;
        riscv64) echo "riscv64/qemu: 3 passed, 2 failed, 0 skipped"; exit 1 ;;
        esac
        """)

    def each_arch(self, *args):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "step.sh")
            with open(path, "w") as f:
                f.write(self.SCRIPT)
            os.chmod(path, 0o755)
            # The host is not what this checks.
            return subprocess.run([os.path.join(TOP, "scripts", "each-arch.sh"), *args, path, "{arch}"],
                                  env=dict(os.environ, SHSTK_TOP=TOP, SHSTK_HOST_CHECKED="1"),
                                  capture_output=True, text=True, timeout=60)

    def summary(self, r):
        lines = r.stderr.splitlines()
        return [line.split("]", 1)[1].strip() for line in lines[-3:]]

    def test_one_line_per_arch(self):
        r = self.each_arch("run", "x86_64 arm64 riscv64")
        self.assertEqual(r.returncode, 1)
        x86, arm, riscv = self.summary(r)
        self.assertEqual(x86, "x86_64   5 passed, 0 failed, 1 skipped")
        self.assertRegex(arm, r"^arm64    did not run: step\.sh: .*step\.sh:6: "
                              r"'x=\$\(cat /nonexistent 2> /dev/null\)' failed with status 1$")
        self.assertEqual(riscv, "riscv64  3 passed, 2 failed, 0 skipped")

    def test_arches_the_emulator_does_not_emulate_are_left_out(self):
        r = self.each_arch("--emu", "bochs", "smoke", "x86_64 arm64 riscv64")
        self.assertEqual(r.returncode, 0, r.stderr)
        x86, arm, riscv = self.summary(r)
        self.assertEqual(x86, "x86_64   5 passed, 0 failed, 1 skipped")
        self.assertEqual(arm, "arm64    left out: EMU=bochs emulates x86_64 only (ARCH=arm64)")
        # ... and said so before the first arch ran.
        lines = r.stderr.splitlines()
        said = next(i for i, line in enumerate(lines) if "arm64: left out, EMU=bochs" in line)
        self.assertLess(said, lines.index("step x86_64 running"))

    def test_a_mistyped_emulator_runs_nothing_and_fails(self):
        r = self.each_arch("--emu", "bohcs", "run", "x86_64 arm64")
        self.assertEqual(r.returncode, 1)
        self.assertIn("error: unknown EMU 'bohcs'", r.stderr)

    def test_an_emulator_that_runs_no_arch_fails(self):
        r = self.each_arch("--emu", "bochs", "run", "arm64 riscv64")
        self.assertEqual(r.returncode, 1)
        self.assertIn("error: nothing ran: every architecture was left out (EMU=bochs; reasons above)", r.stderr)


class HostCheckTest(unittest.TestCase):
    """core.sh's shstk_host_check, which every entry point runs first."""

    def host_check(self, prefix=(), path=None):
        script = "set -euo pipefail; . scripts/lib/core.sh; " + \
            (f"PATH={path}; " if path is not None else "") + "shstk_host_check; echo checked"
        env = {k: v for k, v in os.environ.items() if k != "SHSTK_HOST_CHECKED"}
        return subprocess.run([*prefix, "bash", "-c", script], cwd=TOP, env=env,
                              capture_output=True, text=True, timeout=60)

    def test_a_missing_tool_is_named_with_its_package(self):
        with tempfile.TemporaryDirectory() as empty:
            r = self.host_check(path=empty)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("error: the host lacks git (package git), python3 (package python3), "
                      "flock (package util-linux)", r.stderr)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("setpriv"), "needs root and setpriv")
    def test_not_root_is_named_before_anything_else(self):
        with tempfile.TemporaryDirectory() as cache:
            os.chmod(cache, 0o777)
            r = self.host_check(prefix=["setpriv", "--reuid", "65534", "--regid", "65534",
                                        "--clear-groups", "env", f"SHSTK_CACHE={cache}",
                                        "SHSTK_TOOLBOX=yes"])
            self.assertEqual(os.listdir(cache), [], "something was made before the check")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("error: shstk-lab needs root", r.stderr)

    @unittest.skipUnless(os.geteuid() == 0, "needs root (or SHSTK_TOOLBOX=no and new enough host tools)")
    def test_the_host_here_passes(self):
        r = self.host_check()
        self.assertEqual((r.returncode, r.stdout), (0, "checked\n"), r.stderr)


if __name__ == "__main__":
    unittest.main()


class VmJsonKeysTest(unittest.TestCase):
    """Every key of vm.json a check reads is one scripts/vm/boot.sh writes:
    a renamed key would leave the check reading None."""

    def test_the_checks_read_what_boot_sh_writes(self):
        with open(os.path.join(TOP, "scripts", "vm", "boot.sh")) as f:
            line = next(ln for ln in f if ln.startswith("printf '{\"arch\""))
        written = set(re.findall(r'"([a-z_]+)": ', line))
        read = set()
        for name in os.listdir(os.path.join(TOP, "checks")):
            if name.endswith(".py"):
                with open(os.path.join(TOP, "checks", name)) as f:
                    read |= set(re.findall(r'\bvm(?:\.get\(|\[)"([a-z_]+)"', f.read()))
        self.assertIn("series_hash", read)
        self.assertEqual(read - written, set())
