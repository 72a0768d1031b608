"""The prefix cache's parts on their own: the radix tree (match, insert, split, locks, LRU
eviction, pages, bigrams), the KV pool's accounting, the schedule policies' order, and the
tokenizer's prompt ids that the cache matches."""

from __future__ import annotations

from array import array

from pytest_sglang.sim.kvcache import KvPool, ReqKv, token_array
from pytest_sglang.sim.policy import PREFIX_MATCH_MAX, SchedulePolicy
from pytest_sglang.sim.radix import RadixTree, bigram_key
from pytest_sglang.sim.scheduler import Request
from pytest_sglang.sim.tokenizer import (
    chat_prompt_ids,
    chat_prompt_tokens,
    count_tokens,
    text_ids,
    token_id,
    token_text,
)


def ids(*values: int) -> array[int]:
    return array("q", values)


def run(start: int, length: int) -> array[int]:
    return array("q", range(start, start + length))


# -- the tree ---------------------------------------------------------------------------------


def test_match_finds_the_longest_cached_prefix() -> None:
    tree = RadixTree()
    assert tree.insert(ids(1, 2, 3, 4))[0] == 0
    assert tree.match_prefix(ids(1, 2, 3, 4, 5))[0] == 4
    assert tree.match_prefix(ids(1, 2, 9))[0] == 2
    assert tree.match_prefix(ids(7, 1, 2))[0] == 0
    assert tree.total_size == tree.evictable_size == 4


def test_insert_reports_what_was_cached_and_adds_only_the_rest() -> None:
    tree = RadixTree()
    tree.insert(ids(1, 2, 3, 4))
    cached, _ = tree.insert(ids(1, 2, 3, 4, 5, 6))
    assert cached == 4
    assert tree.total_size == 6
    cached, _ = tree.insert(ids(1, 2, 7))
    assert cached == 2
    assert tree.total_size == 7


def test_a_match_ending_inside_a_node_splits_it() -> None:
    tree = RadixTree()
    _, leaf = tree.insert(ids(1, 2, 3, 4, 5))
    length, node = tree.match_prefix(ids(1, 2, 3, 9))
    assert length == 3
    assert list(node.key) == [1, 2, 3]
    assert leaf.parent is node and list(leaf.key) == [4, 5]  # the old node keeps its identity
    assert tree.root.children[1] is node
    assert tree.total_size == 5


def test_pages_match_and_insert_whole_pages_only() -> None:
    tree = RadixTree(page_size=4)
    cached, _ = tree.insert(run(0, 10))  # 8 tokens: two whole pages
    assert cached == 0 and tree.total_size == 8
    assert tree.match_prefix(run(0, 10))[0] == 8
    assert tree.match_prefix(ids(0, 1, 2, 3, 4, 5, 99, 7))[0] == 4  # differs in page 2
    assert tree.match_prefix(ids(0, 1, 2))[0] == 0  # less than a page


def test_locked_nodes_are_protected_and_unlocking_makes_them_evictable() -> None:
    tree = RadixTree()
    _, node = tree.insert(ids(1, 2, 3))
    tree.insert(ids(1, 2, 3, 4, 5))
    tree.lock(node)
    assert (tree.protected_size, tree.evictable_size) == (3, 2)
    assert tree.evict(100) == 2  # only the unlocked tail goes
    assert tree.match_prefix(ids(1, 2, 3, 4))[0] == 3
    tree.unlock(node)
    assert (tree.protected_size, tree.evictable_size) == (0, 3)
    assert tree.evict(1) == 3  # a whole node
    assert tree.total_size == 0


def test_eviction_drops_the_least_recently_used_leaves_first() -> None:
    tree = RadixTree()
    tree.insert(run(100, 10))  # a
    tree.insert(run(200, 10))  # b
    tree.insert(run(300, 10))  # c
    tree.match_prefix(run(100, 10))  # a used again: b is now the oldest
    assert tree.evict(5) == 10
    assert tree.match_prefix(run(200, 10))[0] == 0
    assert tree.match_prefix(run(100, 10))[0] == 10
    assert tree.match_prefix(run(300, 10))[0] == 10


def test_eviction_climbs_to_a_parent_that_becomes_a_leaf() -> None:
    tree = RadixTree()
    tree.insert(ids(1, 2, 3, 4))
    tree.insert(ids(1, 2, 5, 6))
    tree.insert(run(100, 4))
    tree.match_prefix(run(100, 4))  # the unrelated prefix is the most recent
    assert tree.evict(5) == 6  # both branches, then their shared parent [1, 2]
    assert tree.total_size == 4
    assert tree.match_prefix(ids(1, 2, 3))[0] == 0


def test_a_disabled_tree_caches_nothing() -> None:
    tree = RadixTree(disabled=True)
    assert tree.insert(ids(1, 2, 3))[0] == 0
    assert tree.match_prefix(ids(1, 2, 3))[0] == 0
    assert tree.total_size == 0
    assert tree.evict(10) == 0


def test_bigram_keys_are_one_shorter_and_tell_pairs_apart() -> None:
    assert len(bigram_key([1, 2, 3, 4])) == 3
    assert bigram_key([1, 2]) != bigram_key([2, 1])
    assert len(bigram_key([5])) == 0


def test_dfs_weight_order_puts_the_heaviest_subtree_first() -> None:
    tree = RadixTree()
    tree.insert(run(100, 8))
    tree.insert(run(200, 8))
    _, light = tree.match_prefix(run(100, 8))
    _, heavy = tree.match_prefix(run(200, 8))
    # requests 0 (light), 1 and 2 (heavy), 3 (nothing cached: last)
    assert tree.dfs_weight_order([light, heavy, heavy, tree.root]) == [1, 2, 0, 3]


# -- the pool ---------------------------------------------------------------------------------


def test_the_pool_counts_free_evictable_and_used_tokens() -> None:
    pool = KvPool(100)
    kv = ReqKv(run(0, 30))
    prefix, node = pool.match(kv)
    assert prefix == 0
    pool.admit(kv, prefix, node)
    pool.alloc(kv, 30)
    assert (pool.available, pool.evictable, pool.used) == (70, 0, 30)
    pool.checkpoint(kv, run(0, 30))  # the prefill's KV becomes the tree's, still locked
    assert (pool.available, pool.evictable, pool.used) == (70, 0, 30)
    pool.release(kv)
    assert (pool.available, pool.evictable, pool.used) == (70, 30, 0)


def test_a_second_request_is_matched_up_to_its_length_less_one() -> None:
    pool = KvPool(100)
    first = ReqKv(run(0, 30))
    pool.admit(first, *pool.match(first))
    pool.alloc(first, 30)
    pool.checkpoint(first, run(0, 30))
    pool.release(first)
    again = ReqKv(run(0, 30))
    assert pool.match(again)[0] == 29  # one token is always computed
    longer = ReqKv(run(0, 40))
    assert pool.match(longer)[0] == 30


def test_duplicates_computed_side_by_side_are_given_back() -> None:
    pool = KvPool(100)
    a, b = ReqKv(run(0, 20)), ReqKv(run(0, 20))
    for kv in (a, b):  # both admitted before either is cached: no hit
        pool.admit(kv, *pool.match(kv))
        pool.alloc(kv, 20)
    assert pool.used == 40
    pool.checkpoint(a, run(0, 20))
    pool.checkpoint(b, run(0, 20))
    assert pool.used == 20 and pool.tree.total_size == 20
    pool.release(a)
    pool.release(b)
    assert (pool.available, pool.evictable) == (80, 20)


def test_allocation_evicts_the_shortfall_from_unlocked_prefixes() -> None:
    pool = KvPool(50)
    old = ReqKv(run(0, 40))
    pool.admit(old, *pool.match(old))
    pool.alloc(old, 40)
    pool.checkpoint(old, run(0, 40))
    pool.release(old)
    new = ReqKv(run(100, 30))
    pool.admit(new, *pool.match(new))
    assert pool.fits(30)
    pool.alloc(new, 30)  # 10 free: the old prefix goes
    assert pool.tree.total_size == 0
    assert pool.available == 20


def test_ids_that_do_not_fit_int64_are_served_uncached() -> None:
    assert token_array([1, 1 << 70]) is None
    assert token_array(None) is None


# -- the policies -----------------------------------------------------------------------------


def waiting_request(prompt: array[int], max_new: int = 16) -> Request:
    return Request(len(prompt), max_new, False, 0.0, 0, prompt_ids=list(prompt))


def cached_pool(*prompts: array[int]) -> KvPool:
    pool = KvPool(10_000)
    for prompt in prompts:
        kv = ReqKv(prompt)
        pool.admit(kv, *pool.match(kv))
        pool.alloc(kv, len(prompt))
        pool.checkpoint(kv, prompt)
        pool.release(kv)
    return pool


def test_fcfs_keeps_arrival_order_and_lpm_puts_the_longest_hit_first() -> None:
    shared = run(0, 100)
    fresh = waiting_request(run(5000, 50))
    hit = waiting_request(shared + run(900, 5))
    for policy, first in (("fcfs", fresh), ("lpm", hit)):
        queue = [fresh, hit]
        SchedulePolicy(policy, cached_pool(shared)).order(queue)
        assert queue[0] is first, policy


def test_lpm_puts_a_request_last_that_an_earlier_one_will_cache() -> None:
    pool = cached_pool()
    a = waiting_request(run(0, 40) + run(500, 5))
    b = waiting_request(run(0, 40) + run(600, 5))  # shares 40 with a, nothing cached yet
    c = waiting_request(run(7000, 10))
    queue = [a, b, c]
    SchedulePolicy("lpm", pool).order(queue)
    assert queue == [a, c, b]


def test_lpm_is_fcfs_beyond_128_waiting_and_without_a_cache() -> None:
    shared = run(0, 100)
    policy = SchedulePolicy("lpm", cached_pool(shared))
    assert policy.active(PREFIX_MATCH_MAX) == "lpm"
    assert policy.active(PREFIX_MATCH_MAX + 1) == "fcfs"
    assert SchedulePolicy("lpm", KvPool(100, radix=False)).policy == "fcfs"


def test_lof_orders_by_max_new_tokens() -> None:
    short, long = waiting_request(run(0, 5), 8), waiting_request(run(50, 5), 800)
    queue = [short, long]
    SchedulePolicy("lof", cached_pool()).order(queue)
    assert queue == [long, short]


def test_dfs_weight_groups_requests_by_their_cached_prefix() -> None:
    one, two = run(0, 50), run(1000, 50)
    pool = cached_pool(one, two)
    a = waiting_request(one + run(100, 3))
    b = waiting_request(two + run(200, 3))
    c = waiting_request(two + run(300, 3))
    queue = [a, b, c]
    SchedulePolicy("dfs-weight", pool).order(queue)
    assert queue == [b, c, a]


def test_random_is_repeatable_for_a_seed() -> None:
    queue = [waiting_request(run(i * 100, 5)) for i in range(8)]
    first, second = list(queue), list(queue)
    SchedulePolicy("random", cached_pool(), seed=3).order(first)
    SchedulePolicy("random", cached_pool(), seed=3).order(second)
    assert first == second


# -- the prompt ids ---------------------------------------------------------------------------


def test_prompt_ids_count_as_the_tokenizer_counts() -> None:
    text = "the model 42 #### zebra-crossing Ünïcode"
    assert len(text_ids(text)) == count_tokens(text)
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "a b c"}, {"type": "image"}]},
        {"role": "assistant", "content": None},
    ]
    assert len(chat_prompt_ids(messages)) == chat_prompt_tokens(messages)
    assert text_ids("zebra") == text_ids("zebra") != text_ids("zebras")


def test_a_reply_sent_back_has_the_ids_it_was_generated_with() -> None:
    generated = [token_id(7, pos) for pos in range(20)]
    assert text_ids("".join(token_text(t) for t in generated)) == generated
    history = [{"role": "user", "content": "hello there"}]
    reply = "".join(token_text(t) for t in generated)
    turn1 = chat_prompt_ids(history)
    turn2 = chat_prompt_ids([*history, {"role": "assistant", "content": reply}])
    assert turn2[: len(turn1) + len(generated)] == turn1 + generated


def test_fcfs_refreshes_the_waiting_prefixes_every_32nd_pass_head_last() -> None:
    """0.5.23's ``_touch_waiting_prefixes``: under fcfs the waiting requests' cached prefixes
    are made recent on the first pass and every 32nd after it, the head of the queue last, so
    eviction drops what no one waits for, then what waits longest."""
    a, b, c = run(100, 10), run(200, 10), run(300, 10)
    pool = cached_pool(a, b, c)  # a is the least recently used
    policy = SchedulePolicy("fcfs", pool)
    queue = [waiting_request(a + run(900, 3)), waiting_request(b + run(950, 3))]
    policy.order(queue)  # pass 1 refreshes: b, then a (the head) most recently
    assert pool.tree.evict(5) == 10
    assert [pool.match(ReqKv(p))[0] for p in (c + ids(1), b + ids(1), a + ids(1))] == [0, 10, 10]
    pool.tree.insert(c)  # now the most recent: b, then a, then c
    for _ in range(31):  # passes 2..32 refresh nothing (had they, c would be the oldest)
        policy.order(queue)
    assert pool.tree.evict(5) == 10
    assert [pool.match(ReqKv(p + ids(1)))[0] for p in (b, a, c)] == [0, 10, 10]
    pool.tree.insert(b)  # the order is now a, c, b
    policy.order(queue)  # pass 33 refreshes again: b, then a, after c
    assert pool.tree.evict(5) == 10
    assert [pool.match(ReqKv(p + ids(1)))[0] for p in (c, b, a)] == [0, 10, 10]
