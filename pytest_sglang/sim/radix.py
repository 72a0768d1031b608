"""The simulator's radix tree over cached token ids: SGLang's ``RadixCache`` without the tensors.

Why a real tree and not a hit-rate knob: ``cached_tokens`` per request, the prefill saved by a
shared system prompt or a multi-turn history, and which prefix LRU eviction drops when the KV
pool is full all follow from the exact order of matches, inserts and evictions. This module
plays SGLang 0.5.23's rules (``mem_cache/radix_cache.py``) on token-id arrays:

- a node holds a run of token ids (``key``); its children are keyed by their first id, or their
  first page of ids when ``page_size`` > 1; a node's value in SGLang is its KV slots, which only
  matter here by their number (``len(key)``);
- ``match_prefix`` walks the longest cached prefix, rounded down to whole pages, and splits the
  node a match ends inside (the new node is the parent; the old one keeps its identity);
- ``insert`` adds what is not cached yet and returns how much was (the duplicate KV a request
  then gives back);
- every walk stamps the nodes it passes with the current time; SGLang uses
  ``time.monotonic()``, the simulator a logical clock (one tick per walk), so the same request
  sequence evicts the same nodes;
- ``lock`` / ``unlock`` count running requests on a node and its ancestors; a locked node is
  "protected", an unlocked one "evictable";
- ``evict`` removes unlocked leaves, least recently used first (ties: older node first), and a
  parent that becomes such a leaf goes into the same heap, until enough tokens are freed.

A disabled tree (``--disable-radix-cache``) matches nothing, stores nothing and evicts nothing.
"""

from __future__ import annotations

import heapq
import itertools
from array import array
from collections.abc import Sequence

__all__ = ["Node", "RadixTree", "bigram_key"]

#: Ids are masked to 31 bits before two are packed into one bigram id (below 2**62).
_ID_MASK = (1 << 31) - 1


def bigram_key(ids: Sequence[int]) -> array[int]:
    """EAGLE's bigram view of ``ids`` (``RadixKey.is_bigram``): one key per adjacent pair, so a
    key of N ids has N - 1 entries, and a match of k entries covers k tokens' KV."""
    return array("q", [((a & _ID_MASK) << 31) | (b & _ID_MASK) for a, b in itertools.pairwise(ids)])


def _common_prefix(a: array[int], b: array[int], offset: int) -> int:
    """How many leading ids of ``a`` equal ``b[offset:]``: SGLang's galloping compare (doubling
    windows, one C-level slice compare each, then a binary search in the window that differs)."""
    n = min(len(a), len(b) - offset)
    lo, step = 0, 1
    while lo < n:
        hi = min(lo + step, n)
        if a[lo:hi] != b[offset + lo : offset + hi]:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if a[lo:mid] == b[offset + lo : offset + mid]:
                    lo = mid
                else:
                    hi = mid
            return lo
        lo = hi
        step *= 2
    return n


class Node:
    """One run of cached token ids."""

    __slots__ = ("children", "id", "key", "lock_ref", "parent", "tick")

    def __init__(self, key: array[int], parent: Node | None, tick: int, node_id: int) -> None:
        self.children: dict[object, Node] = {}
        self.parent = parent
        self.key = key
        self.lock_ref = 0
        self.tick = tick
        self.id = node_id

    def __repr__(self) -> str:
        return f"Node(id={self.id}, len={len(self.key)}, lock_ref={self.lock_ref})"


class RadixTree:
    """The cached prefixes of every request, page-granular, with lock counts and LRU eviction."""

    def __init__(self, page_size: int = 1, disabled: bool = False) -> None:
        self.page_size = max(1, int(page_size))
        self.disabled = disabled
        self._ids = itertools.count()
        self._clock = itertools.count(1)
        self.reset()

    def reset(self) -> None:
        """Drop every cached prefix (``/flush_cache``)."""
        self.root = Node(array("q"), None, 0, next(self._ids))
        self.root.lock_ref = 1
        self.evictable_size = 0
        self.protected_size = 0
        self._leaves: set[Node] = set()

    @property
    def total_size(self) -> int:
        """Tokens the tree holds (evictable + protected)."""
        return self.evictable_size + self.protected_size

    # ------------------------------------------------------------------ keys
    def _child_key(self, key: array[int], offset: int) -> object:
        if self.page_size == 1:
            return key[offset]
        return tuple(key[offset : offset + self.page_size])

    def _aligned(self, n: int) -> int:
        return n // self.page_size * self.page_size

    # ------------------------------------------------------------------ match and insert
    def match_prefix(self, key: array[int]) -> tuple[int, Node]:
        """(length of the longest cached prefix of ``key``, whole pages; the node it ends at)."""
        end = self._aligned(len(key))
        if self.disabled or end == 0:
            return 0, self.root
        return self._descend(key, end)

    def insert(self, key: array[int]) -> tuple[int, Node]:
        """Cache ``key`` (cut to whole pages): (how much of it was cached already, its node)."""
        end = self._aligned(len(key))
        if self.disabled or end == 0:
            return 0, self.root
        pos, node = self._descend(key, end)
        if pos < end:
            new = Node(key[pos:end], node, node.tick, next(self._ids))
            node.children[self._child_key(key, pos)] = new
            self.evictable_size += end - pos
            self._update_leaf(node)
            self._update_leaf(new)
            return pos, new
        return pos, node

    def _descend(self, key: array[int], end: int) -> tuple[int, Node]:
        """Walk the cached prefix of ``key[:end]``, stamping each node passed with one new tick,
        and split the node the match ends inside: (ids matched, whole pages; the last node)."""
        key = key[:end] if end < len(key) else key
        tick = next(self._clock)
        node = self.root
        node.tick = tick
        pos = 0
        while pos < end:
            child = node.children.get(self._child_key(key, pos))
            if child is None:
                break
            child.tick = tick
            shared = self._aligned(_common_prefix(child.key, key, pos))
            pos += shared
            if shared < len(child.key):
                return pos, self._split(child, shared)
            node = child
        return pos, node

    def _split(self, child: Node, at: int) -> Node:
        """Cut ``child`` after ``at`` ids: a new parent node takes the head, ``child`` the rest."""
        parent = child.parent
        assert parent is not None
        head = Node(child.key[:at], parent, child.tick, next(self._ids))
        head.lock_ref = child.lock_ref
        parent.children[self._child_key(child.key, 0)] = head
        child.key = child.key[at:]
        child.parent = head
        head.children[self._child_key(child.key, 0)] = child
        return head

    # ------------------------------------------------------------------ locks
    def lock(self, node: Node) -> None:
        """A running request holds ``node`` and its ancestors: they may not be evicted."""
        if self.disabled:
            return
        while node is not self.root:
            if node.lock_ref == 0:
                self.evictable_size -= len(node.key)
                self.protected_size += len(node.key)
            node.lock_ref += 1
            self._update_leaf(node)
            assert node.parent is not None
            node = node.parent

    def unlock(self, node: Node) -> None:
        if self.disabled:
            return
        while node is not self.root:
            if node.lock_ref == 1:
                self.evictable_size += len(node.key)
                self.protected_size -= len(node.key)
            node.lock_ref -= 1
            self._update_leaf(node)
            assert node.parent is not None
            node = node.parent

    # ------------------------------------------------------------------ eviction
    def _update_leaf(self, node: Node) -> None:
        if node is not self.root and node.lock_ref == 0 and not node.children:
            self._leaves.add(node)
        else:
            self._leaves.discard(node)

    def evict(self, num_tokens: int) -> int:
        """Free at least ``num_tokens`` by dropping unlocked leaves, least recently used first;
        returns the tokens freed (whole nodes, so it can be more; less when nothing is left)."""
        if self.disabled or num_tokens <= 0:
            return 0
        heap = [(n.tick, n.id, n) for n in self._leaves]
        heapq.heapify(heap)
        freed = 0
        while freed < num_tokens and heap:
            _, _, node = heapq.heappop(heap)
            parent = node.parent
            assert parent is not None
            del parent.children[self._child_key(node.key, 0)]
            self._leaves.discard(node)
            self.evictable_size -= len(node.key)
            freed += len(node.key)
            self._update_leaf(parent)
            if parent in self._leaves:
                heapq.heappush(heap, (parent.tick, parent.id, parent))
        return freed

    # ------------------------------------------------------------------ scheduling
    def dfs_weight_order(self, nodes: Sequence[Node]) -> list[int]:
        """SGLang's ``dfs-weight`` order of requests whose matches end at ``nodes``: depth first,
        heavier subtrees (more waiting requests under them) first, a node's own requests after
        its subtrees' (``base_prefix_cache._dfs_weight_order``)."""
        at: dict[Node, list[int]] = {}
        for index, node in enumerate(nodes):
            at.setdefault(node, []).append(index)
        weight: dict[Node, int] = {node: len(indices) for node, indices in at.items()}
        stack: list[tuple[Node, bool]] = [(self.root, False)]
        while stack:
            node, visited = stack.pop()
            if visited:
                weight[node] = weight.get(node, 0) + sum(
                    weight.get(c, 0) for c in node.children.values()
                )
                continue
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(list(node.children.values())))
        order: list[int] = []
        stack = [(self.root, False)]
        while stack:
            node, visited = stack.pop()
            if visited:
                order.extend(at.get(node, ()))
                continue
            children = sorted(node.children.values(), key=lambda c: -weight.get(c, 0))
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(children))
        return order
