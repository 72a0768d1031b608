"""The coverage table of 0.5.23's messages and refusals (conformance/source_coverage.py) is the one
the committed source of the real package and this checkout give.

Why: the table says which rule is modelled where; it goes stale when a rule is ported. Runs
where the real-SGLang tier's venv is (it reads the source only), skipped elsewhere.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "conformance"))

import source_coverage as coverage  # noqa: E402

#: Written by tests_real/install_sglang.sh once the package is whole: a venv still being installed
#: has the folder but not yet every source file.
INSTALLED = coverage.SITE.parents[2] / ".installed-sglang-0.5.23"


@pytest.mark.skipif(not INSTALLED.is_file(), reason="the real 0.5.23 venv is not (wholly) here")
def test_the_committed_coverage_table_is_current() -> None:
    sites = coverage.enumerate_sites(coverage.SITE)
    coverage.mark_modelled(sites)
    assert len(sites) > 1000
    assert coverage.render(sites) == coverage.OUT.read_text()
    assert coverage.render(sites).split("\n## Every site")[0].split("\n\n", 2)[2].strip() in (
        coverage.README.read_text()
    )
