# SPDX-License-Identifier: GPL-2.0
"""Host-side checks of what a guest run left behind: the console log, the
results channel (KTAP per guest program), and the report built from them."""
