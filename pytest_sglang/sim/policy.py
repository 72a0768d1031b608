"""``--schedule-policy``: the order in which waiting requests are offered a prefill.

Why: with a prefix cache the order decides what is cached when each request is admitted, so
``lpm`` and ``fcfs`` give different ``cached_tokens`` and TTFTs for the same queue. The rules are
0.5.23's ``SchedulePolicy.calc_priority`` (``managers/schedule_policy.py``):

- ``fcfs`` (the default): arrival order; the queue is never re-sorted;
- ``lpm``: longest cached prefix first (a stable sort, so ties keep their order). In-batch
  prefix caching: a request whose cached prefix is at most 32 tokens but which shares at least
  32 tokens with a request before it in the queue is put last, so the first one's prefill
  caches the prefix for the others; with more than 128 waiting it falls back to ``fcfs``;
- ``dfs-weight``: depth first over the tree of the requests' cached prefixes, heavier subtrees
  first;
- ``shortest-prefill-first``: fewest uncached tokens first (in-batch prefix caching as ``lpm``;
  ties keep their order);
- ``lof``: the largest ``max_new_tokens`` first;
- ``random``: shuffled (seeded by ``SGLANG_SIM_SEED``, so a run repeats).

Matching a waiting request's prompt against the tree refreshes its prefix's LRU time, so under
memory pressure the policy also decides which cached prefixes survive eviction. The cache-aware
policies match every waiting request on every pass. The others (``fcfs``, and ``lpm`` while it
falls back to ``fcfs``) refresh the prefixes of the first 128 waiting requests every 32nd pass,
head of the queue last, so the next to be admitted is the last evicted
(``_touch_waiting_prefixes``, ``SGLANG_ENABLE_WAITING_PREFIX_REFRESH``, on by default).

A cache-aware policy (``lpm``, ``dfs-weight``, ``shortest-prefill-first``) with
``--disable-radix-cache`` is ``fcfs``, as SGLang adjusts it. ``hrrn``, ``routing-key`` and
``priority`` are not modelled: they keep the queue's order.
"""

from __future__ import annotations

import random
from typing import Protocol, TypeVar

from .kvcache import KvPool, ReqKv
from .radix import Node, RadixTree

__all__ = ["SchedulePolicy"]

#: Above this many waiting requests ``lpm`` sorts no more (``WAITING_QUEUE_PREFIX_MATCH_MAX``).
PREFIX_MATCH_MAX = 128
#: In-batch prefix caching: requests with at most this many cached tokens are checked ...
IN_BATCH_CHECK_THRESHOLD = 32
#: ... and put last when they share at least this many with one before them.
IN_BATCH_DEPRIORITIZE_THRESHOLD = 32

#: A cache-agnostic policy refreshes the waiting prefixes every this many passes
#: (``WAITING_PREFIX_REFRESH_INTERVAL``).
REFRESH_INTERVAL = 32

#: ``lpm``'s sort key of a request put last (SGLang's ``float("inf")``).
LAST = 1 << 62

CACHE_AWARE = ("lpm", "dfs-weight", "shortest-prefill-first")


class Waiting(Protocol):
    """What the policy reads of a waiting request."""

    @property
    def kv(self) -> ReqKv: ...

    @property
    def max_new_tokens(self) -> int: ...


W = TypeVar("W", bound=Waiting)


class SchedulePolicy:
    """Sorts the waiting queue in place before each prefill admission."""

    def __init__(self, policy: str, pool: KvPool, seed: int = 0) -> None:
        policy = policy.strip().lower()
        if policy in CACHE_AWARE and not pool.caching:
            policy = "fcfs"
        self.policy = policy
        self.pool = pool
        self._rng = random.Random(seed)
        self._refresh_calls = 0

    def active(self, waiting: int) -> str:
        """The policy in force for a queue of ``waiting`` requests."""
        if self.policy == "lpm" and waiting > PREFIX_MATCH_MAX:
            return "fcfs"
        return self.policy

    def order(self, waiting: list[W]) -> None:
        policy = self.active(len(waiting))
        if policy in CACHE_AWARE:
            matched, nodes, later = self._prefix_matches(waiting)
            if policy == "lpm":
                keys = {id(r): LAST if id(r) in later else -matched[id(r)] for r in waiting}
                waiting.sort(key=lambda r: keys[id(r)])
            elif policy == "dfs-weight":
                order = self.pool.tree.dfs_weight_order([nodes[id(r)] for r in waiting])
                waiting[:] = [waiting[i] for i in order]
            else:
                work = {
                    id(r): (id(r) in later, max(1, _prompt_len(r.kv) - matched[id(r)]))
                    for r in waiting
                }
                waiting.sort(key=lambda r: work[id(r)])
        elif policy == "lof":
            waiting.sort(key=lambda r: -r.max_new_tokens)
        elif policy == "random":
            self._rng.shuffle(waiting)
        if policy not in CACHE_AWARE:
            self._touch_waiting(waiting)

    def _touch_waiting(self, waiting: list[W]) -> None:
        """Every ``REFRESH_INTERVAL``-th pass of a cache-agnostic policy (the first included):
        refresh the LRU time of the first ``PREFIX_MATCH_MAX`` waiting requests' cached
        prefixes, the head last, as 0.5.23's ``_touch_waiting_prefixes`` does."""
        if not waiting or not self.pool.caching:
            return
        refresh = self._refresh_calls % REFRESH_INTERVAL == 0
        self._refresh_calls += 1
        if refresh:
            for r in reversed(waiting[:PREFIX_MATCH_MAX]):
                self.pool.touch(r.kv)

    def _prefix_matches(self, waiting: list[W]) -> tuple[dict[int, int], dict[int, Node], set[int]]:
        """Each request's cached prefix and its node, and those put last by in-batch prefix
        caching (``_compute_prefix_matches``: a scratch tree of the queue's prompts)."""
        matched: dict[int, int] = {}
        nodes: dict[int, Node] = {}
        later: set[int] = set()
        queue_tree = RadixTree()
        for r in waiting:
            length, node = self.pool.match(r.kv)
            matched[id(r)], nodes[id(r)] = length, node
            ids = r.kv.ids
            if ids is None or length > IN_BATCH_CHECK_THRESHOLD:
                continue
            shared, _ = queue_tree.match_prefix(ids)
            if shared >= IN_BATCH_DEPRIORITIZE_THRESHOLD:
                later.add(id(r))
            else:
                queue_tree.insert(ids)
        return matched, nodes, later


def _prompt_len(kv: ReqKv) -> int:
    return len(kv.ids) if kv.ids is not None else 0
