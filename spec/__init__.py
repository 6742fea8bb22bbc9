# SPDX-License-Identifier: GPL-2.0
"""What a run must show, read by every layer that makes or judges one: the
gdb scenario the guest plays and gdb and the checks follow, the signs
of a broken kernel in a console log, and what TESTS= chooses of the guest
suite."""
