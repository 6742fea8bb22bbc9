# SPDX-License-Identifier: GPL-2.0
"""The host tests.  They build their own scratch trees and series: the
kernel tree or series the make test running them was given (KSRC=,
SERIES=, BASELINE=) is not theirs, and no script they start may see it,
not even through make's own MAKEFLAGS, which hands a command line's
variables to every make below it."""
import os

for _name in ("SHSTK_KSRC", "SHSTK_KSRC_TAG_OF", "SHSTK_SERIES", "SHSTK_SERIES_TAG_OF",
              "SHSTK_BASELINE", "KSRC", "SERIES", "BASELINE", "SHSTK_TESTS", "TESTS",
              "MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
    os.environ.pop(_name, None)
