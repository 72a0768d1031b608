"""Baselines and performance gates: a benchmark's figures against its stored runs.

- :mod:`.fingerprint`: what a baseline was measured on (GPU, driver, CUDA, SGLang and
  libraries, model); :mod:`.hookspec`: the hook that changes it;
- :mod:`.store`: the pytest-benchmark JSON files, one per config, workload and fingerprint;
  :mod:`.legacy`: files of the old layout, re-keyed or refused;
- :mod:`.gates`: which metrics are compared and by how much they may move; :mod:`.stats`: the
  t-test behind a gate;
- :mod:`.gatekeeper`: the session's work (compare, confirm, save); :mod:`.upgrade`: a run gated
  against the software it replaced, with the settings that changed;
- :mod:`.history` and :mod:`.changepoint`: every stored run per key, and where a metric stepped;
  :mod:`.__main__`: ``python -m pytest_sglang.baseline`` (history, bisect);
- :mod:`.pytest_plugin`: the options, the ``sglang_gate`` marker and the table.
"""
