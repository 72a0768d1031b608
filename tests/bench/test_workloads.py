"""The prompt sources that share prefixes: their structure (groups, lengths in the simulator's
tokens, sharing by hash ids), their determinism, and one-line refusals of a malformed trace."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from pytest_sglang.baseline.gates import parse_gate
from pytest_sglang.bench import (
    ConversationPrompts,
    LongContextPrompts,
    MooncakeTrace,
    SharedPrefixPrompts,
    Workload,
)
from pytest_sglang.bench.identity import identify
from pytest_sglang.errors import ConfigError
from pytest_sglang.sim.tokenizer import count_tokens


def _common_prefix(a: list[str], b: list[str]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


# -- shared-prefix groups (bench_serving's generated-shared-prefix) -----------------------------


def test_shared_prefix_has_bench_serving_s_groups_and_lengths() -> None:
    source = SharedPrefixPrompts(4, 3, 50, 10, 7, ordered=True, seed=1)
    prompts, groups = source.prompts(12), source.groups(12)
    assert groups == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]  # ordered: group by group
    assert source.output_lengths(12) == [7] * 12
    assert all(count_tokens(p) == 50 + 10 for p in prompts)  # "\n\n" is no token
    systems = [p.split("\n\n")[0] for p in prompts]
    for g in range(4):
        mine = {s for s, group in zip(systems, groups) if group == g}
        assert len(mine) == 1 and count_tokens(mine.pop()) == 50
    assert len(set(systems)) == 4
    assert len({p.split("\n\n")[1] for p in prompts}) == 12  # a question of its own each
    # within a group the prompts share the system prompt and part ways right after it
    first, second = prompts[0].split(), prompts[1].split()
    assert 50 <= _common_prefix(first, second) < 60


def test_shared_prefix_shuffles_the_same_requests_unless_ordered() -> None:
    ordered = SharedPrefixPrompts(8, 4, 20, 5, 3, ordered=True, seed=2)
    shuffled = SharedPrefixPrompts(8, 4, 20, 5, 3, seed=2)
    assert shuffled.prompts(32) != ordered.prompts(32)
    assert sorted(shuffled.prompts(32)) == sorted(ordered.prompts(32))
    assert sorted(shuffled.groups(32)) == ordered.groups(32)
    # more requests than the dataset has: it cycles, as the other prompt sources do
    assert shuffled.prompts(40)[32:] == shuffled.prompts(8)


def test_shared_prefix_shuffles_in_bench_serving_s_order_for_the_same_seed() -> None:
    """bench_serving 0.5.23 draws every word with one ``random.choices`` call each (its
    ``gen_prompt_ids``: system prompts, then questions group by group) and then
    ``random.shuffle`` on Python's generator seeded by ``--seed`` (its lengths come from numpy):
    the same stream gives the same order of groups (benchmarks/peer_bench_serving.py holds
    the real one to it)."""
    groups, per, system, question = 5, 4, 30, 7
    theirs = random.Random(11)
    for n in [system] * groups + [question] * (groups * per):
        theirs.choices(range(50), k=n)
    slots = list(range(groups * per))
    theirs.shuffle(slots)
    source = SharedPrefixPrompts(groups, per, system, question, 3, seed=11)
    assert source.groups(groups * per) == [slot // per for slot in slots]


def test_shared_prefix_range_ratio_draws_lengths_as_bench_serving() -> None:
    source = SharedPrefixPrompts(4, 8, 100, 40, 60, range_ratio=0.5, ordered=True, seed=3)
    systems = {p.split("\n\n")[0] for p in source.prompts(32)}
    assert all(50 <= count_tokens(s) <= 100 for s in systems)
    assert all(20 <= count_tokens(p.split("\n\n")[1]) <= 40 for p in source.prompts(32))
    lengths = source.output_lengths(32)
    assert lengths is not None and all(30 <= n <= 60 for n in lengths)
    assert len(set(lengths)) > 1


def test_shared_prefix_workload_takes_bench_serving_s_defaults() -> None:
    w = Workload.shared_prefix(concurrency=16)
    assert isinstance(w.prompts, SharedPrefixPrompts)
    assert (w.prompts.num_groups, w.prompts.prompts_per_group) == (64, 16)
    assert (w.prompts.system_prompt_len, w.prompts.question_len) == (2048, 128)
    assert w.num_requests == 1024 and w.output_tokens == 256
    assert w.name == "shared-prefix-concurrency-16" and w.shares_prefixes
    assert Workload.shared_prefix(2, 2, 8, 4, 4).name == "shared-prefix-concurrency-4"
    rated = Workload.shared_prefix(2, 2, 8, 4, 4, request_rate=3, concurrency=2)
    assert (rated.name, rated.concurrency, rated.arrivals) == ("shared-prefix-rate-3", 2, "poisson")


# -- multi-turn conversations --------------------------------------------------------------------


def test_conversations_have_their_turns_questions_and_think_times() -> None:
    w = Workload.multi_turn(
        3, 4, (5, 9), 8, concurrency=2, think_time_s=(0.5, 1.5), system_prompt_len=30
    )
    assert w.name == "multi-turn-concurrency-2" and w.num_requests == 12
    assert w.session_turns() == [4, 4, 4]
    assert len(w.arrival_delays()) == 3  # one per conversation
    pauses = w.think_times()
    assert [pauses[i] for i in (0, 4, 8)] == [0.0, 0.0, 0.0]
    assert all(0.5 <= p <= 1.5 for i, p in enumerate(pauses) if i % 4)
    questions = [p for p, _ in w.requests()]
    firsts = [questions[i] for i in (0, 4, 8)]
    # every conversation opens with the same system prompt, then a question of its own
    assert len({q.split("\n\n")[0] for q in firsts}) == 1
    assert all(count_tokens(q.split("\n\n")[0]) == 30 for q in firsts)
    assert all(5 <= count_tokens(q) <= 9 for i, q in enumerate(questions) if i % 4)


def test_a_conversation_source_needs_its_own_request_count() -> None:
    with pytest.raises(ConfigError, match=r"num_requests=4 .*Workload\.multi_turn"):
        Workload.fixed_concurrency(2, 4, prompts=ConversationPrompts(3, 2))
    with pytest.raises(ConfigError, match="think_time_s"):
        ConversationPrompts(think_time_s=-1.0)
    with pytest.raises(ConfigError, match="conversations and traces"):
        Workload.max_concurrency("ttft<1s", prompts=ConversationPrompts(2, 2))


# -- long contexts -------------------------------------------------------------------------------


def test_long_context_shares_documents_when_asked() -> None:
    own = LongContextPrompts((300, 400), question_len=10, seed=4).prompts(4)
    assert all(310 <= count_tokens(p) <= 410 for p in own)
    assert len({p.split("\n\n")[0] for p in own}) == 4
    shared = LongContextPrompts((300, 400), question_len=10, documents=2, seed=4).prompts(6)
    docs = [p.split("\n\n")[0] for p in shared]
    assert docs[0] == docs[2] == docs[4] != docs[1] == docs[3] == docs[5]
    assert len({p.split("\n\n")[1] for p in shared}) == 6
    assert not Workload.long_context(500).shares_prefixes
    assert Workload.long_context(500, documents=1).shares_prefixes
    assert Workload.long_context(500).name == "long-context-concurrency-1"


# -- Mooncake traces -----------------------------------------------------------------------------


def _trace(tmp_path: Path, rows: list[dict[str, object]], name: str = "trace.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


ROWS: list[dict[str, object]] = [
    {"timestamp": 400, "input_length": 20, "output_length": 5, "hash_ids": [1, 2, 5]},
    {"timestamp": 0, "input_length": 24, "output_length": 3, "hash_ids": [1, 2, 3]},
    {"timestamp": 100, "input_length": 22, "output_length": 4, "hash_ids": [1, 2, 4]},
    {"timestamp": 250, "input_length": 30, "output_length": 6, "hash_ids": [9]},
]


def test_a_trace_shares_exactly_the_blocks_its_hash_ids_share(tmp_path: Path) -> None:
    w = Workload.trace(_trace(tmp_path, ROWS), block_size=8)
    assert w.name == "trace-1x" and w.arrivals == "trace" and w.num_requests == 4
    requests = w.requests()
    words = [p.split() for p, _ in requests]
    # timestamp order; each prompt as long as its input_length, asking for its output_length
    assert [len(x) for x in words] == [24, 22, 30, 20]
    assert [n for _, n in requests] == [3, 4, 6, 5]
    # [1, 2, 3], [1, 2, 4], [1, 2, 5]: two blocks in common, token for token, then apart
    assert _common_prefix(words[0], words[1]) == 16 == _common_prefix(words[1], words[3])
    assert words[0][:16] == words[3][:16]
    assert words[2][:8] != words[0][:8]  # block 9 is not block 1
    # longer than its one block of 8: words of its own after it
    assert len(words[2]) == 30
    assert w.arrival_delays() == pytest.approx([0.1, 0.15, 0.15, 0.0])


def test_a_trace_is_replayed_scaled_and_cut(tmp_path: Path) -> None:
    path = _trace(tmp_path, ROWS)
    fast = Workload.trace(path, time_scale=0.5, num_requests=3, max_concurrency=2)
    assert fast.name == "trace-0.5x" and fast.concurrency == 2
    assert fast.arrival_delays() == pytest.approx([0.05, 0.075, 0.0])
    with pytest.raises(ConfigError, match="5 requests asked for, the trace has 4"):
        Workload.trace(path, num_requests=5).requests()
    with pytest.raises(ConfigError, match=r"build it with Workload\.trace"):
        Workload.fixed_concurrency(2, 4, prompts=MooncakeTrace(path))


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "a JSON object"),
        ('{"timestamp": 5, "input_length": 3, "output_length": 2}', "field 'hash_ids' is missing"),
        (
            '{"timestamp": -1, "input_length": 3, "output_length": 2, "hash_ids": []}',
            "field 'timestamp'",
        ),
        (
            '{"timestamp": 1, "input_length": 0, "output_length": 2, "hash_ids": []}',
            "field 'input_length'",
        ),
        (
            '{"timestamp": 1, "input_length": 3, "output_length": 2.5, "hash_ids": []}',
            "field 'output_length'",
        ),
        (
            '{"timestamp": 1, "input_length": 3, "output_length": 2, "hash_ids": [1, "a"]}',
            "field 'hash_ids'",
        ),
        (
            '{"timestamp": 1, "input_length": true, "output_length": 2, "hash_ids": [1]}',
            "field 'input_length'",
        ),
    ],
)
def test_a_malformed_trace_line_is_one_line_naming_file_line_and_field(
    tmp_path: Path, line: str, field: str
) -> None:
    path = tmp_path / "mine.jsonl"
    good = json.dumps(ROWS[0])
    path.write_text(f"{good}\n\n{good}\n{line}\n")
    with pytest.raises(ConfigError) as caught:
        Workload.trace(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"trace file {path}:4: ")
    assert field in message


def test_an_unreadable_or_empty_trace_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read it"):
        Workload.trace(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ConfigError, match="no requests in it"):
        Workload.trace(tmp_path / "empty.jsonl")


# -- determinism and identity --------------------------------------------------------------------


def test_every_source_is_the_same_from_the_same_seed(tmp_path: Path) -> None:
    path = _trace(tmp_path, ROWS)
    for make in (
        lambda seed: Workload.shared_prefix(3, 2, 16, 4, 4, seed=seed),
        lambda seed: Workload.multi_turn(2, 3, (4, 8), 4, think_time_s=(0, 1), seed=seed),
        lambda seed: Workload.long_context((64, 128), 3, documents=2, seed=seed),
        lambda seed: Workload.trace(path, block_size=8, seed=seed),
    ):
        a, b, other = make(0), make(0), make(1)
        assert a.requests() == b.requests() and a.think_times() == b.think_times()
        assert a.requests() != other.requests()
        assert identify(a) == identify(b) != identify(other)


@pytest.mark.parametrize(
    "other",
    [
        Workload.shared_prefix(5, 2, 16, 4, 4),
        Workload.shared_prefix(4, 3, 16, 4, 4),
        Workload.shared_prefix(4, 2, 17, 4, 4),
        Workload.shared_prefix(4, 2, 16, 5, 4),
        Workload.shared_prefix(4, 2, 16, 4, 5, concurrency=8),
        Workload.shared_prefix(4, 2, 16, 4, 4, range_ratio=0.5),
        Workload.shared_prefix(4, 2, 16, 4, 4, ordered=True),
        Workload.shared_prefix(4, 2, 16, 4, 4, seed=1),
        Workload.fixed_concurrency(8, 8, 4),
    ],
    ids=lambda w: json.dumps(w.prompts.canonical()),
)
def test_every_shared_prefix_knob_is_in_the_digest(other: Workload) -> None:
    base = Workload.shared_prefix(4, 2, 16, 4, 4)
    assert identify(other).digest != identify(base).digest


def test_every_other_new_knob_is_in_the_digest(tmp_path: Path) -> None:
    path = _trace(tmp_path, ROWS)
    groups = [
        [
            Workload.multi_turn(2, 3, 8, 4),
            Workload.multi_turn(3, 2, 8, 4),
            Workload.multi_turn(2, 3, (4, 8), 4),
            Workload.multi_turn(2, 3, 8, 5),
            Workload.multi_turn(2, 3, 8, 4, think_time_s=0.5),
            Workload.multi_turn(2, 3, 8, 4, system_prompt_len=16),
            Workload.multi_turn(2, 3, 8, 4, concurrency=1),
            Workload.multi_turn(2, 3, 8, 4, request_rate=2.0),
        ],
        [
            Workload.long_context(100),
            Workload.long_context((100, 200)),
            Workload.long_context(100, question_len=8),
            Workload.long_context(100, documents=2),
            Workload.long_context(100, num_requests=4),
        ],
        [
            Workload.trace(path),
            Workload.trace(path, time_scale=2.0),
            Workload.trace(path, block_size=8),
            Workload.trace(path, num_requests=2),
            Workload.trace(path, max_concurrency=2),
            Workload.trace(path, api="generate"),
        ],
    ]
    digests = [identify(w).digest for group in groups for w in group]
    assert len(set(digests)) == len(digests)
    before = identify(Workload.trace(path)).digest
    path.write_text(path.read_text().replace('"output_length": 5', '"output_length": 6'))
    assert identify(Workload.trace(path)).digest != before


def test_cache_hit_rates_are_gated_higher_is_better() -> None:
    for metric in ("cache_hit_rate", "server_cache_hit_rate"):
        gate = parse_gate(metric, "-5%")
        assert (gate.direction, gate.threshold_pct) == ("higher", 5.0)
    with pytest.raises(ValueError, match="higher is better"):
        parse_gate("cache_hit_rate", "+5%")


def test_names_of_the_existing_workloads_are_unchanged() -> None:
    assert [w.name for w in (Workload.single_stream(), Workload.rate(8))] == [
        "single-stream",
        "rate-8",
    ]
    assert not Workload.fixed_concurrency(4).shares_prefixes
    assert math.isclose(sum(Workload.rate(8, 4, burstiness=math.inf).arrival_delays()), 0.5)
