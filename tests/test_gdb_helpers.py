# SPDX-License-Identifier: GPL-2.0
"""gdb/shstk's helpers with gdb mocked (tests/gdbmock.py): the rules they
use, and what each says when a read fails."""
import importlib.util
import os
import unittest
from unittest import mock

from tests import gdbmock

gdb = gdbmock.install()

from shstk import commands, context, decode, usermem, vmas  # noqa: E402

commands.register()
context.register()

ARM64_SS_RW = 0x4000100073          # rw-p, mayread/write/exec, ss (read from a guest)


class ShadowStackRuleTest(unittest.TestCase):
    """One rule for "is this a shadow stack clone3() accepts": decode's."""

    def setUp(self):
        gdbmock.reset("arm64")

    def test_describe_uses_the_tested_rule(self):
        d = vmas.describe((0x1000, 0x2000, ARM64_SS_RW, None))
        self.assertTrue(d["shadow_stack"])
        self.assertIn("ss", d["names"])
        # The flag without write: shown as a flag, not taken for a usable stack.
        read_only = ARM64_SS_RW & ~(1 << decode.VMA_BITS["WRITE"])
        d = vmas.describe((0x1000, 0x2000, read_only, None))
        self.assertIn("ss", d["names"])
        self.assertFalse(d["shadow_stack"])
        self.assertNotIn("ss", d)


if __name__ == "__main__":
    unittest.main()


TASK = 0x10000
TASK_SIZE = 0x2000
FPSTATE = 0x50000
PERCPU_CURRENT = 0x9000     # the per-CPU current_task slot
# A compacted XSAVE buffer with x87, SSE, AVX, PKRU and CET user state.
XCOMP_BV = (1 << 63) | 1 | 2 | 4 | (1 << 9) | (1 << 11)
SIZES = {2: 256, 9: 8, 11: 16}
CET_AT = FPSTATE + 64 + 512 + 64 + 256 + 8


def x86_task(pid=42, xcomp_bv=XCOMP_BV, xfeatures=XCOMP_BV & ~(1 << 63), ssp=0x7f0000002000,
             fpstate=FPSTATE, features=1, at=TASK):
    """A task of the guest program in the mock's memory: its struct fpu right
    after the task_struct, its XSAVE buffer, its CET user state."""
    V = gdbmock.Value
    gdbmock.struct_type("task_struct", TASK_SIZE)
    task = gdbmock.struct("task_struct", at, TASK_SIZE, pid=pid, comm=V("shstk_gdb"),
                          mm=gdbmock.pointer(0x70000, "mm_struct"),
                          thread=V(fields={"features": features}))
    gdbmock.struct("fpu", at + TASK_SIZE, fpstate=gdbmock.pointer(fpstate, "fpstate"))
    header = V(fields={"xfeatures": xfeatures, "xcomp_bv": xcomp_bv})
    gdbmock.struct("fpstate", fpstate, regs=V(fields={
        "xsave": V(address=fpstate + 64, fields={"header": header})}))
    gdbmock.struct("cet_user_state", CET_AT, user_ssp=ssp)
    for i in range(2, 12):
        gdbmock.STATE.symbols[f"xstate_sizes[{i}]"] = SIZES.get(i, 0)
        gdbmock.STATE.symbols[f"xstate_flags[{i}]"] = 0
        gdbmock.STATE.symbols[f"xstate_offsets[{i}]"] = 0xffffffff if i == 11 else 576 + 64 * i
    return task


class SspTest(unittest.TestCase):
    """shstk-ssp on x86: the task, its struct fpu, both XSAVE formats."""

    def setUp(self):
        self.state = gdbmock.reset("x86_64")

    def run_command(self, line):
        return gdb.execute(line, to_string=True)

    def test_current_task_is_the_task_not_the_per_cpu_pointer(self):
        # The kernel's get_current_task() returns the per-CPU current_task,
        # a pointer whose .address is the per-CPU slot: shstk-ssp must not
        # take the struct fpu from beside that slot (fpstate NULL, 0x248).
        task = x86_task()
        self.state.current_task = gdbmock.pointer(task, address=PERCPU_CURRENT)
        out = self.run_command("shstk-ssp")
        self.assertIn("pid 42 (shstk_gdb): 0x7f0000002000", out)
        self.assertIn("compacted format", out)
        self.assertIn("stale: pid 42 is running on CPU 0", out)

    def with_pl3_ssp(self, owner, last_cpu=0, cs=0x10):
        # The project's QEMU shows $pl3_ssp: IA32_PL3_SSP while in the kernel.
        task = x86_task()
        self.state.memory[TASK + TASK_SIZE]._fields["last_cpu"] = last_cpu
        self.state.current_task = gdbmock.pointer(task, address=PERCPU_CURRENT)
        self.state.frame = gdbmock.Frame(registers=("rax", "rip", "pl3_ssp"))
        self.state.symbols["(unsigned long)$pl3_ssp"] = 0x7f0000002ff0
        self.state.symbols["$cs"] = cs
        self.state.symbols["&fpu_fpregs_owner_ctx"] = 0x9000
        self.state.symbols["per_cpu(36864, 0)"] = gdbmock.Value(0xa000)
        self.state.memory[0xa000] = gdbmock.Value(owner)
        return self.run_command("shstk-ssp")

    def test_running_task_with_pl3_ssp_reads_the_register(self):
        out = self.with_pl3_ssp(owner=TASK + TASK_SIZE)
        self.assertIn("pid 42 (shstk_gdb): 0x7f0000002ff0", out)
        self.assertIn("$pl3_ssp of CPU 0, IA32_PL3_SSP", out)
        self.assertNotIn("stale", out)
        self.assertIn("the live SSP: the CPU runs user code",
                      self.with_pl3_ssp(owner=0, cs=0x33))

    def test_pl3_ssp_of_another_tasks_fpu_state_is_not_used(self):
        # Lazy FPU loading: the CPU holds another task's registers (or this
        # task's from another CPU), so the MSR is not this task's SSP.
        for owner, last_cpu in ((0x123000, 0), (TASK + TASK_SIZE, 1)):
            out = self.with_pl3_ssp(owner=owner, last_cpu=last_cpu)
            self.assertIn("pid 42 (shstk_gdb): 0x7f0000002000", out)
            self.assertIn("XSAVE buffer", out)
            self.assertIn("current: CPU 0 does not hold pid 42's FPU registers", out)
            self.assertNotIn("stale", out)

    def test_unreadable_pl3_ssp_is_a_message(self):
        task = x86_task()
        self.state.current_task = gdbmock.pointer(task, address=PERCPU_CURRENT)
        self.state.frame = gdbmock.Frame(registers=("rax", "rip", "pl3_ssp"))
        self.state.symbols["(unsigned long)$pl3_ssp"] = gdb.error("Could not fetch register")
        with self.assertRaises(gdb.GdbError) as e:
            self.run_command("shstk-ssp")
        self.assertIn("cannot read $pl3_ssp of CPU 0", str(e.exception))

    def test_standard_format_has_no_cet_state(self):
        # QEMU's TCG has no XSAVES: the kernel saves the standard format.
        task = x86_task(xcomp_bv=0, xfeatures=7)
        self.state.current_task = gdbmock.pointer(task, address=PERCPU_CURRENT)
        out = self.run_command("shstk-ssp")
        self.assertIn("unknown", out)
        self.assertIn("standard format (the CPU has no XSAVES)", out)

    def test_init_state_is_no_shadow_stack(self):
        task = x86_task(xfeatures=7)
        self.state.current_task = gdbmock.pointer(task, address=PERCPU_CURRENT)
        self.assertIn(": 0x0  [CET user state of pid 42 in its init state",
                      self.run_command("shstk-ssp"))

    def test_a_task_being_made_has_no_fpstate_yet(self):
        # The new task at copy_thread()'s entry: its fpu was zeroed by
        # arch_dup_task_struct() and fpu_clone() has not run yet.
        self.state.current_task = gdbmock.pointer(x86_task(pid=41), address=PERCPU_CURRENT)
        task = x86_task(pid=43, fpstate=0, at=0x30000)
        self.state.tasks_by_pid[43] = gdbmock.pointer(task)
        out = self.run_command("shstk-ssp 43")
        self.assertIn("no FPU state yet (fpu.fpstate is NULL)", out)

    def test_unreadable_xsave_header_is_a_message(self):
        task = x86_task(fpstate=0x66000)
        del self.state.memory[0x66000]
        self.state.current_task = gdbmock.pointer(task, address=PERCPU_CURRENT)
        with self.assertRaises(gdb.GdbError) as e:
            self.run_command("shstk-ssp")
        self.assertEqual(str(e.exception), "shstk-ssp: cannot read the XSAVE header of pid 42 "
                         "(fpstate 0x66000): Cannot access memory at address 0x66000")


class XsaveOffsetTest(unittest.TestCase):
    def test_compacted(self):
        off, how = decode.xsave_offset(11, XCOMP_BV, SIZES.get, lambda i: False, None)
        self.assertEqual((off, how), (576 + 256 + 8, "compacted format"))
        # 64-byte alignment of a component rounds up its start.
        off, _ = decode.xsave_offset(11, XCOMP_BV, SIZES.get, lambda i: i == 11, None)
        self.assertEqual(off, 896)

    def test_component_not_in_buffer(self):
        off, why = decode.xsave_offset(11, (1 << 63) | 7, SIZES.get, lambda i: False, None)
        self.assertIsNone(off)
        self.assertIn("holds no component 11", why)

    def test_standard(self):
        self.assertEqual(decode.xsave_offset(2, 7, None, None, {2: 576}.get),
                         (576, "standard format"))
        off, why = decode.xsave_offset(11, 7, None, None, lambda i: 0xffffffff)
        self.assertIsNone(off)
        self.assertIn("no XSAVES", why)


class CloneVerdictTest(unittest.TestCase):
    """shstk-clone-args: "no VMA" apart from "page not present", and the
    caller's shadow stack state first, as the kernel checks them."""

    A = 0x4b8ff8

    def verdict(self, word, vma, caller):
        return decode.clone3_verdict("x86_64", self.A, word, vma, caller,
                                     commands.CORE_CHECK.function)

    def test_caller_without_shadow_stack_is_einval_first(self):
        ok, why = self.verdict(None, False, False)
        self.assertFalse(ok)
        self.assertIn("the caller has no shadow stack: EINVAL in copy_thread()", why)
        self.assertNotIn("EFAULT", why)

    def test_no_vma_and_not_present_are_apart(self):
        self.assertIn("no VMA at this address: EFAULT", self.verdict(None, None, True)[1])
        self.assertIn("not in a writable shadow stack VMA: EFAULT", self.verdict(None, False, True)[1])
        why = self.verdict(None, True, True)[1]
        self.assertIn("page not present", why)
        self.assertIn("EINVAL", why)
        self.assertNotIn("no VMA", why)

    def test_word_decides_last(self):
        self.assertEqual(self.verdict(self.A + 8 | 1, True, True),
                         (True, "valid token: consumed, the child starts on token + 8"))
        self.assertIn("zero: consumed", self.verdict(0, True, True)[1])
        self.assertIn("misaligned", decode.clone3_verdict("x86_64", self.A + 1, 0, True, False,
                                                          commands.CORE_CHECK.function)[1])
        self.assertTrue(self.verdict(self.A + 8 | 1, True, None)[1].startswith(
            "(if the caller has a shadow stack)"))

    def test_the_refusal_names_the_kernels_token_check(self):
        # fork.c's check (patches/); the arch's where the kernel has no
        # arch_shstk_clone_token() hook (v23).
        self.assertIn("EINVAL in shstk_validate_clone()", self.verdict(0, True, True)[1])
        why = decode.clone3_verdict("x86_64", self.A, 0, True, True, "arch_shstk_validate_clone")
        self.assertIn("EINVAL in arch_shstk_validate_clone()", why[1])
        for symbols, want in (({"arch_shstk_clone_token"}, commands.CORE_CHECK),
                              (set(), commands.ARCH_CHECK)):
            with self.subTest(symbols=symbols):
                gdbmock.reset("x86_64").global_symbols = symbols
                commands._token_check = None
                self.addCleanup(setattr, commands, "_token_check", None)
                self.assertEqual(commands.token_check(), want)

    def test_the_command_on_a_bss_page_never_touched(self):
        # The report from make debug: "[0x4b8ff8] = unmapped: not mapped:
        # clone3() refuses it with EFAULT; in a non-shadow-stack VMA".
        gdbmock.reset("x86_64")
        task = x86_task(features=0)
        gdbmock.STATE.current_task = gdbmock.pointer(task, address=PERCPU_CURRENT)
        args = gdbmock.struct("kernel_clone_args", 0x80000, flags=0x100, exit_signal=17,
                              stack=0x4a0000, stack_size=0x10000, shstk_token=self.A)
        gdbmock.STATE.frame = gdbmock.Frame(variables={"args": gdbmock.pointer(args)})
        bss = (0x4a6000, 0x4c1000, 0x100073, None)     # rw-p, no ss flag
        with mock.patch.object(vmas, "find", return_value=bss), \
                mock.patch.object(usermem, "read_u64", return_value=None), \
                mock.patch.object(usermem, "task_mm", return_value=None):
            out = gdb.execute("shstk-clone-args", to_string=True)
        self.assertIn("shstk_token 0x4b8ff8", out)
        self.assertIn("[0x4b8ff8] = not present: page not present", out)
        self.assertIn("in a non-shadow-stack VMA 0x4a6000-0x4c1000", out)
        self.assertIn("clone3(): refused: the caller has no shadow stack: EINVAL in copy_thread()",
                      out)
        self.assertNotIn("unmapped", out)
        self.assertNotIn("EFAULT", out)


def failing_target(arch):
    """A target where every read fails: no symbols, no memory, no frame."""
    state = gdbmock.reset(arch)
    state.frame = None
    state.current_task = gdb.MemoryError("Cannot access memory at address 0xffffffff82a0c940")
    state.tasks_by_pid[7] = gdbmock.pointer(0x123000, "task_struct")
    return state


class TokenFieldTest(unittest.TestCase):
    """The token's field is named as the kernel's DWARF names it."""

    def setUp(self):
        gdbmock.reset("x86_64")
        commands._token_field = None
        self.addCleanup(setattr, commands, "_token_field", None)

    def clone_args(self, name):
        fields = [gdbmock.Field(f.name, f.bitpos) for f in gdbmock.CLONE_ARGS.fields()]
        fields[-1] = gdbmock.Field(name, 88 * 8)
        gdbmock.STATE.types["struct clone_args"] = gdbmock.Type("struct clone_args", 96,
                                                                fields=fields)

    def test_v21_and_later_name_it_shstk_token(self):
        self.assertEqual(commands.token_field(), "shstk_token")

    def test_up_to_v20_name_it_shadow_stack_token(self):
        self.clone_args("shadow_stack_token")
        self.assertEqual(commands.token_field(), "shadow_stack_token")
        args = gdbmock.struct("kernel_clone_args", 0x80000, shadow_stack_token=0x7ff8)
        self.assertEqual(commands.token_of(args), 0x7ff8)

    def test_a_kernel_without_the_series_is_told(self):
        gdbmock.STATE.types["struct clone_args"] = gdbmock.Type(
            "struct clone_args", 88, fields=gdbmock.CLONE_ARGS.fields()[:-1])
        with self.assertRaises(gdb.GdbError) as e:
            commands.token_field()
        self.assertIn("does not have the series", str(e.exception))


class NoTracebackTest(unittest.TestCase):
    """Every helper, fed failing reads, ends in a message that says what it
    could not read (a gdb.GdbError), never in another exception."""

    CALLS = ["shstk-vmas", "shstk-vmas 7", "shstk-token", "shstk-token 0x4b8ff8",
             "shstk-token 0x4b8ff8 7", "shstk-token nosuchsymbol", "shstk-ssp", "shstk-ssp 7",
             "shstk-ssp 99", "shstk-clone-args"]

    def check(self, call, *args):
        try:
            call(*args)
        except gdb.GdbError as e:
            return str(e)
        self.fail(f"{args}: no error from a target where nothing can be read")

    def test_commands(self):
        for arch in ("x86_64", "arm64"):
            for line in self.CALLS:
                failing_target(arch)
                with self.subTest(arch=arch, command=line):
                    msg = self.check(gdb.execute, line)
                    self.assertTrue(msg.startswith(line.split()[0] + ": "), msg)
                    self.assertNotIn("internal error", msg)

    def test_messages_say_what(self):
        failing_target("x86_64")
        self.assertEqual(self.check(gdb.execute, "shstk-ssp"),
                         "shstk-ssp: cannot read the task on the selected CPU: "
                         "Cannot access memory at address 0xffffffff82a0c940")
        # (gdb reads a task lazily, so on a real target this one says
        # "cannot read the task's pid": either names the thing.)
        self.assertEqual(self.check(gdb.execute, "shstk-vmas 7"),
                         "shstk-vmas: cannot read the task_struct of pid 7: "
                         "Cannot access memory at address 0x123000")
        self.assertEqual(self.check(gdb.execute, "shstk-clone-args"),
                         "shstk-clone-args: cannot read the selected frame: No frame selected.")
        self.assertEqual(self.check(gdb.execute, "shstk-ssp 99"), "shstk-ssp: no task with pid 99")
        self.assertIn("usage: shstk-token ADDR [PID]", self.check(gdb.execute, "shstk-token"))

    def test_unreadable_vmas_and_page_tables(self):
        state = gdbmock.reset("x86_64")
        task = x86_task()
        state.current_task = gdbmock.pointer(task, address=PERCPU_CURRENT)
        msg = self.check(gdb.execute, "shstk-vmas")
        self.assertEqual(msg, "shstk-vmas: cannot read the VMAs of pid 42 (its mm's maple tree): "
                         "Cannot access memory at address 0x70000")
        with mock.patch.object(vmas, "find", return_value=None):
            msg = self.check(gdb.execute, "shstk-token 0x4b8ff8")
        self.assertEqual(msg, "shstk-token: cannot read pid 42's page tables for 0x4b8ff8: "
                         "Cannot access memory at address 0x70000")

    def test_functions(self):
        failing_target("x86_64")
        for name, args in (("shstk_comm", ()), ("shstk_token_word", (0x4b8ff8,)),
                           ("shstk_token_word", (0x4b8ff8, 7))):
            with self.subTest(function=name, args=args):
                msg = self.check(gdbmock.STATE.functions[name].invoke, *args)
                self.assertTrue(msg.startswith(f"${name}: cannot read"), msg)


def load_debug_script():
    """gdb/debug.py as a module (its main() runs only as gdb's script)."""
    spec = importlib.util.spec_from_file_location("shstk_debug", os.path.join(gdbmock.TOP, "gdb",
                                                                             "debug.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BannerTest(unittest.TestCase):
    """make debug names what this emulator and CPU can show, and how to get
    the rest."""

    debug = load_debug_script()

    def shows(self, arch, cmdline, features, registers=()):
        state = gdbmock.reset(arch)
        state.symbols["saved_command_line"] = gdbmock.Value(cmdline)
        state.symbols.update(features)
        state.frame = gdbmock.Frame(registers=registers)
        return "\n".join(self.debug.what_this_shows())

    def test_x86_under_qemu(self):
        out = self.shows("x86_64", "console=ttyS0 shstk.why=QEMU_TCG_does_not_emulate_CET",
                         {"boot_cpu_data.x86_capability[11]": 0,
                          "boot_cpu_data.x86_capability[10]": 0}, ("rax", "rip"))
        self.assertIn("this CPU has none (QEMU TCG does not emulate CET)", out)
        self.assertIn("no token is checked or consumed here", out)
        self.assertIn("make debug ARCH=x86_64 QEMU=patched", out)
        self.assertIn("this gdbstub shows no register for it", out)
        self.assertIn("no XSAVES", out)

    def test_x86_with_cet(self):
        out = self.shows("x86_64", "console=ttyS0 nopku",
                         {"boot_cpu_data.x86_capability[11]": 1 << 23,
                          "boot_cpu_data.x86_capability[10]": 1 << 3}, ("rax", "rip"))
        self.assertIn("this CPU has them", out)
        self.assertNotIn("EMU=", out)
        self.assertIn("XSAVE buffer", out)
        self.assertNotIn("no XSAVES", out)

    def test_arm64_with_gcs(self):
        out = self.shows("arm64", "console=ttyAMA0", {"elf_hwcap[0]": 1 << 32},
                         ("x0", "GCSPR_EL0"))
        self.assertIn("this CPU has them", out)
        self.assertIn("live shadow stack pointer: $GCSPR_EL0", out)

    def test_unreadable_kernel_is_said(self):
        out = self.shows("arm64", gdb.MemoryError("Cannot access memory at address 0x0"), {})
        self.assertIn("cannot read the kernel's CPU features", out)


class ContextTest(unittest.TestCase):
    """shstk-context: the view at a stop, and a stop it never breaks."""

    SS_VMA = (0x7f0000001000, 0x7f0000003000, (1 << 37) | 0x73, None)   # rw-p, ss
    WORDS = {0x7f0000002ff0: 0x401234, 0x7f0000002ff8: 0x7f0000003001}

    def setUp(self):
        self.state = gdbmock.reset("x86_64")
        context.SETTINGS.update(on=False, words=6, colour="auto")
        commands._valid_in_copy_thread.clear()

    def good_target(self):
        task = x86_task(ssp=0x7f0000002ff0)
        self.state.current_task = gdbmock.pointer(task, address=PERCPU_CURRENT)
        return [mock.patch.object(vmas, "find",
                                  side_effect=lambda t, a: self.SS_VMA
                                  if self.SS_VMA[0] <= a < self.SS_VMA[1] else None),
                mock.patch.object(usermem, "read_u64", side_effect=lambda mm, a: self.WORDS.get(a)),
                mock.patch.object(usermem, "task_mm", return_value=None)]

    def test_the_view_of_a_shadow_stack(self):
        patches = self.good_target()
        for p in patches:
            p.start()
        self.addCleanup(mock.patch.stopall)
        out = gdb.execute("shstk-context", to_string=True)
        self.assertIn("task   pid 42 (shstk_gdb), shadow stack enabled", out)
        self.assertIn("ssp    0x7f0000002ff0  [CET user state", out)
        self.assertIn("vma    0x7f0000001000-0x7f0000003000 (8192 bytes, rw-p", out)
        self.assertRegex(out, r"0x7f0000002ff0  0x0000000000401234  <- ssp")
        self.assertRegex(out, r"0x7f0000002ff8  0x00007f0000003001  valid token for this slot")
        self.assertNotIn("\x1b[", out)                 # no terminal: no colour
        context.SETTINGS["colour"] = "on"
        self.assertIn("\x1b[1;33m0x7f0000002ff0\x1b[0m", gdb.execute("shstk-context", to_string=True))

    def test_a_token_this_clone3_consumed_is_not_a_refusal(self):
        # Valid in copy_thread(); after the token check returned
        # to copy_process(), the word is 0: consumed by this very call.  A
        # second call with the same struct and token, whose copy_thread()
        # already finds 0, is a refusal (gdb-check's "reused" case).
        for p in self.good_target():
            p.start()
        self.addCleanup(mock.patch.stopall)
        words = dict(self.WORDS)
        mock.patch.object(usermem, "read_u64", side_effect=lambda mm, a: words.get(a)).start()

        class CloneArgs(dict):
            address = 0xffffc90000123e98
        token, child = 0x7f0000002ff8, 0xffff888000200000
        mock.patch.object(commands, "clone_args_in_frame",
                          return_value=CloneArgs(shstk_token=token, flags=0x100, exit_signal=0,
                                                         stack=0, stack_size=0)).start()

        def stop_in(name):
            copy_process = gdbmock.Frame("copy_process", {"p": child})
            copy_thread = gdbmock.Frame("copy_thread", {"p": child}, older=copy_process)
            self.state.frame = {"copy_thread": copy_thread, "copy_process": copy_process,
                                "shstk_alloc_thread_stack":
                                gdbmock.Frame("shstk_alloc_thread_stack", older=copy_thread)}[name]
            return gdb.execute("shstk-context", to_string=True)

        words[token] = 0x7f0000003001
        self.assertIn("clone3(): accepted: valid token", stop_in("shstk_alloc_thread_stack"))
        words[token] = 0
        out = stop_in("copy_process")
        self.assertIn("clone3(): accepted: consumed by this clone3()", out)
        self.assertNotIn("EINVAL", out)
        self.assertIn("accepted: consumed by this clone3()", gdb.execute("shstk-clone-args", to_string=True))
        # The same struct and token again: its copy_thread() finds 0.
        self.assertIn("clone3(): refused: zero", stop_in("copy_thread"))
        self.assertIn("clone3(): refused: zero", stop_in("copy_process"))

    def test_a_failed_read_is_a_line_not_an_error(self):
        failing_target("arm64")
        out = gdb.execute("shstk-context", to_string=True)
        self.assertIn("cannot read the task on the selected CPU", out)
        self.assertIn("shstk-context off hides this", out)

    def test_the_stop_goes_on_whatever_happens(self):
        self.state = failing_target("x86_64")
        gdb.execute("shstk-context on", to_string=True)
        start = len(self.state.out)
        gdb.events.stop.fire()
        self.assertIn("cannot read the task", "".join(self.state.out[start:]))
        with mock.patch.object(context, "render", side_effect=KeyError("boom")):
            gdb.events.stop.fire()
        self.assertIn("shstk-context: internal error, KeyError", self.state.out[-1])
        gdb.execute("shstk-context off", to_string=True)
        start = len(self.state.out)
        gdb.events.stop.fire()
        self.assertEqual(self.state.out[start:], [])

    def test_usage(self):
        for bad in ("words 0", "colour blue", "sideways"):
            with self.subTest(arg=bad), self.assertRaises(gdb.GdbError) as e:
                gdb.execute(f"shstk-context {bad}")
            self.assertIn("usage: shstk-context", str(e.exception))


class PageWalkTest(unittest.TestCase):
    """usermem.translate() through each arch's ArchOps: the same walk, the
    arch's descriptors and linear map."""

    ADDR = 0x3f_8765_4321
    PAGE = 0x8_1234_5000
    TABLES = (0x10_0000, 0x11_0000, 0x12_0000, 0x13_0000)   # physical

    def walk(self, arch, levels, table_desc, page_desc, linear, symbols):
        state = gdbmock.reset(arch)
        state.symbols.update(symbols)
        tables = self.TABLES[:levels]
        for level, index in enumerate(decode.pt_indexes(self.ADDR, levels)):
            desc = page_desc(self.PAGE) if level == levels - 1 else table_desc(tables[level + 1])
            state.symbols[f"*(unsigned long long *){linear(tables[level]) + 8 * index:#x}"] = desc
        mm = gdbmock.Value(fields={"pgd": linear(tables[0])})
        return usermem.translate(mm, self.ADDR)

    def test_x86_64(self):
        base = 0xffff888000000000
        pa = self.walk("x86_64", 4, lambda p: p | 0x67, lambda p: p | 0x67, lambda p: base + p,
                       {"page_offset_base": base})
        self.assertEqual(pa, self.PAGE | 0x321)

    def test_arm64(self):
        memstart = 0x10_0000
        page_offset = 2**64 - 2**48
        pa = self.walk("arm64", 4, lambda p: p | 3, lambda p: p | 0x703, lambda p: (p - memstart) | page_offset,
                       {"(unsigned long)$TCR_EL1": 16, "memstart_addr": memstart})
        self.assertEqual(pa, self.PAGE | 0x321)

    def test_riscv64_sv39(self):
        offset = 0xff60000000000000 - 0x8000_0000
        pte = lambda p: (p >> 12) << 10   # noqa: E731  the PPN field
        pa = self.walk("riscv64", 3, lambda p: pte(p) | 1, lambda p: pte(p) | 0xd7,
                       lambda p: (p + offset) % 2**64,
                       {"pgtable_l5_enabled": 0, "pgtable_l4_enabled": 0,
                        "kernel_map.va_pa_offset": offset})
        self.assertEqual(pa, self.PAGE | 0x321)
        # A leaf above the last level (R, W or X set) maps a 2 MiB page.
        state = gdbmock.STATE
        for k, v in list(state.symbols.items()):
            if k.startswith("*(unsigned long long *)") and v & 1 and not v & 0xe:
                idx = decode.pt_indexes(self.ADDR, 3)
                if k.endswith(f"{(self.TABLES[1] + offset) % 2**64 + 8 * idx[1]:#x}"):
                    state.symbols[k] = pte(0x8_1240_0000) | 0xcf
        mm = gdbmock.Value(fields={"pgd": (self.TABLES[0] + offset) % 2**64})
        self.assertEqual(usermem.translate(mm, self.ADDR), 0x8_1240_0000 | (self.ADDR & 0x1fffff))
