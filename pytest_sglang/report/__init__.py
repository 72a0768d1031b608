"""Reports: Allure parameters and attachments, Allure session files, sweep plots, HTML summary.

- :mod:`.records` (what the report keeps of each test), :mod:`.collector` (the session's
  records and the files at the end), :mod:`.config_names` (one config digest, the names tests
  gave it), :mod:`.environment` (the machine the numbers came from);
- :mod:`.sweeps` (which runs form a sweep), :mod:`.tables` (HTML and CSV), :mod:`.plots` (sweep
  plots), :mod:`.html_summary` (the single-file page), :mod:`.allure_output` (everything
  written for Allure);
- :mod:`.tuning` (the tuning verdict), :mod:`.tuning_plot` (its chart), :mod:`.tuning_plugin`
  (the verdict in the terminal);
- :mod:`.pytest_plugin` (the hooks).

See ``docs/reports.md``. matplotlib (for the plots) is the optional extra ``report``.
"""

from .records import BenchRecord
from .sweeps import Sweep, SweepPoint, find_sweeps

__all__ = ["BenchRecord", "Sweep", "SweepPoint", "find_sweeps"]
