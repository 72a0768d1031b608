"""Run SGLang's real ``sglang.benchmark.serving`` offline, with arrival gaps given from outside.

Not a project module: ``benchmarks/peer_bench_serving.py`` runs it with the Python of a separate
venv that holds ``sglang==0.5.23`` (installed ``--no-deps``) and only what bench_serving imports
(aiohttp, numpy, msgspec, orjson, pybase64, requests, tqdm, transformers, tokenizers,
pillow). Why stubs: the
``sglang`` package's ``__init__`` and two helpers bench_serving imports from ``sglang.srt``
(``FAKE_BOOTSTRAP_HOST``, ``resolve_base_url``/``resolve_host_port``) pull in torch and zmq;
the package is mounted without its ``__init__`` and those two helpers are given their
documented values; Hugging Face ``datasets`` (imported at import time by the MMMU loader only)
is a stub that refuses to load. Nothing of bench_serving's request, timing or metric code is
replaced except ``get_request``, the arrival schedule, which replays ``GAPS_FILE`` (seconds
between consecutive request starts, from the first, on an absolute timetable as our client
does).

Usage: ``BENCH_PYTHON bench_serving_runner.py GAPS_FILE -- <bench_serving flags>``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import time
import types
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any


def _mount_sglang() -> None:
    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("sglang is not installed in this Python; run peer_bench_serving --install")
    root = next(iter(spec.submodule_search_locations))
    for name, path in (("sglang", root), ("sglang.srt", f"{root}/srt")):
        package = types.ModuleType(name)
        package.__path__ = [path]
        sys.modules[name] = package
    network = types.ModuleType("sglang.srt.utils.network")

    def resolve_base_url(base_url: str, host: str, port: int) -> str:
        return base_url or f"http://{host}:{port}"

    def resolve_host_port(base_url: str, host: str, port: int) -> str:
        return base_url or f"{host}:{port}"

    network.resolve_base_url = resolve_base_url  # type: ignore[attr-defined]
    network.resolve_host_port = resolve_host_port  # type: ignore[attr-defined]
    disagg = types.ModuleType("sglang.srt.disaggregation.utils")
    disagg.FAKE_BOOTSTRAP_HOST = "2.2.2.2"  # type: ignore[attr-defined]
    # only the MMMU loader imports Hugging Face ``datasets`` (pandas, pyarrow) at import time
    datasets = types.ModuleType("datasets")

    def load_dataset(*_: Any, **__: Any) -> Any:
        raise SystemExit("the datasets package is stubbed here: use a local dataset file")

    datasets.load_dataset = load_dataset  # type: ignore[attr-defined]
    for name, module in (
        ("datasets", datasets),
        ("sglang.srt.utils", types.ModuleType("sglang.srt.utils")),
        ("sglang.srt.utils.network", network),
        ("sglang.srt.disaggregation", types.ModuleType("sglang.srt.disaggregation")),
        ("sglang.srt.disaggregation.utils", disagg),
    ):
        sys.modules[name] = module


def main() -> None:
    gaps_file, sep, *flags = sys.argv[1:]
    if sep != "--":
        raise SystemExit(__doc__)
    gaps = [float(g) for g in json.loads(Path(gaps_file).read_text())]
    _mount_sglang()
    from sglang.benchmark import serving

    async def replayed(requests: list[Any], *_: Any, **__: Any) -> AsyncIterator[Any]:
        first = time.perf_counter()
        offset = 0.0
        for request, gap in zip(requests, [0.0, *gaps]):
            offset += gap
            wait = first + offset - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            yield request

    serving.get_request = replayed  # type: ignore[assignment]
    sys.argv = ["bench_serving", *flags]
    serving.cli_main()


if __name__ == "__main__":
    main()
