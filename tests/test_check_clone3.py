# SPDX-License-Identifier: GPL-2.0
"""gdb/check_clone3.py with gdb mocked: nothing happens at import, one
handler per stop (gdb/shstk/clone3stops.py), the expectations from
spec/scenario.py, the run (gdb/shstk/clone3run.py) on the framework
(gdb/shstk/stepcheck.py)."""
import importlib.util
import io
import json
import os
import tempfile
import unittest
from unittest import mock

from tests import gdbmock

gdb = gdbmock.install()

from shstk import archops, clone3run, clone3stops, stepcheck  # noqa: E402
from spec import scenario  # noqa: E402


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
    cs = clone3stops

    def run_for(self, arch, emu="qemu", shstk_on=True):
        gdbmock.reset(arch)
        run = self.cs.Run(io.StringIO(), arch, emu)
        run.shstk_on = shstk_on
        return run

    def steps(self, run):
        return [json.loads(line) for line in run.log.f.getvalue().splitlines()]

    def test_every_stop_has_a_handler(self):
        self.assertEqual(set(self.cs.HANDLERS), {"entry", "alloc", "alloc_ret", "validate",
                                                 "validate_ret", "newtask", "child", "parent"})
        for case in ("valid", "misaligned", "no_token", "normal", "reused"):
            for on in (True, False):
                self.assertTrue(set(scenario.gdb_path(case, on)) <= set(self.cs.HANDLERS))

    def child_stop(self, arch, registers, symbols=()):
        run = self.run_for(arch, "bochs" if arch == "x86_64" else "qemu")
        gdbmock.STATE.symbols.update(symbols)
        case = self.cs.Case("valid")
        case.token = 0x7f0000000ff8
        task = gdbmock.struct("task_struct", 0x1000, pid=9)
        gdbmock.STATE.current_task = gdbmock.pointer(task)
        gdbmock.STATE.frame = gdbmock.Frame(registers=registers)
        ok = self.cs.on_child(run, case)
        return ok, self.steps(run)[-1]

    def validate_stop(self, symbols, stop, caller, hook_arg):
        """on_validate() for an accepted token at @stop, whose caller frame
        is @caller and whose first argument is @hook_arg (None: a pointer to
        the task of the arch's own check): (ok, the step log, task_mm's
        calls, the Return made)."""
        from shstk import commands, usermem
        run = self.run_for("x86_64")
        gdbmock.STATE.global_symbols = symbols
        clone3run.set_breakpoints(run)
        self.assertIn(stop, [b.spec for b in gdbmock.STATE.breakpoints])
        gdbmock.STATE.frame = gdbmock.Frame(stop, older=gdbmock.Frame(caller))
        case = self.cs.Case("valid")
        case.token = 0x7f0000002ff8
        case.alloc_task = gdbmock.struct("task_struct", 0x1000, pid=9)
        check_task = gdbmock.struct("task_struct", 0x2000, pid=9)
        arg = gdbmock.pointer(check_task) if hook_arg is None else gdbmock.Value(hook_arg)
        mm = mock.Mock(return_value=0x3000)
        with mock.patch.object(archops, "first_arg", return_value=arg), \
                mock.patch.object(usermem, "task_mm", mm), \
                mock.patch.object(usermem, "read_u64", return_value=0x7f0000003001), \
                mock.patch.object(self.cs, "check_oracle", return_value=True):
            ok = self.cs.on_validate(run, case)
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
                self.cs.on_parent(run, self.cs.Case("normal"))
                self.assertEqual(self.steps(run)[-1]["verdict"], verdict)

    def test_run_case_checks_the_path_and_survives_an_unreadable_stop(self):
        run = self.run_for("arm64", shstk_on=False)
        stops = iter(["entry", "alloc", "alloc_ret", "parent"])

        def unreadable(run, case):
            raise gdb.MemoryError("Cannot access memory at address 0x10")

        handlers = dict.fromkeys(self.cs.HANDLERS, lambda run, case: True)
        handlers["alloc_ret"] = unreadable
        with mock.patch.object(clone3run, "next_stop", lambda run: next(stops)), \
                mock.patch.dict(self.cs.HANDLERS, handlers):
            ok = clone3run.run_case(run, "no_token")
        steps = self.steps(run)
        self.assertFalse(ok)
        self.assertEqual(steps[0]["step"], "internal")
        self.assertIn("Cannot access memory", steps[0]["error"])
        self.assertEqual((steps[1]["step"], steps[1]["verdict"]), ("path", "pass"))

    def test_a_user_mode_stop_without_kernel_reads_is_told_by_address_space(self):
        # riscv: QEMU's gdbstub cannot read kernel memory while the CPU is
        # in user mode, so the task's comm is out of reach; satp says whose.
        # Before the program's address space is known, the stop is not
        # counted, and said so (stepcheck.Stops.ours).
        satp_ppn = 0x81234
        for recorded, satp, ours in ((satp_ppn, satp_ppn | 9 << 44, True),
                                     (satp_ppn, 0x80000, False), (None, satp_ppn, False)):
            with self.subTest(recorded=recorded, satp=hex(satp)):
                run = self.run_for("riscv64")
                run.stops.program.address_space = recorded
                gdbmock.STATE.current_task = gdbmock.pointer(0xff60000000001000, "task_struct")
                gdbmock.STATE.symbols["(unsigned long)$satp"] = satp
                stop = stepcheck.ProgramStop(run.stops, "child", "*shstk_child_entry")
                self.assertEqual(stop.stop(), ours)
                self.assertEqual(run.stops.hits, ["child"] if ours else [])
                said = "".join(gdbmock.STATE.out)
                self.assertEqual("[gdb-check] could not tell whose stop this is" in said,
                                 recorded is None)

    def test_one_stop_per_call_where_the_elf_symbol_precedes_the_debug_info(self):
        run = self.run_for("riscv64")
        gdbmock.STATE.locations["__riscv_sys_clone3"] = (0x8001e958, 0x8001e960)
        gdbmock.STATE.described = {0x8001e960}
        stop = stepcheck.ProgramStop(run.stops, "entry", "__riscv_sys_clone3")
        self.assertEqual([(loc.address, loc.enabled) for loc in stop.locations],
                         [(0x8001e958, False), (0x8001e960, True)])
        # Nothing described, or one location only: all stay on.
        gdbmock.STATE.described = set()
        stop = stepcheck.ProgramStop(run.stops, "entry", "__riscv_sys_clone3")
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
        stop = stepcheck.ProgramStop(run.stops, "entry", "__riscv_sys_clone3")
        self.assertEqual([(loc.address, loc.enabled) for loc in stop.locations],
                         [(0x8001eb20, True), (0x8001eb32, False)])
        # No location at the entry (x86 and arm64, restored): gdb's stay.
        gdbmock.STATE.locations["copy_thread"] = (0x1008,)
        gdbmock.STATE.code_functions = {0x1008: (("copy_thread", 0x1000),)}
        stop = stepcheck.ProgramStop(run.stops, "alloc", "copy_thread")
        self.assertEqual([(loc.address, loc.enabled) for loc in stop.locations], [(0x1008, True)])
        # By address: nothing to choose.
        gdbmock.STATE.locations["*0x8001eb32"] = (0x8001eb32,)
        stop = stepcheck.ProgramStop(run.stops, "entry", "*0x8001eb32")
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
        self.assertEqual(archops.ops().syscall_args(), [0x7fffffff1000, 96])

    def test_a_stop_reported_again_is_told_from_a_new_one(self):
        run = self.run_for("riscv64")
        space = ("address space", 0x81234)
        entry = ("entry", 1, ("pid", 52), 0x8001e960, 0xff2000000001bd00)
        parent = ("parent", 1, space, 0x10830, 0x7fffffffe000)
        child = ("child", 2, space, 0x1082c, 0x94000)

        def counted(here):
            repeat = run.stops.is_repeat(here)
            if not repeat:          # what Stops.next() keeps of a new stop
                run.stops.counted(here)
            return repeat
        # The parent's return seen again after the child's stop (riscv); the
        # entry twice in a row (QEMU 10.2 and 11.1).
        self.assertEqual([counted(h) for h in (entry, entry, parent, child, parent)],
                         [False, True, False, False, True])
        # The next call: the same entry and the same return are new stops.
        self.assertEqual([counted(h) for h in (entry, parent)], [False, False])
        # Another vCPU, or a stop that could not be placed, is never a repeat.
        self.assertFalse(counted(("parent", 2) + parent[2:]))
        self.assertFalse(run.stops.is_repeat(None))

    def test_run_case_fails_a_wrong_path(self):
        # With a shadow stack, no_token must reach the token check.
        run = self.run_for("arm64", shstk_on=True)
        stops = iter(["entry", "alloc", "alloc_ret", "parent"])
        with mock.patch.object(clone3run, "next_stop", lambda run: next(stops)), \
                mock.patch.dict(self.cs.HANDLERS, dict.fromkeys(self.cs.HANDLERS,
                                                                lambda run, case: True)):
            self.assertFalse(clone3run.run_case(run, "no_token"))
        self.assertEqual(self.steps(run)[-1]["verdict"], "fail")



class MainTest(unittest.TestCase):
    def test_the_log_ends_with_the_skips_and_gdbs_verdict(self):
        gdbmock.reset("x86_64")
        detached = []

        def execute(command, from_tty=False, to_string=False):
            detached.append(command)

        def run_case(run, name):
            run.shstk_on, run.why = False, "no CET"
            return True

        with tempfile.TemporaryDirectory() as d:
            steps = os.path.join(d, "gdb-steps.jsonl")
            with mock.patch.dict(os.environ, {"SHSTK_STEPS": steps, "SHSTK_EMU": "qemu"}), \
                    mock.patch.object(clone3run, "set_breakpoints"), \
                    mock.patch.object(clone3run, "run_case", run_case), \
                    mock.patch.object(clone3run.gdb, "execute", execute):
                clone3run.main()
            with open(steps) as f:
                log = [json.loads(line) for line in f]
        self.assertEqual(log[-1], {"step": "verdict", "verdict": "pass"})
        self.assertEqual([(s["case"], s["step"]) for s in log[:-1]],
                         scenario.not_exercised(False))
        self.assertTrue(all(s["verdict"] == "skip" and s["reason"] == "no CET" for s in log[:-1]))
        self.assertEqual(detached, ["detach"])


class OracleStepTest(unittest.TestCase):
    """Step 3c: gdb logs drgn's reading beside the helpers' (the dump kept
    only where they differ); checks/oracle.py gives the verdict."""

    VMAS = ["0x7f0000001000-0x7f0000002000", "0x7f0000003000-0x7f0000004000"]
    WORD = 0x7f0000003001

    def oracle_step(self, drgn_vmas, drgn_word, no_word=None):
        from checks import oracle
        gdbmock.reset("x86_64")
        run = clone3stops.Run(io.StringIO(), "x86_64", "qemu")
        case = clone3stops.Case("valid")
        case.token, case.mm, case.word_before = 0x7f0000003ff8, 0x3000, self.WORD
        got = {"drgn_vmas": drgn_vmas, "drgn_word": drgn_word, "no_word": no_word,
               "dump_seconds": 0.5}
        with tempfile.TemporaryDirectory() as d:
            core = os.path.join(d, "vmcore")
            open(core, "w").close()
            env = {"SHSTK_QMP": os.path.join(d, "qmp.sock"), "SHSTK_VMLINUX": "vmlinux",
                   "SHSTK_STEPS": os.path.join(d, "gdb-steps.jsonl")}
            gdbmock.STATE.symbols["(int)VMA_SHADOW_STACK_BIT"] = 41
            with mock.patch.dict(os.environ, env), \
                    mock.patch.object(clone3stops, "ss_vmas", return_value=self.VMAS), \
                    mock.patch.object(clone3stops.coredump, "read", return_value=got) as read:
                self.assertTrue(clone3stops.check_oracle(run, case, None))
            kept = os.path.exists(core)
        self.assertEqual(read.call_args.args[3:6], (0x3000, 0x7f0000003ff8, 41))
        self.assertEqual(read.call_args.args[6], archops.ops().direct_maps)
        step = json.loads(run.log.f.getvalue())
        return step, oracle.judge(step), kept

    def test_agreement_passes_and_the_dump_goes(self):
        step, judged, kept = self.oracle_step(list(self.VMAS), self.WORD)
        self.assertEqual((step["verdict"], judged["verdict"], judged["problems"]),
                         ("pending", "pass", []))
        self.assertEqual((step["helper_word"], step["drgn_word"], step["token_word"]),
                         (hex(self.WORD),) * 3)
        self.assertEqual(step["helper_vmas"], step["drgn_vmas"])
        self.assertFalse(kept)
        self.assertIsNone(step["core"])

    def test_a_disagreement_fails_and_the_dump_stays(self):
        step, judged, kept = self.oracle_step(self.VMAS[:1], self.WORD + 0x1000)
        self.assertEqual(judged["verdict"], "fail")
        self.assertEqual(len(judged["problems"]), 2)
        self.assertTrue(kept)
        self.assertTrue(step["core"].endswith("vmcore"))

    def test_without_drgns_word_the_vmas_decide(self):
        step, judged, kept = self.oracle_step(list(self.VMAS), None, "no riscv64 walk")
        self.assertEqual((judged["verdict"], step["token_word"], step["drgn_word"]),
                         ("pass", "not read", None))
        self.assertIn("not the token word: no riscv64 walk", step["expectation"])
        self.assertFalse(kept)

    def test_the_pending_verdict_is_the_one_checks_judge(self):
        from checks import oracle
        self.assertEqual(clone3stops.PENDING, oracle.PENDING)

    def test_a_dump_not_read_is_a_failed_step(self):
        gdbmock.reset("x86_64")
        run = clone3stops.Run(io.StringIO(), "x86_64", "qemu")
        case = clone3stops.Case("valid")
        case.mm = 0x3000
        env = {"SHSTK_QMP": "/nonexistent/qmp.sock", "SHSTK_VMLINUX": "vmlinux",
               "SHSTK_STEPS": "/nonexistent/gdb-steps.jsonl"}
        gdbmock.STATE.symbols["(int)VMA_SHADOW_STACK_BIT"] = 41
        for error, said in ((ImportError("No module named 'drgn'"), "no drgn in gdb's Python"),
                            (clone3stops.coredump.Unreadable("OSError: no socket"),
                             "OSError: no socket")):
            with mock.patch.dict(os.environ, env), \
                    mock.patch.object(clone3stops, "ss_vmas", return_value=[]), \
                    mock.patch.object(clone3stops.coredump, "read", side_effect=error):
                self.assertFalse(clone3stops.check_oracle(run, case, None))
            step = json.loads(run.log.f.getvalue().splitlines()[-1])
            self.assertEqual(step["verdict"], "fail")
            self.assertIn(said, step["error"])

    def test_no_qmp_is_a_skip(self):
        gdbmock.reset("x86_64")
        run = clone3stops.Run(io.StringIO(), "x86_64", "bochs")
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertTrue(clone3stops.check_oracle(run, clone3stops.Case("valid"), None))
        step = json.loads(run.log.f.getvalue())
        self.assertEqual((step["verdict"], step["reason"]),
                         ("skip", "bochs has no QMP to dump the guest's memory with"))


class ContextViewCheckTest(unittest.TestCase):
    """gdb-check's judgement of the context view (gdb/shstk/clone3stops.py)."""

    TOKEN_LINE = "shstk_token 0x7fb6a0d31ff8"
    VIEW = """── shstk-context ──
  task   pid 61 (shstk_gdb), shadow stack enabled
  ssp    0x7fb6a1534ff8  [$pl3_ssp of CPU 0]
  clone  flags 0x100, shstk_token 0x7fb6a0d31ff8 = not present
         clone3(): refused: page not present, so gdb cannot read the word: EINVAL
  (0.02 s; shstk-context off hides this)
"""

    cc = clone3stops

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
