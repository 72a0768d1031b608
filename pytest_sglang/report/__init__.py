"""Reports: Allure parameters and attachments, Allure session files, sweep plots, HTML summary.

See ``docs/reports.md``. matplotlib (for the plots) is the optional extra ``report``.
"""

from .records import BenchRecord
from .sweeps import Sweep, SweepPoint, find_sweeps

__all__ = ["BenchRecord", "Sweep", "SweepPoint", "find_sweeps"]
