"""The simulator's prefix cache held to the real server's: the same requests, the same cached
tokens.

One request sequence is sent to the real 0.5.23 server on CPU and to the simulator, each
started from the same production line with the same ``--page-size`` and pool
(``--max-total-tokens``), one request at a time and after ``/flush_cache``; the
``cached_tokens`` each reports per request must be equal, request by request. Requests carry
``input_ids`` (the two tokenizers differ; docs/simulator.md "Prefix cache"), all below the tiny
model's vocabulary of 1000, with ``ignore_eos`` so every reply is ``max_new_tokens`` long.

The sequence covers what the tree does: a fresh prompt (0), a prompt sharing a cached prefix
(the prefix, in whole pages), the same prompt again (all but the one token every prefill
computes), a prompt that extends an earlier prompt with its reply (the prompt and the reply but
its last token, whose KV is never computed), an unrelated prompt (0), and
``usage.prompt_tokens_details.cached_tokens`` on ``/v1/completions`` under
``--enable-cache-report``. With a pool of 400 tokens, prompts of 100 evict the least recently
used prefix, and which ones survive is compared too.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import requests

from conftest import RealSglang, real_and_simulator
from pytest_sglang import production
from pytest_sglang.lifecycle.deployment import Deployment
from pytest_sglang.session import SglangSession

#: The shared prompt: 100 token ids, all in the tiny model's vocabulary (1000 ids).
A = list(range(100, 200))
MAX_NEW = 8


@pytest.fixture(scope="module")
def session(
    real_sglang: RealSglang, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SglangSession]:
    """The tier's production config with cache reports, as the real server and the simulator."""
    line = real_sglang.production_line("--enable-cache-report")
    session = real_and_simulator(real_sglang, tmp_path_factory.mktemp("inventory"), line)
    try:
        yield session
    finally:
        session.restore_all()


def both(session: SglangSession, *flags: str) -> tuple[Deployment, Deployment]:
    config = production(extra_args=flags) if flags else production()
    return session.host("real").deployment(config), session.host("sim").deployment(config)


def flush(url: str) -> None:
    """``/flush_cache``: refused (400) while a request is still in flight, so retried briefly."""
    for _ in range(40):
        if requests.post(url + "/flush_cache", timeout=30).status_code == 200:
            return
        time.sleep(0.25)
    raise AssertionError(f"{url}/flush_cache kept refusing to flush")


def generate(url: str, ids: list[int]) -> tuple[int, list[int]]:
    """One ``/generate`` on ``input_ids``: its cached tokens and its output ids."""
    body = {
        "input_ids": ids,
        "sampling_params": {"max_new_tokens": MAX_NEW, "ignore_eos": True, "temperature": 0},
    }
    resp = requests.post(url + "/generate", json=body, timeout=120)
    resp.raise_for_status()
    answer = resp.json()
    return int(answer["meta_info"]["cached_tokens"]), list(answer["output_ids"])


def shared_prefix_sequence(url: str) -> list[int]:
    """The sequence of the module docstring; the cached tokens of each request in order."""
    flush(url)
    cached = []
    first, out1 = generate(url, A)
    cached.append(first)
    for ids in (
        A + list(range(300, 310)),
        A,
        A + out1 + list(range(400, 405)),
        list(range(500, 600)),
    ):
        cached.append(generate(url, ids)[0])
    body = {"model": "m", "prompt": [*A, 700], "max_tokens": MAX_NEW, "temperature": 0}
    resp = requests.post(url + "/v1/completions", json=body, timeout=120)
    resp.raise_for_status()
    cached.append(int(resp.json()["usage"]["prompt_tokens_details"]["cached_tokens"]))
    return cached


def eviction_sequence(url: str) -> list[int]:
    """Prompts of 100 distinct ids through a pool of 400: which prefixes LRU keeps."""
    flush(url)
    prompts = [list(range(100 + 100 * i, 200 + 100 * i)) for i in range(5)]
    order = [0, 1, 2, 0, 3, 1, 0, 4, 3, 2, 4]
    return [generate(url, prompts[i])[0] for i in order]


#: page size -> the cached tokens of :func:`shared_prefix_sequence`, as the real server reports
#: them (page 1: the shared 100, all but one of 100, 100 + 8 - 1; page 16: those in whole pages).
SHARED_PREFIX = {1: [0, 100, 99, 107, 0, 100], 16: [0, 96, 96, 96, 0, 96]}


@pytest.mark.parametrize("page", [1, 16])
def test_cached_tokens_per_request_agree(session: SglangSession, page: int) -> None:
    real, sim = both(session, "--page-size", str(page))
    on_real = shared_prefix_sequence(real.base_url)
    on_sim = shared_prefix_sequence(sim.base_url)
    assert on_sim == on_real, f"page {page}: real {on_real}, simulator {on_sim}"
    assert on_real == SHARED_PREFIX[page]


def test_lru_eviction_in_a_full_pool_agrees(session: SglangSession) -> None:
    real, sim = both(session, "--max-total-tokens", "400")
    on_real = eviction_sequence(real.base_url)
    on_sim = eviction_sequence(sim.base_url)
    assert on_sim == on_real, f"pool 400: real {on_real}, simulator {on_sim}"
    assert any(on_real) and not all(on_real)  # some prefixes survived, some were evicted
