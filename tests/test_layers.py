# SPDX-License-Identifier: GPL-2.0
"""The layers call one way: build -> VM -> gdb and trace -> checks.

scripts/lib/core.sh and spec/ are beneath every layer; scripts/build/ (with
scripts/lib/build.sh) makes what a boot needs; scripts/vm/ (with
scripts/lib/vm.sh) boots, stops and snapshots what it is given; checks/
judges files.  Each rule here is a grep: a call against the flow fails it
with the file and line.
"""
import ast
import os
import re
import subprocess
import unittest

from tests.test_harness import TOP


def tracked(*patterns):
    out = subprocess.run(["git", "ls-files", "--", *patterns], cwd=TOP, capture_output=True,
                         text=True, check=True).stdout
    return [p for p in out.splitlines() if os.path.exists(os.path.join(TOP, p))]


def grep(paths, pattern, code_only=False):
    """(path:line, text) of every line of PATHS that PATTERN matches; with
    CODE_ONLY, of the lines that are not comments."""
    rx = re.compile(pattern)
    hits = []
    for p in paths:
        with open(os.path.join(TOP, p), errors="replace") as f:
            for n, line in enumerate(f, 1):
                if code_only and line.lstrip().startswith("#"):
                    continue
                if rx.search(line):
                    hits.append((f"{p}:{n}", line.strip()))
    return hits


def calls(paths, functions):
    """Where PATHS call one of the shell FUNCTIONS: at the start of a
    command, not in a comment, a message or a longer name."""
    rx = re.compile(r"(^|;|&&|\|\||\||\$\(|\(|\b(then|do|else|if|elif|while|until|time)\b|!|\{ )"
                    r"\s*(%s)\b(?!\(\))" % "|".join(functions))
    strings = re.compile(r'"(\\.|[^"\\])*"|\'[^\']*\'')
    hits = []
    for p in paths:
        with open(os.path.join(TOP, p), errors="replace") as f:
            for n, line in enumerate(f, 1):
                if line.lstrip().startswith("#"):
                    continue
                if rx.search(strings.sub('""', line)):
                    hits.append((f"{p}:{n}", line.strip()))
    return hits


def imported(path):
    """The top-level package of every import in the Python file PATH."""
    with open(os.path.join(TOP, path)) as f:
        tree = ast.parse(f.read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def shell_functions(path):
    with open(os.path.join(TOP, path)) as f:
        return re.findall(r"^([a-z][a-z0-9_]*)\(\) *\{", f.read(), re.M)


# The project's own top-level Python packages and modules.
PROJECT = {"checks", "spec", "config", "gdb", "shstk", "tests", "qmp", "scripts", "trace",
           "newc", "mkinitramfs", "cpiodiff", "elfcheck", "series"}


class ShellLayersTest(unittest.TestCase):
    VM = tracked("scripts/vm/*.sh", "scripts/vm/emulators/*.sh", "scripts/lib/vm.sh")
    BUILD = tracked("scripts/build/*.sh", "scripts/lib/build.sh")

    def test_the_layers_are_there(self):
        # A rule over no files would pass for ever.
        self.assertGreaterEqual(len(self.VM), 4)
        self.assertGreaterEqual(len(self.BUILD), 6)

    def test_the_vm_layer_calls_no_build_gdb_or_checks(self):
        # Not even a comment's path: the VM layer is told what to boot.
        self.assertEqual(grep(self.VM, r"scripts/build|build/[a-z]+\.sh|checks\.|gdb/"), [])
        self.assertEqual(grep(self.VM, r"checks/", code_only=True), [])
        self.assertEqual(grep(self.VM, r"^\s*(\.|source) .*lib/build\.sh"), [])

    def test_the_build_layer_boots_nothing(self):
        self.assertEqual(grep(self.BUILD, r"scripts/vm|vm/boot\.sh|lib/vm\.sh|gdb/|checks[./]",
                              code_only=True), [])

    def test_the_vm_layer_uses_no_build_helper(self):
        helpers = shell_functions("scripts/lib/build.sh") + shell_functions("scripts/lib/entry.sh")
        self.assertIn("shstk_build_boot", helpers)
        self.assertEqual(calls(self.VM, helpers), [])
        # The rule can fail: build.sh itself calls its helpers.
        self.assertNotEqual(calls(["scripts/lib/build.sh"], helpers), [])

    def test_the_build_layer_uses_no_vm_helper(self):
        helpers = [f for f in shell_functions("scripts/lib/vm.sh") if not f.startswith("_")]
        self.assertIn("shstk_emu_vars", helpers)
        self.assertEqual(calls(self.BUILD, helpers), [])

    def test_only_entry_points_source_entry_sh(self):
        sourcing = {hit[0].split(":")[0] for hit in grep(
            tracked("scripts/*/*", "scripts/*/*/*"), r"^\s*(\.|source) .*lib/entry\.sh")}
        self.assertEqual(sourcing, set())
        self.assertGreaterEqual(len(grep(tracked("scripts/*.sh"), r"^\. .*lib/entry\.sh")), 10)

    def test_core_holds_only_what_more_than_the_vm_layer_uses(self):
        # A core helper whose only callers are in the VM layer belongs
        # in scripts/lib/vm.sh.
        others = [p for p in tracked("scripts/*", "scripts/*/*", "scripts/*/*/*", "Makefile")
                  if p not in self.VM and not p.endswith((".py", ".md"))]
        # Any use but its definition and comments: a trap's text counts.
        vm_only = [fn for fn in shell_functions("scripts/lib/core.sh")
                   if not fn.startswith("_")
                   and not grep(others, r"\b%s\b(?!\(\))" % fn, code_only=True)]
        self.assertEqual(vm_only, [])


class HelperSignatureTest(unittest.TestCase):
    """Every public helper of scripts/lib/ says how it is called, in the
    comment above it ("#   NAME ARGS..."): a reader of a script need not
    open the function to call it right."""

    def test_every_helper_carries_the_prefix(self):
        """shstk_ for a public helper, _shstk_ for a private one: a script's
        own functions (build, configure, ...) never pass for the library's."""
        bare = []
        for lib in tracked("scripts/lib/*.sh"):
            with open(os.path.join(TOP, lib)) as f:
                names = re.findall(r"^([a-z_][a-z0-9_]*)\(\) *\{", f.read(), re.M)
            self.assertTrue(names, lib)
            for name in names:
                if not name.startswith(("shstk_", "_shstk_")):
                    bare.append(f"{lib}: {name}")
        self.assertEqual(bare, [])

    def test_every_public_helper_has_its_signature(self):
        missing = []
        for lib in tracked("scripts/lib/*.sh"):
            with open(os.path.join(TOP, lib)) as f:
                lines = f.read().split("\n")
            for i, line in enumerate(lines):
                m = re.match(r"([a-z][a-z0-9_]*)\(\) *\{", line)
                if not m:
                    continue
                block = []
                j = i - 1
                # One-line definitions in a row share the comment above them.
                while j >= 0 and (lines[j].startswith("#") or re.match(r"[a-z_]+\(\) *\{.*\}$", lines[j])):
                    block.append(lines[j])
                    j -= 1
                if not any(re.match(r"#\s+(.*; )?%s\b" % m.group(1), b) or
                           re.search(r"\b%s [A-Z\[]" % m.group(1), b) for b in block):
                    missing.append(f"{lib}:{i + 1} {m.group(1)}")
        self.assertEqual(missing, [])


class ArchInOnePlaceTest(unittest.TestCase):
    """No code outside the arch's own places (docs/pipeline.md, "What must
    change to add an arch?") tests which arch it runs on."""

    TEST = re.compile(r"""(ARCH"?\s*!?=|arch\s*[!=]=|Architecture\.)\s*"?(x86_64|arm64|riscv64|[A-Z])"""
                      r"""|case\s+"?\$\{?ARCH\}?"?\s+in""")

    def test_no_arch_test_outside_the_per_arch_places(self):
        own = {"gdb/shstk/archops.py", "scripts/vm/emulators/bochs.sh"}
        paths = [p for p in tracked("*.py", "*.sh") if p not in own and not p.startswith("tests/")]
        self.assertEqual(grep(paths, self.TEST.pattern, code_only=True), [])


class PythonLayersTest(unittest.TestCase):
    def imports_of(self, pattern):
        return {p: imported(p) & PROJECT for p in tracked(pattern)}

    def test_spec_imports_nothing_of_the_project(self):
        found = self.imports_of("spec/*.py")
        self.assertGreaterEqual(len(found), 2)
        self.assertEqual({p: i - {"spec"} for p, i in found.items() if i - {"spec"}}, {})

    def test_checks_judge_files_only(self):
        found = self.imports_of("checks/*.py")
        self.assertGreaterEqual(len(found), 5)
        self.assertEqual({p: i - {"checks", "spec", "config"} for p, i in found.items()
                          if i - {"checks", "spec", "config"}}, {})

    def test_gdb_reads_and_checks_judge(self):
        # The drgn oracle's reading is gdb/shstk/coredump.py's, its
        # comparison checks/oracle.py's.
        found = {**self.imports_of("gdb/*.py"), **self.imports_of("gdb/shstk/*.py")}
        self.assertGreaterEqual(len(found), 10)
        self.assertEqual([p for p, i in found.items() if "checks" in i], [])

    def test_the_vm_layers_python_imports_only_the_shared_libraries(self):
        found = self.imports_of("scripts/vm/*.py")
        self.assertIn("scripts/vm/qmp.py", found)
        self.assertEqual(found["scripts/vm/cpiodiff.py"], {"newc"})
        self.assertEqual({p: i - {"newc"} for p, i in found.items() if i - {"newc"}}, {})

    def test_the_build_layers_python_boots_nothing(self):
        found = self.imports_of("scripts/build/*.py")
        self.assertIn("scripts/build/mkinitramfs.py", found)
        allowed = {"newc", "spec", "config"}
        self.assertEqual({p: i - allowed for p, i in found.items() if i - allowed}, {})


if __name__ == "__main__":
    unittest.main()
