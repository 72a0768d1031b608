"""The simulated KV pool: what the radix tree caches, what running requests hold, what is free.

Why a pool and not only a tree: whether a prefix is still cached depends on what else needed the
memory (LRU eviction when the pool is full), and what the startup log, the ``Prefill batch`` /
``Decode batch`` lines and ``/metrics`` report as used and evictable follows from the same
figures. The accounting, in tokens (SGLang's ``token_to_kv_pool_allocator`` plus its tree):

- ``capacity``: ``max_total_num_tokens``;
- the tree's ``total_size``: cached KV, ``evictable`` (no running request on it) or ``protected``;
- ``own``: KV that running requests hold outside the tree (what a prefill computed beyond the
  match until it is inserted, a page's tail, the decoded tokens until the request finishes);
- ``available`` = capacity - tree - own: free slots (below 0 when decoding overcommitted the pool:
  SGLang would retract a request there, the simulator lets it run);
- ``used`` = capacity - available - evictable = protected + own: SGLang's ``num_used_tokens``.

A request's lifecycle, as SGLang 0.5.23 runs it (``mem_cache/common.py``, ``UnifiedRadixCache``):
:meth:`KvPool.match` finds its cached prefix (at most its length - 1: one token is always
computed for the first logits), :meth:`KvPool.admit` locks it, :meth:`KvPool.alloc` takes slots
(evicting the shortfall first), :meth:`KvPool.checkpoint` inserts what a prefill (or a chunk of
one) computed and moves the lock onto the inserted node, and :meth:`KvPool.release` unlocks and
frees what the tree did not take, after the caller checkpointed the finished sequence.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from .radix import Node, RadixTree, bigram_key

__all__ = ["KvPool", "ReqKv", "token_array"]


def token_array(ids: Sequence[int] | None) -> array[int] | None:
    """``ids`` as the tree's array of int64, or None when there are none or one does not fit
    (such a request is served, never cached)."""
    if ids is None:
        return None
    try:
        return array("q", ids)
    except (OverflowError, TypeError):
        return None


@dataclass(eq=False)
class ReqKv:
    """One request's share of the pool."""

    #: the prompt's token ids; None: the request is served but never matched nor inserted
    ids: array[int] | None
    #: the tree node the request holds locked (its cached prefix so far)
    node: Node | None = None
    #: leading tokens of its sequence that the tree owns
    cache_len: int = 0
    #: tokens of KV it references (the tree's part and its own)
    kv_len: int = 0
    #: the cached prefix found at admission: its ``cached_tokens``
    prefix_len: int = 0
    #: prompt tokens computed so far (the prefix included): less than the prompt mid-chunk
    extend_end: int = 0


class KvPool:
    """The token pool and the radix tree over it."""

    def __init__(self, capacity: int, page_size: int = 1, radix: bool = True, bigram: bool = False):
        self.capacity = max(1, int(capacity))
        self.tree = RadixTree(page_size, disabled=not radix)
        self.page_size = self.tree.page_size
        #: EAGLE-family speculative decoding keys the tree by bigrams (``RadixKey.is_bigram``)
        self.bigram = bigram
        self.own = 0

    @property
    def caching(self) -> bool:
        return not self.tree.disabled

    @property
    def available(self) -> int:
        return self.capacity - self.tree.total_size - self.own

    @property
    def evictable(self) -> int:
        return self.tree.evictable_size

    @property
    def used(self) -> int:
        return self.tree.protected_size + self.own

    def ceil_page(self, tokens: int) -> int:
        return -(-tokens // self.page_size) * self.page_size

    def _key(self, ids: array[int]) -> array[int]:
        return bigram_key(ids) if self.bigram else ids

    # ------------------------------------------------------------------ admission
    def match(self, kv: ReqKv, limit: int | None = None) -> tuple[int, Node]:
        """(cached prefix of the request's prompt, whole pages, at most ``limit`` tokens (default:
        its length - 1); the node it ends at). Refreshes the path's LRU time, as SGLang does."""
        if kv.ids is None or not self.caching:
            return 0, self.tree.root
        if limit is None:
            limit = len(kv.ids) - 1
        return self.tree.match_prefix(self._key(kv.ids[: max(0, limit)]))

    def touch(self, kv: ReqKv) -> None:
        """Refresh the LRU time of the request's cached prefix (its whole prompt, whole pages),
        matching nothing for it: SGLang's ``touch_prefix``."""
        if kv.ids is not None and self.caching:
            self.tree.match_prefix(self._key(kv.ids))

    def admit(self, kv: ReqKv, prefix_len: int, node: Node) -> None:
        """The request starts on its cached prefix: lock it (it is no longer evictable)."""
        self.tree.lock(node)
        kv.node = node
        kv.prefix_len = kv.cache_len = kv.kv_len = kv.extend_end = prefix_len

    def fits(self, tokens: int) -> bool:
        """Whether ``tokens`` more slots can be had, evicting unlocked prefixes if need be."""
        return self.available + self.evictable >= tokens

    def alloc(self, kv: ReqKv, tokens: int) -> None:
        """Take ``tokens`` slots for the request, evicting the shortfall first (LRU)."""
        if tokens <= 0:
            return
        shortfall = tokens - self.available
        if shortfall > 0:
            self.tree.evict(shortfall)
        kv.kv_len += tokens
        self.own += tokens

    # ------------------------------------------------------------------ caching
    def checkpoint(self, kv: ReqKv, ids: array[int] | None) -> None:
        """Insert the computed sequence ``ids`` (whole pages) and hold its node instead: the
        request's KV up to there becomes the tree's, and a part another request inserted first
        is given back (SGLang frees such duplicates)."""
        if ids is None or not self.caching:
            return
        key = self._key(ids)
        aligned = len(key) // self.page_size * self.page_size
        if aligned <= kv.cache_len:
            return
        _, node = self.tree.insert(key)
        self.tree.lock(node)
        if kv.node is not None:
            self.tree.unlock(kv.node)
        kv.node = node
        self.own -= aligned - kv.cache_len
        kv.cache_len = aligned

    def split_at(self, ids: array[int]) -> None:
        """Cut the cached path at ``ids``' end (SGLang splits a finished request's leaf at the
        prompt boundary, so eviction can drop the output's KV before the prompt's)."""
        if self.caching and ids:
            self.tree.insert(self._key(ids))

    def release(self, kv: ReqKv) -> None:
        """The request is gone: unlock its node and free the KV the tree did not take."""
        if kv.node is not None:
            self.tree.unlock(kv.node)
            kv.node = None
        self.own -= kv.kv_len - kv.cache_len
        kv.kv_len = kv.cache_len = 0

    def flush(self) -> None:
        """Drop every cached prefix (only while no request holds any: ``/flush_cache``)."""
        self.tree.reset()
