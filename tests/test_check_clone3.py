# SPDX-License-Identifier: GPL-2.0
"""gdb/check_clone3.py with gdb mocked: nothing happens at import, one
handler per stop, the expectations from spec/scenario.py."""
import importlib.util
import io
import json
import os
import unittest
from unittest import mock

from tests import gdbmock

gdb = gdbmock.install()


def load():
    spec = importlib.util.spec_from_file_location(
        "check_clone3", os.path.join(gdbmock.TOP, "gdb", "check_clone3.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ImportTest(unittest.TestCase):
    def test_import_sets_no_breakpoint_and_attaches_to_nothing(self):
        state = gdbmock.reset("arm64")
        with mock.patch.dict(os.environ, {}, clear=True):
            module = load()
        self.assertEqual(state.breakpoints, [])
        self.assertFalse([n for n in vars(module) if n in ("log", "last_hit", "SHSTK_ON")])


class HandlerTest(unittest.TestCase):
    cc = load()

    def run_for(self, arch, emu="qemu", shstk_on=True):
        gdbmock.reset(arch)
        run = self.cc.Run(io.StringIO(), arch, emu)
        run.shstk_on = shstk_on
        return run

    def steps(self, run):
        return [json.loads(line) for line in run.log.getvalue().splitlines()]

    def test_every_stop_has_a_handler(self):
        self.assertEqual(set(self.cc.HANDLERS), {"entry", "alloc", "alloc_ret", "validate",
                                                 "validate_ret", "newtask", "child", "parent"})
        for case in ("valid", "misaligned", "no_token", "normal", "reused"):
            for on in (True, False):
                self.assertTrue(set(self.cc.scenario.gdb_path(case, on)) <= set(self.cc.HANDLERS))

    def child_stop(self, arch, registers, symbols=()):
        run = self.run_for(arch, "bochs" if arch == "x86_64" else "qemu")
        gdbmock.STATE.symbols.update(symbols)
        case = self.cc.Case("valid")
        case.token = 0x7f0000000ff8
        task = gdbmock.struct("task_struct", 0x1000, pid=9)
        gdbmock.STATE.current_task = gdbmock.pointer(task)
        gdbmock.STATE.frame = gdbmock.Frame(registers=registers)
        ok = self.cc.on_child(run, case)
        return ok, self.steps(run)[-1]

    def validate_stop(self, symbols, stop, caller, hook_arg):
        """on_validate() for an accepted token at @stop, whose caller frame
        is @caller and whose first argument is @hook_arg (None: a pointer to
        the task of the arch's own check): (ok, the step log, task_mm's
        calls, the Return made)."""
        from shstk import commands, usermem
        run = self.run_for("x86_64")
        gdbmock.STATE.global_symbols = symbols
        self.cc.set_breakpoints(run)
        self.assertIn(stop, [b.spec for b in gdbmock.STATE.breakpoints])
        gdbmock.STATE.frame = gdbmock.Frame(stop, older=gdbmock.Frame(caller))
        case = self.cc.Case("valid")
        case.token = 0x7f0000002ff8
        case.alloc_task = gdbmock.struct("task_struct", 0x1000, pid=9)
        check_task = gdbmock.struct("task_struct", 0x2000, pid=9)
        arg = gdbmock.pointer(check_task) if hook_arg is None else gdbmock.Value(hook_arg)
        mm = mock.Mock(return_value=0x3000)
        with mock.patch.object(self.cc, "first_arg", return_value=arg), \
                mock.patch.object(usermem, "task_mm", mm), \
                mock.patch.object(usermem, "read_u64", return_value=0x7f0000003001), \
                mock.patch.object(self.cc, "check_oracle", return_value=True):
            ok = self.cc.on_validate(run, case)
        self.assertIs(commands.token_check(), commands.CORE_CHECK if symbols
                      else commands.ARCH_CHECK)
        return ok, self.steps(run), mm.call_args_list, gdbmock.STATE.breakpoints[-1]

    def test_the_validate_stop_is_where_the_kernel_checks_the_value(self):
        # patches/: the arch hook fork.c's check calls just before it reads
        # the word (its argument, the token; the task is copy_thread's), and
        # the verdict at that check's return, a frame up.
        ok, steps, calls, ret = self.validate_stop(
            {"arch_shstk_clone_token"}, "arch_shstk_clone_token", "shstk_validate_clone",
            0x7f0000002ff8)
        self.assertTrue(ok)
        self.assertEqual((steps[-1]["location"], steps[-1]["verdict"]),
                         ("arch_shstk_clone_token", "pass"))
        self.assertEqual(int(calls[0].args[0]["pid"]), 9)
        self.assertEqual(calls[0].args[0]._address, 0x1000)
        self.assertEqual(ret.spec.name(), "shstk_validate_clone")
        # v23: the arch's own check, its task argument, its own return.
        ok, steps, calls, ret = self.validate_stop(
            set(), "arch_shstk_validate_clone", "copy_process", None)
        self.assertTrue(ok)
        self.assertEqual(steps[-1]["location"], "arch_shstk_validate_clone")
        self.assertEqual(calls[0].args[0]._address, 0x2000)
        self.assertEqual(ret.spec.name(), "arch_shstk_validate_clone")

    def test_a_validate_stop_that_is_not_this_call_fails(self):
        # Another token at the hook, or a caller that is not the check.
        with self.assertRaisesRegex(gdbmock.GdbError, "not this call's token"):
            self.validate_stop({"arch_shstk_clone_token"}, "arch_shstk_clone_token",
                               "shstk_validate_clone", 0x7f0000004ff8)
        with self.assertRaisesRegex(gdbmock.GdbError, "not an out-of-line shstk_validate_clone"):
            self.validate_stop({"arch_shstk_clone_token"}, "arch_shstk_clone_token",
                               "copy_process", 0x7f0000002ff8)

    def test_step_5_is_a_skip_where_no_ssp_register_is_shown(self):
        ok, step = self.child_stop("x86_64", ("rax", "rip"))
        self.assertTrue(ok)
        self.assertEqual(step["verdict"], "skip")
        self.assertIn("the bochs gdbstub shows no shadow stack pointer register", step["reason"])

    def test_step_5_checks_the_live_ssp_where_shown(self):
        for value, verdict in ((0x7f0000001000, "pass"), (0x7f0000000ff8, "fail")):
            with self.subTest(value=hex(value)):
                ok, step = self.child_stop("x86_64", ("rax", "pl3_ssp"),
                                           {"(long)$pl3_ssp": value})
                self.assertEqual(step["verdict"], verdict)
                self.assertEqual(ok, verdict == "pass")

    def test_parent_return_follows_the_scenario(self):
        for on, rax, verdict in ((True, -14, "pass"), (False, -22, "pass"), (True, -22, "fail")):
            with self.subTest(shstk_on=on, rax=rax):
                run = self.run_for("x86_64", shstk_on=on)
                gdbmock.STATE.symbols["(long)$rax"] = rax
                self.cc.on_parent(run, self.cc.Case("normal"))
                self.assertEqual(self.steps(run)[-1]["verdict"], verdict)

    def test_run_case_checks_the_path_and_survives_an_unreadable_stop(self):
        run = self.run_for("arm64", shstk_on=False)
        stops = iter(["entry", "alloc", "alloc_ret", "parent"])

        def unreadable(run, case):
            raise gdb.MemoryError("Cannot access memory at address 0x10")

        handlers = dict.fromkeys(self.cc.HANDLERS, lambda run, case: True)
        handlers["alloc_ret"] = unreadable
        with mock.patch.object(self.cc, "next_stop", lambda run: next(stops)), \
                mock.patch.dict(self.cc.HANDLERS, handlers):
            ok = self.cc.run_case(run, "no_token")
        steps = self.steps(run)
        self.assertFalse(ok)
        self.assertEqual(steps[0]["step"], "internal")
        self.assertIn("Cannot access memory", steps[0]["error"])
        self.assertEqual((steps[1]["step"], steps[1]["verdict"]), ("path", "pass"))

    def test_a_user_mode_stop_without_kernel_reads_is_told_by_address_space(self):
        # riscv: QEMU's gdbstub cannot read kernel memory while the CPU is
        # in user mode, so the task's comm is out of reach; satp says whose.
        satp_ppn = 0x81234
        for recorded, satp, ours in ((satp_ppn, satp_ppn | 9 << 44, True),
                                     (satp_ppn, 0x80000, False), (None, satp_ppn, False)):
            with self.subTest(recorded=recorded, satp=hex(satp)):
                run = self.run_for("riscv64")
                run.program.address_space = recorded
                gdbmock.STATE.current_task = gdbmock.pointer(0xff60000000001000, "task_struct")
                gdbmock.STATE.symbols["(unsigned long)$satp"] = satp
                stop = self.cc.Stop(run, "child", "*shstk_child_entry")
                self.assertEqual(stop.stop(), ours)
                self.assertEqual(run.hits, ["child"] if ours else [])
                said = "".join(gdbmock.STATE.out)
                self.assertEqual("could not tell whose stop this is" in said, recorded is None)

    def test_one_stop_per_call_where_the_elf_symbol_precedes_the_debug_info(self):
        run = self.run_for("riscv64")
        gdbmock.STATE.locations["__riscv_sys_clone3"] = (0x8001e958, 0x8001e960)
        gdbmock.STATE.described = {0x8001e960}
        stop = self.cc.Stop(run, "entry", "__riscv_sys_clone3")
        self.assertEqual([(loc.address, loc.enabled) for loc in stop.locations],
                         [(0x8001e958, False), (0x8001e960, True)])
        # Nothing described, or one location only: all stay on.
        gdbmock.STATE.described = set()
        stop = self.cc.Stop(run, "entry", "__riscv_sys_clone3")
        self.assertTrue(all(loc.enabled for loc in stop.locations))

    def test_the_entry_is_kept_where_gdb_also_skipped_the_prologue(self):
        # A restored riscv64 VM: gdb, able to read the code, put one
        # location at __riscv_sys_clone3's entry and one after the prologue
        # of the __se_sys_clone3 inlined there; the scenario reads the
        # entry's registers.
        run = self.run_for("riscv64")
        gdbmock.STATE.locations["__riscv_sys_clone3"] = (0x8001eb20, 0x8001eb32)
        gdbmock.STATE.described = {0x8001eb20, 0x8001eb32}
        inlined = (("__se_sys_clone3", 0x8001eb20), ("__riscv_sys_clone3", 0x8001eb20))
        gdbmock.STATE.code_functions = {0x8001eb20: inlined, 0x8001eb32: inlined}
        stop = self.cc.Stop(run, "entry", "__riscv_sys_clone3")
        self.assertEqual([(loc.address, loc.enabled) for loc in stop.locations],
                         [(0x8001eb20, True), (0x8001eb32, False)])
        # No location at the entry (x86 and arm64, restored): gdb's stay.
        gdbmock.STATE.locations["copy_thread"] = (0x1008,)
        gdbmock.STATE.code_functions = {0x1008: (("copy_thread", 0x1000),)}
        stop = self.cc.Stop(run, "alloc", "copy_thread")
        self.assertEqual([(loc.address, loc.enabled) for loc in stop.locations], [(0x1008, True)])
        # By address: nothing to choose.
        gdbmock.STATE.locations["*0x8001eb32"] = (0x8001eb32,)
        stop = self.cc.Stop(run, "entry", "*0x8001eb32")
        self.assertTrue(stop.locations[0].enabled)

    def test_syscall_args_from_the_argument_register_where_the_frame_names_none(self):
        self.run_for("riscv64")          # the mock, reset for riscv64
        regs = gdbmock.pointer(0xff600000014b3ee0, "pt_regs")
        gdbmock.STATE.symbols["(struct pt_regs *)$a0"] = regs

        def field(name, value):
            def read():
                self.assertIs(gdbmock.STATE.convenience["shstk_regs"], regs)
                return value
            return read
        gdbmock.STATE.symbols["$shstk_regs->orig_a0"] = field("orig_a0", 0x7fffffff1000)
        gdbmock.STATE.symbols["$shstk_regs->a1"] = field("a1", 96)
        self.assertEqual(self.cc.ops().syscall_args(), [0x7fffffff1000, 96])

    def test_a_stop_reported_again_is_told_from_a_new_one(self):
        run = self.run_for("riscv64")
        space = ("address space", 0x81234)
        entry = ("entry", 1, ("pid", 52), 0x8001e960, 0xff2000000001bd00)
        parent = ("parent", 1, space, 0x10830, 0x7fffffffe000)
        child = ("child", 2, space, 0x1082c, 0x94000)

        def counted(here):
            repeat = self.cc.is_repeat(run, here)
            if not repeat:          # what next_stop() keeps of a new stop
                run.last_stop = here
                if here[0] == "entry":
                    run.since_entry.clear()
                run.since_entry.add(here)
            return repeat
        # The parent's return seen again after the child's stop (riscv); the
        # entry twice in a row (QEMU 10.2 and 11.1).
        self.assertEqual([counted(h) for h in (entry, entry, parent, child, parent)],
                         [False, True, False, False, True])
        # The next call: the same entry and the same return are new stops.
        self.assertEqual([counted(h) for h in (entry, parent)], [False, False])
        # Another vCPU, or a stop that could not be placed, is never a repeat.
        self.assertFalse(counted(("parent", 2) + parent[2:]))
        self.assertFalse(self.cc.is_repeat(run, None))

    def test_run_case_fails_a_wrong_path(self):
        # With a shadow stack, no_token must reach the token check.
        run = self.run_for("arm64", shstk_on=True)
        stops = iter(["entry", "alloc", "alloc_ret", "parent"])
        with mock.patch.object(self.cc, "next_stop", lambda run: next(stops)), \
                mock.patch.dict(self.cc.HANDLERS, dict.fromkeys(self.cc.HANDLERS,
                                                                lambda run, case: True)):
            self.assertFalse(self.cc.run_case(run, "no_token"))
        self.assertEqual(self.steps(run)[-1]["verdict"], "fail")



class ContextViewCheckTest(unittest.TestCase):
    """gdb-check's judgement of the context view (gdb/check_clone3.py)."""

    TOKEN_LINE = "shstk_token 0x7fb6a0d31ff8"
    VIEW = """── shstk-context ──
  task   pid 61 (shstk_gdb), shadow stack enabled
  ssp    0x7fb6a1534ff8  [$pl3_ssp of CPU 0]
  clone  flags 0x100, shstk_token 0x7fb6a0d31ff8 = not present
         clone3(): refused: page not present, so gdb cannot read the word: EINVAL
  (0.02 s; shstk-context off hides this)
"""

    def setUp(self):
        gdbmock.install()
        import check_clone3
        self.cc = check_clone3

    def test_a_good_view(self):
        self.assertEqual(self.cc.context_problems(self.VIEW, self.TOKEN_LINE, False), ([], 0.02))

    def test_what_fails(self):
        bad = self.VIEW.replace("  ssp    0x7fb6a1534ff8  [$pl3_ssp of CPU 0]",
                                "  ssp: cannot read $pl3_ssp of CPU 0: no register")
        problems, _ = self.cc.context_problems(bad, self.TOKEN_LINE, False)
        self.assertEqual(problems, ["no failed read: ssp: cannot read $pl3_ssp of CPU 0: no register"])
        self.assertIn("clone3(): accepted", self.cc.context_problems(self.VIEW, self.TOKEN_LINE, True)[0])
        slow = self.VIEW.replace("(0.02 s;", "(2.50 s;")
        self.assertIn("took 2.5", self.cc.context_problems(slow, self.TOKEN_LINE, False)[0][0])


if __name__ == "__main__":
    unittest.main()
