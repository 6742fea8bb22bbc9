# SPDX-License-Identifier: GPL-2.0
"""Facts the whole harness reads: the architecture table (arches.py)."""
