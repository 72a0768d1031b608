"""Scenario defaults.

On the built-in simulator, startup phases run at 5% of a real GPU host's duration so that the
whole sweep takes seconds; set SGLANG_SIM_STARTUP_SCALE=1 to watch a realistic startup. Real
hosts (``--sglang-host NAME``) ignore these variables.
"""

from __future__ import annotations

import os

os.environ.setdefault("SGLANG_SIM_STARTUP_SCALE", "0.05")
