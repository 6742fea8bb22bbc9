# SPDX-License-Identifier: GPL-2.0
"""The harness under bad input and faults: every entry point fails with a
clear one-line error and a non-zero exit, and leaves nothing running.

The tests that boot a VM need the kernels built (make kernel); without them
they are skipped, saying so.
"""
import os
import signal
import shutil
import subprocess
import tempfile
import time
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cache_dir(env):
    """Where the cache is for this environment: as scripts/lib/core.sh decides."""
    xdg = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return env.get("SHSTK_CACHE") or os.path.join(xdg, "shstk-lab")


CACHE = cache_dir(os.environ)
SRC = os.path.join(CACHE, "src", "linux")
# The image QEMU boots: a Bochs run has its build make the bzImage too.
IMAGES = {"arm64": "build/arm64/arch/arm64/boot/Image",
          "x86_64": "build/x86_64/vmlinux.stripped"}


def run(*cmd, env=None, timeout=120):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(list(cmd), cwd=TOP, env=e, capture_output=True, text=True,
                          timeout=timeout)


def emulators_running(tag):
    """Emulator processes whose command line mentions @tag."""
    r = subprocess.run(["pgrep", "-af", "qemu-system|bochs"], capture_output=True, text=True)
    return [line for line in r.stdout.splitlines() if tag in line]


def default_sigint():
    """In the script's process, before exec: SIGINT as a terminal's job has
    it.  A test run started in the background by a non-interactive shell
    (nohup ... &) inherits SIGINT ignored, which bash can neither trap nor
    reset, and every Ctrl-C test would then time out for the launcher's
    sake, not the harness's."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def kernel_built(arch):
    return os.path.exists(os.path.join(CACHE, IMAGES[arch]))


LIBS = ". scripts/lib/entry.sh"


class CacheDirTest(unittest.TestCase):
    def test_same_cache_as_the_scripts(self):
        # The tests look for the kernels where the scripts put them.
        for extra in ({}, {"XDG_CACHE_HOME": "/nowhere/xdg"},
                      {"XDG_CACHE_HOME": "/nowhere/xdg", "SHSTK_CACHE": "/nowhere/shstk"}):
            env = {k: v for k, v in os.environ.items() if k not in ("SHSTK_CACHE", "XDG_CACHE_HOME")}
            env.update(extra)
            r = subprocess.run(["bash", "-c", ". scripts/lib/core.sh; echo $SHSTK_CACHE"], cwd=TOP,
                               env=env, capture_output=True, text=True, timeout=30)
            self.assertEqual(r.stdout.strip(), cache_dir(env), extra)


class CheckedBuildsTest(unittest.TestCase):
    """build.sh's shstk_build_checked: only make test's list, only what is there."""

    def ask(self, script, listed):
        with tempfile.TemporaryDirectory() as d:
            built = os.path.join(d, "built")
            open(built, "w").close()
            env = {k: v for k, v in os.environ.items() if k != "SHSTK_CHECKED_BUILDS"}
            if listed:
                env["SHSTK_CHECKED_BUILDS"] = os.path.join(d, "checked")
                open(env["SHSTK_CHECKED_BUILDS"], "w").close()
            r = subprocess.run(["bash", "-c", ". scripts/lib/core.sh; . scripts/lib/build.sh; " + script, "-", built,
                                os.path.join(d, "gone")],
                               cwd=TOP, env=env, capture_output=True, text=True, timeout=30)
            return r.returncode

    def test_current_once_then_checked(self):
        self.assertEqual(self.ask('shstk_build_checked "$1"', True), 1)
        self.assertEqual(self.ask('shstk_build_current "$1"; shstk_build_checked "$1"', True), 0)

    def test_not_outside_make_test(self):
        self.assertEqual(self.ask('shstk_build_current "$1"; shstk_build_checked "$1"', False), 1)

    def test_not_when_the_output_is_gone(self):
        self.assertEqual(self.ask('shstk_build_current "$2"; shstk_build_checked "$2"', True), 1)
        self.assertEqual(self.ask('shstk_build_current "$2"; shstk_build_checked "$1"', True), 1)


def gone(pid, seconds=5):
    """Whether process @pid ends (or is a zombie) within @seconds."""
    for _ in range(seconds * 20):
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] in "ZX":
                    return True
        except FileNotFoundError:
            return True
        subprocess.run(["sleep", "0.05"])
    return False


class ChildTreeTest(unittest.TestCase):
    """A child of shstk_start_child is stopped with everything under it:
    the tool it waits for as well, not the script alone, whether it runs
    that tool in the background or in its foreground (where a TERM to the
    script alone waits for the tool's end before any trap runs)."""

    # Each writes its sleep's pid to the file named by $1.
    BACKGROUND = """bash -c 'sleep 120 & echo $! >"$1"; wait' - "$1" """
    FOREGROUND = """bash -c 'trap "exit 143" TERM; sh -c "echo \\$\\$ >\\"\\$1\\"; exec sleep 120" - "$1"; echo x' - "$1" """

    def grandchild(self, script, sig=None, child=BACKGROUND, before=""):
        with tempfile.TemporaryDirectory() as d:
            pidfile = os.path.join(d, "pid")
            setup = (before + ". scripts/lib/core.sh; shstk_start_child " + child + ">/dev/null; "
                     'until [ -s "$1" ]; do sleep 0.05; done; ')
            p = subprocess.Popen(["bash", "-c", setup + script, "-", pidfile], cwd=TOP,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 preexec_fn=default_sigint)
            try:
                if sig:
                    for _ in range(100):
                        if os.path.exists(pidfile) and os.path.getsize(pidfile):
                            break
                        subprocess.run(["sleep", "0.05"])
                    p.send_signal(sig)
                out, _ = p.communicate(timeout=30)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
                with open(pidfile) as f:
                    pid = int(f.read())
                self.addCleanup(self.kill_if_running, pid)
        return p.returncode, out, pid

    @staticmethod
    def kill_if_running(pid):
        """The test's own sleep, if a failure left it: never a process that
        got its pid since."""
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if f.read().split(b"\0")[:2] != [b"sleep", b"120"]:
                    return
            os.kill(pid, signal.SIGKILL)
        except (FileNotFoundError, ProcessLookupError):
            pass

    def test_stop_child_stops_what_it_runs(self):
        rc, out, pid = self.grandchild('shstk_stop_child "$CHILD_PID"; echo stopped')
        self.assertEqual((rc, out.strip()), (0, "stopped"))
        self.assertTrue(gone(pid), "pid %d (the child's own child) still runs" % pid)

    def test_term_to_the_script_stops_what_its_child_runs(self):
        rc, out, pid = self.grandchild("shstk_wait_children; echo not reached", signal.SIGTERM)
        self.assertEqual(rc, 143, out)
        self.assertNotIn("not reached", out)
        self.assertTrue(gone(pid), "pid %d (the child's own child) still runs" % pid)

    def test_term_reaches_the_tool_a_child_runs_in_its_foreground(self):
        rc, out, pid = self.grandchild("shstk_wait_children; echo not reached", signal.SIGTERM,
                                       child=self.FOREGROUND)
        self.assertEqual(rc, 143, out)
        self.assertNotIn("not reached", out)
        self.assertTrue(gone(pid), "pid %d (the child's foreground tool) still runs" % pid)

    def test_a_message_nowhere_to_go_stops_nothing_short(self):
        # The trap's message to a full disk or a closed pipe fails; the
        # children are stopped all the same, and the status is the signal's.
        rc, out, pid = self.grandchild("shstk_wait_children; echo not reached", signal.SIGTERM,
                                       child=self.FOREGROUND, before="set -e; exec 2>/dev/full; ")
        self.assertEqual(rc, 143, out)
        self.assertTrue(gone(pid), "pid %d (the child's foreground tool) still runs" % pid)


class BuildFailedTest(unittest.TestCase):
    """A build stopped by a signal says so; a failed one shows its log."""

    def failed(self, statuses, interrupted=""):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "build.log")
            with open(log, "w") as f:
                f.write("cc1: error: the last line\n")
            return subprocess.run(["bash", "-c", LIBS + '; shstk_build_failed "$1" "$2" "the build" "$3"',
                                   "-", statuses, log, interrupted], cwd=TOP, capture_output=True,
                                  text=True, timeout=60)

    def test_stopped(self):
        for statuses, interrupted in (("130 0 0", ""), ("143 0 0", ""), ("2 0 0", "2")):
            r = self.failed(statuses, interrupted)
            self.assertEqual(r.returncode, 1)
            self.assertIn(f"error: the build stopped (status {statuses.split()[0]}: a Ctrl-C or TERM)",
                          r.stderr)
            self.assertNotIn("the last line", r.stderr)

    def test_failed(self):
        # A compiler's error, the OOM killer, the progress filter failing.
        for statuses in ("2 0 0", "137 0 0", "0 0 2"):
            r = self.failed(statuses)
            self.assertEqual(r.returncode, 1)
            self.assertIn("cc1: error: the last line", r.stderr)
            self.assertIn("error: the build failed (full log: ", r.stderr)


class EmulatorBuildBesideTest(unittest.TestCase):
    """entry.sh's emulator build beside the kernel's, with a stub for the
    build command: its output read at the end, its failure named, and a
    failed step beside it stopping it whole."""

    def run_with(self, build, body):
        with tempfile.TemporaryDirectory() as d:
            script = (LIBS + "; EMU=stub ARCH=x86_64; "
                      "shstk_emulator_build_command() { local -n c=$1; c=(bash -c \"$BUILD\"); }; "
                      "_shstk_emulator_build_start run; " + body)
            r = subprocess.run(["bash", "-c", script], cwd=TOP, capture_output=True, text=True,
                               timeout=60, env=dict(os.environ, BUILD=build, D=d))
            pid = None
            if os.path.exists(os.path.join(d, "pid")):
                with open(os.path.join(d, "pid")) as f:
                    pid = int(f.read())
                self.addCleanup(ChildTreeTest.kill_if_running, pid)
        return r, pid

    def test_output_read_once_done(self):
        r, _ = self.run_with("echo /x/qemu; echo patched qemu",
                             '_shstk_emulator_build_finish; echo "$SHSTK_EMU_BIN|$SHSTK_EMU_DESCRIPTION"')
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "/x/qemu|patched qemu"), r.stderr)

    def test_a_failed_build_is_named(self):
        r, _ = self.run_with("exit 3", "_shstk_emulator_build_finish; echo not reached")
        self.assertEqual(r.returncode, 1)
        self.assertNotIn("not reached", r.stdout)
        self.assertIn("building stub for x86_64 failed (bash -c exit 3, status 3", r.stderr)

    def test_a_failed_step_beside_it_stops_it(self):
        # The stub's output away from the test's pipes: a failure must not hang it.
        r, pid = self.run_with('exec 2>/dev/null; sleep 120 >/dev/null & echo $! >"$D/pid"; wait',
                               'until [ -s "$D/pid" ]; do sleep 0.05; done; '
                               "false || _shstk_emulator_build_abandon; echo not reached")
        self.assertEqual(r.returncode, 1)
        self.assertNotIn("not reached", r.stdout)
        self.assertIn("stopping the stub build beside it", r.stderr)
        self.assertTrue(gone(pid), "pid %d (the build's own child) still runs" % pid)


class SnapshotWordsTest(unittest.TestCase):
    """vm.sh shstk_snapshot_words: which words of a run's command line are its
    snapshot's (the kernel's, and what init acts on before the snapshot
    point) and which the payload brings."""

    def split(self, cmdline):
        r = subprocess.run(["bash", "-c", '. scripts/lib/core.sh; . scripts/lib/vm.sh; shstk_snapshot_words "$1"; '
                            'printf "%s\\n" "$SNAPSHOT_KWORDS" "$SNAPSHOT_IWORDS"', "-", cmdline],
                           cwd=TOP, capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.splitlines()

    def test_kernel_init_and_trace_words(self):
        kwords, iwords = self.split(
            "console=ttyS0 panic=-1 shstk.out=/dev/hvc0 shstk.trace=a,b shstk.trace_comm=prog "
            "shstk.rootfs=/dev/vda shstk.why=no_CET SHSTK_XSAVE_SECONDS=1 nopku")
        self.assertEqual(kwords, "console=ttyS0 panic=-1 shstk.trace=a,b shstk.trace_comm=prog "
                                 "shstk.rootfs=/dev/vda nopku")
        self.assertEqual(iwords, "shstk.out=/dev/hvc0 shstk.why=no_CET SHSTK_XSAVE_SECONDS=1")


class FileSha256Test(unittest.TestCase):
    """vm.sh shstk_file_sha256: sha256sum's answer, kept until the file changes."""

    def sha(self, path):
        r = subprocess.run(["bash", "-c", '. scripts/lib/core.sh; . scripts/lib/vm.sh; shstk_file_sha256 "$1"', "-", path],
                           cwd=TOP, capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        return r.stdout.strip()

    def test_kept_and_renewed(self):
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "image")
            with open(f, "w") as fh:
                fh.write("one\n")
            want = subprocess.run(["sha256sum"], stdin=open(f), capture_output=True,
                                  text=True).stdout.strip()
            self.assertEqual(self.sha(f), want)
            self.assertTrue(os.path.exists(f + ".sha256"))
            self.assertEqual(self.sha(f), want)
            # Same size, another mtime: worked out again.
            with open(f, "w") as fh:
                fh.write("two\n")
            os.utime(f, (1, 1))
            self.assertNotEqual(self.sha(f), want)
            # A kept answer for another file state is not believed.
            with open(f + ".sha256", "w") as fh:
                fh.write("0 0 0\nbogus  -\n")
            self.assertNotEqual(self.sha(f), "bogus  -")


class SnapshotBaseTest(unittest.TestCase):
    """build.sh shstk_guest_snapshot_base: the base guest.sh made with the image,
    while it is still the one there; otherwise guest.sh is asked (here a
    stand-in)."""

    def base(self, initrd, top):
        # SHSTK_TOP names a stand-in tree whose build/guest.sh says it ran.
        r = subprocess.run(["bash", "-c", '. scripts/lib/core.sh; . scripts/lib/build.sh; '
                            'SHSTK_TOP=$2; ARCH=x86_64; shstk_guest_snapshot_base "$1"',
                            "-", initrd, top], cwd=TOP, capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.strip()

    def test_recorded_base_or_guest_sh(self):
        with tempfile.TemporaryDirectory() as d:
            top = os.path.join(d, "top")
            os.makedirs(os.path.join(top, "scripts", "build"))
            stand_in = os.path.join(top, "scripts", "build", "guest.sh")
            with open(stand_in, "w") as f:
                f.write("#!/bin/sh\necho \"guest.sh $*\"\n")
            os.chmod(stand_in, 0o755)
            initrd = os.path.join(d, "run.cpio.gz")
            base = os.path.join(d, "snapshot-base.cpio.gz")
            for path, text in ((initrd, "run"), (base, "base"), (base + ".key", "k1\n"),
                               (initrd + ".snapshot-base", "k1\n")):
                with open(path, "w") as f:
                    f.write(text)
            self.assertEqual(self.base(initrd, top), base)
            # Another build replaced the base since: made (asked) again.
            with open(base + ".key", "w") as f:
                f.write("k2\n")
            self.assertEqual(self.base(initrd, top), "guest.sh x86_64 --snapshot-base")
            # An image guest.sh did not make: no record beside it.
            os.unlink(initrd + ".snapshot-base")
            self.assertEqual(self.base(initrd, top), "guest.sh x86_64 --snapshot-base")

    def test_the_vm_layer_is_given_the_base(self):
        # The VM layer builds nothing: without a base from its caller a
        # snapshot boot stops, saying who makes it.
        script = ". scripts/lib/core.sh; . scripts/lib/vm.sh; shstk_snapshot_base b; echo \"$b\""
        r = subprocess.run(["bash", "-c", script], cwd=TOP, capture_output=True, text=True,
                           timeout=30, env={k: v for k, v in os.environ.items()
                                            if k != "SHSTK_SNAPSHOT_BASE"})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("shstk_build_boot", r.stderr)
        with tempfile.NamedTemporaryFile() as f:
            r = subprocess.run(["bash", "-c", script], cwd=TOP, capture_output=True, text=True,
                               timeout=30, env=dict(os.environ, SHSTK_SNAPSHOT_BASE=f.name))
            self.assertEqual((r.returncode, r.stdout.strip()), (0, f.name), r.stderr)


class BackendTest(unittest.TestCase):
    """What scripts/vm/emulators/*.sh declare, as make test sees them."""

    def emu(self, script, env=None, arch="x86_64"):
        r = subprocess.run(["bash", "-c", f"{LIBS}; shstk_arch_vars {arch}; " + script], cwd=TOP,
                           env={**os.environ, **(env or {})}, capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.split()

    def test_only_the_patched_qemu_is_built(self):
        show = 'shstk_emulator_build_command c; echo "${#c[@]}" "${c[@]:1}"'
        self.assertEqual(self.emu("shstk_emu_vars qemu; " + show), ["2", "x86_64"])
        self.assertEqual(self.emu("shstk_emu_vars qemu; " + show, {"SHSTK_QEMU": "stock"}), ["0"])
        # One build per arch that has one (config/arches.ini qemu_from_source),
        # by default where its qemu_default says so.
        self.assertEqual(self.emu("shstk_emu_vars qemu; " + show, arch="riscv64"), ["2", "riscv64"])
        self.assertEqual(self.emu("shstk_emu_vars qemu; " + show, {"SHSTK_QEMU": "stock"},
                                  arch="riscv64"), ["0"])
        self.assertEqual(self.emu("shstk_emu_vars qemu; " + show, arch="arm64"), ["0"])
        self.assertEqual(self.emu("shstk_emu_vars qemu; " + show, {"SHSTK_QEMU": "patched"},
                                  arch="arm64"), ["0"])

    def test_no_qemu_build_for_an_arch_without_one(self):
        r = subprocess.run(["scripts/build/qemu.sh", "arm64"], cwd=TOP, capture_output=True,
                           text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("qemu_from_source = no", r.stderr)
        r = subprocess.run(["scripts/build/qemu.sh"], cwd=TOP, capture_output=True, text=True,
                           timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("usage: build/qemu.sh ARCH", r.stderr)

    def test_bochs_build_names_its_configuration(self):
        r = subprocess.run(["scripts/build/bochs.sh"], cwd=TOP, capture_output=True, text=True,
                           timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("usage: scripts/build/bochs.sh run|gdbstub|all", r.stderr)

    def test_a_backends_functions_do_not_outlive_it(self):
        # make test sources one backend after the other in one shell: after
        # Bochs's (the project's Bochs to build), a stock QEMU has nothing
        # to build, and an arch Bochs does not emulate has no Bochs left.
        show = 'shstk_emulator_build_command c; echo "${#c[@]}"'
        self.assertEqual(self.emu("shstk_emu_vars bochs; " + show), ["2"])
        # Both of Bochs's builds for make test's step, the gdbstub one for
        # gdb, the faster one for a run.
        args = 'shstk_emulator_build_command c {}; echo "${{c[*]#$SHSTK_TOP/}}"'
        for purpose, config in (("", "all"), ("all", "all"), ("gdb", "gdbstub"), ("run", "run")):
            self.assertEqual(self.emu("shstk_emu_vars bochs; " + args.format(purpose)),
                             ["scripts/build/bochs.sh", config])
        self.assertEqual(self.emu("shstk_emu_vars bochs; shstk_emu_vars qemu; " + show,
                                  {"SHSTK_QEMU": "stock"}), ["0"])
        out = self.emu("shstk_emu_vars bochs; shstk_arch_vars arm64; shstk_emu_vars qemu; " + show)
        self.assertEqual(out, ["0"])

    def test_a_kasan_kernel_boots_its_boot_image(self):
        # x86 under QEMU boots vmlinux through PVH, which enters KASAN's
        # instrumented code before its shadow exists: a KASAN kernel's
        # boot image instead.
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "arch/x86/boot"))
            for f in ("arch/x86/boot/bzImage", "vmlinux.stripped"):
                open(os.path.join(d, f), "w").close()
            show = 'KERNEL=$1/$KIMAGE; qemu_kernel k; echo "${k#$1/}"'
            for config, want in (("CONFIG_KASAN=y\n", "arch/x86/boot/bzImage"),
                                 ("# CONFIG_KASAN is not set\n", "vmlinux.stripped")):
                with self.subTest(config=config):
                    with open(os.path.join(d, ".config"), "w") as f:
                        f.write(config)
                    r = subprocess.run(["bash", "-c", LIBS + "; shstk_arch_vars x86_64; "
                                        "shstk_emu_vars qemu; " + show, "-", d], cwd=TOP,
                                       capture_output=True, text=True, timeout=30)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertEqual(r.stdout.split(), [want])

    def test_the_snapshot_key_follows_its_inputs_and_writes_nothing_here(self):
        # A snapshot restored into another machine than it was saved from
        # fails; one made again for every run is a cold boot each time.
        with tempfile.TemporaryDirectory() as d:
            image, base = os.path.join(d, "image"), os.path.join(d, "base")
            binary = os.path.join(d, "qemu-system-x86_64")
            for path in (image, base, binary):
                with open(path, "w") as f:
                    f.write("one")
            show = (f'export SHSTK_EMU_BIN={binary} SHSTK_EMU_DESCRIPTION=d; shstk_emu_vars qemu; '
                    f'qemu_snapshot_key {image} {base} "console=ttyS0"')
            key = self.emu(show)
            self.assertEqual(len(key[0]), 16)
            self.assertEqual(self.emu(show), key)
            self.assertNotEqual(self.emu(show, {"SHSTK_ROOTFS": base}), key)
            self.assertNotEqual(self.emu("GDB_PORT=1; " + show), key)
            for path in (image, binary):
                with open(path, "w") as f:
                    f.write("two")
                new = self.emu(show)
                self.assertNotEqual(new, key, path)
                key = new
        self.assertFalse(os.path.exists(os.path.join(TOP, "scripts", "vm", "emulators", "qemu.sh.sha256")))

    def test_cet_where_the_qemu_has_it(self):
        show = 'echo "${EMU_NO_SHSTK_WHY:-none}" | tr " " _; echo "${EMU_SSP_REGISTER:-none}"'
        self.assertEqual(self.emu("shstk_emu_vars qemu; " + show), ["none", "pl3_ssp"])
        why, reg = self.emu("shstk_emu_vars qemu; " + show, {"SHSTK_QEMU": "stock"})
        self.assertIn("does_not_emulate_CET", why)
        self.assertEqual(reg, "none")


class BadInputTest(unittest.TestCase):
    def assert_error(self, r, words):
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        errors = [line for line in r.stderr.splitlines() if "error:" in line or "PROG=" in line]
        self.assertTrue(errors, r.stderr)
        self.assertIn(words, errors[-1])

    def test_unknown_arch(self):
        self.assert_error(run("scripts/run.sh", "run", "sparc"), "unknown ARCH 'sparc'")
        r = run("make", "--no-print-directory", "kernel", "ARCH=sparc")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("unknown ARCH 'sparc'", r.stderr)

    def test_unknown_emu(self):
        self.assert_error(run("scripts/run.sh", "run", "x86_64", "vbox"), "unknown EMU 'vbox'")
        self.assert_error(run("scripts/run.sh", "run", "arm64", "bochs"), "x86_64 only")

    def test_bad_qemu_setting(self):
        env = {**os.environ, "SHSTK_QEMU": "bogus"}
        r = subprocess.run(["scripts/run.sh", "smoke", "x86_64"], cwd=TOP, env=env,
                           capture_output=True, text=True, timeout=60)
        self.assert_error(r, "must be patched or stock (is 'bogus')")
        # make test stops before its first step, and before it touches
        # out/test (a make test may be running there: this test is one of
        # its steps).
        with tempfile.TemporaryDirectory() as out:
            r = subprocess.run(["scripts/test.sh", "x86_64"], cwd=TOP,
                               env={**env, "SHSTK_OUT": out},
                               capture_output=True, text=True, timeout=60)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("must be patched or stock", r.stderr)
            self.assertNotIn("== toolbox", r.stderr)
            self.assertFalse(os.path.exists(os.path.join(out, "test")))

    def test_unknown_mode(self):
        self.assert_error(run("scripts/run.sh", "boot", "arm64"), "unknown mode 'boot'")

    def test_prog_missing(self):
        self.assert_error(run("scripts/run.sh", "run", "arm64", "qemu", "/nonexistent/prog"),
                          "does not exist")

    def test_prog_dynamic_or_wrong_arch(self):
        # The host's /bin/true: an x86_64 program, dynamically linked.
        self.assert_error(run("scripts/run.sh", "run", "arm64", "qemu", "/bin/true"),
                          "built for x86_64, not arm64")
        self.assert_error(run("scripts/run.sh", "run", "x86_64", "qemu", "/bin/true"),
                          "dynamically linked")

    def test_prog_not_elf(self):
        self.assert_error(run("scripts/run.sh", "run", "x86_64", "qemu", "README.md"),
                          "not an ELF file")

    def test_unknown_kconfig_variant(self):
        # Refused before anything is made in the cache for it.
        with tempfile.TemporaryDirectory() as cache:
            r = run("scripts/build/kernel.sh", "arm64",
                    env={"SHSTK_KCONFIG_VARIANT": "nosuch", "SHSTK_CACHE": cache})
            self.assert_error(r, "no config fragment config/kernel/nosuch.config")
            self.assertEqual(os.listdir(cache), [])

    def test_fuzz_defaults_to_the_debug_kernel(self):
        # An unset variable that make exports reaches the script as empty,
        # which would silently fuzz the normal kernel.
        def kconfig(*args):
            r = run("make", "-pn", "fuzz", "ARCH=arm64", *args)
            return [line for line in r.stdout.splitlines() if line.startswith("KCONFIG ")]
        self.assertEqual(kconfig(), ["KCONFIG = debug"])
        self.assertEqual(kconfig("KCONFIG="), ["KCONFIG = "])

    def test_fuzz_numbers(self):
        # Checked before anything is built or booted.
        for var, value in (("JOBS", "two"), ("CALLS", "1e5"), ("ROUNDS", "-1"), ("JOBS", "0")):
            with self.subTest(var=var, value=value):
                r = run("scripts/fuzz.sh", "arm64", env={var: value})
                self.assert_error(r, f"{var}={value}")
        self.assert_error(run("scripts/fuzz.sh", "arm64", env={"SEED": "0xnothex"}),
                          "SEED=nothex is not a 64-bit hex number")

    def test_unknown_trace_script(self):
        self.assert_error(run("scripts/trace.sh", "arm64", "qemu", "nosuch"),
                          "no trace script trace/nosuch.bt")

    def test_bad_toolbox_setting(self):
        r = run("scripts/tools/tb", "true", env={"SHSTK_TOOLBOX": "maybe"})
        self.assert_error(r, "SHSTK_TOOLBOX must be auto, yes or no")

    @unittest.skipUnless(os.geteuid() == 0, "the toolbox's mounts need root")
    def test_mount_tables_of_killed_tools_are_removed(self):
        # A root with no /bin/sh: the chroot fails after the mounts, which
        # is all this needs.  A dead tool's table goes once a minute old; a
        # live one's stays, and so does a new one (perhaps another pid
        # namespace's).
        dead = []
        for _ in range(2):
            p = subprocess.Popen(["true"])
            p.wait()
            dead.append(p.pid)
        with tempfile.TemporaryDirectory() as tmp:
            root = os.path.join(tmp, "root")
            os.mkdir(root)
            old = time.time() - 120
            for pid, age in ((dead[0], old), (os.getpid(), old), (dead[1], None)):
                open(f"{root}.fstab.{pid}", "w").close()
                if age:
                    os.utime(f"{root}.fstab.{pid}", (age, age))
            run("scripts/tools/tb", "--root", root, "--raw", "true")
            self.assertEqual(sorted(os.listdir(tmp)),
                             sorted(["root", f"root.fstab.{dead[1]}", f"root.fstab.{os.getpid()}"]))

    def test_download_failure_is_named(self):
        # A fresh cache and a mirror nobody answers on: the kernel source
        # download fails at once, and says which.
        # apt's own retries only add their backoff to what is checked.
        with tempfile.TemporaryDirectory() as cache:
            conf = os.path.join(cache, "apt.conf")
            with open(conf, "w") as f:
                f.write('Acquire::Retries "0";\n')
            r = run("scripts/build/kernel-source.sh", "--check",
                    env={"SHSTK_CACHE": cache, "SHSTK_MIRROR": "http://127.0.0.1:9/debian",
                         "APT_CONFIG": conf})
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stderr, r"error: (apt update \(project-local\) failed|could not download)")

    @unittest.skipUnless(os.path.isdir(os.path.join(SRC, ".git")),
                         "no kernel tree in the cache yet (make check-series fetches it)")
    def test_patch_that_no_longer_applies_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            for d in ("scripts", "patches", "config"):
                shutil.copytree(os.path.join(TOP, d), os.path.join(tmp, d))
            with open(os.path.join(tmp, "patches", "series")) as f:
                series = [line.strip() for line in f if line.strip() and not line.startswith("#")]
            victim = [p for p in series if p.startswith("0004")][0]
            path = os.path.join(tmp, "patches", victim)
            with open(path) as f:
                text = f.read()
            # Corrupt a context line of the first hunk in kernel/fork.c.
            text = text.replace(" \tif (unlikely(usize > PAGE_SIZE))",
                                " \tif (unlikely(usize > PAGE_SIZE * 2))", 1)
            with open(path, "w") as f:
                f.write(text)
            r = subprocess.run([os.path.join(tmp, "scripts", "build", "kernel-source.sh"), "--check"],
                               capture_output=True, text=True, timeout=300)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"patch {series.index(victim) + 1}/{len(series)} ({victim}) does not apply",
                      r.stderr)


if __name__ == "__main__":
    unittest.main()
