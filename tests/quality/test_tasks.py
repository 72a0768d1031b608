"""Tasks: the built-in generator and solver, task and GSM8K JSONL, answer extraction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_sglang.arithmetic import generate, solve
from pytest_sglang.errors import ConfigError
from pytest_sglang.quality.tasks import Item, Task, extract_answer, normalize, score


def test_builtin_problems_are_seeded_and_solvable_from_their_text() -> None:
    problems = generate(1000, seed=7)
    assert problems == generate(1000, seed=7)
    assert problems != generate(1000, seed=8)
    assert all(solve(p.question) == p.answer for p in problems)
    assert all(p.answer >= 0 for p in problems)


def test_solve_reads_the_last_problem_of_a_few_shot_prompt() -> None:
    task = Task.arithmetic(20, shots=3)
    assert task.name == "arithmetic-20-3shot" and len(task.items) == 20
    for item in task.items:
        assert item.prompt.count("Question:") == 4
        assert str(solve(item.prompt)) == item.answer
    assert solve("no problem here") is None
    # chat prompts reach the simulator as JSON; the problem's words survive the quoting
    assert str(solve(json.dumps([{"role": "user", "content": task.items[0].prompt}]))) == (
        task.items[0].answer
    )


def test_extraction_and_scoring() -> None:
    assert extract_answer("so #### 1,234 and more 5") == "1,234"
    assert extract_answer("The answer is $72.") == "72"
    assert extract_answer("it is 3 then 4") == "4"
    assert extract_answer("nothing") == ""
    assert normalize("1,234.00") == "1234" and normalize(" $5. ") == "5"
    assert score(Item("q", "1234"), "#### 1,234")
    assert not score(Item("q", "12"), "#### 13")
    assert score(Item("q", pattern=r"\bParis\b"), "It is Paris.")
    assert not score(Item("q", "4", pattern="four"), "#### 4")


def test_task_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    rows = [{"prompt": "2+2?", "answer": "4"}, {"prompt": "capital?", "pattern": "Paris"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    task = Task.from_jsonl(path, prefix="Be brief. ")
    assert task.name == "mine" and [i.prompt for i in task.items] == [
        "Be brief. 2+2?",
        "Be brief. capital?",
    ]
    assert (
        task.items[1].pattern == "Paris"
        and task.digest == Task.from_jsonl(path, prefix="Be brief. ").digest
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"answer": "4"}', "mine.jsonl:1: needs a non-empty string 'prompt'"),
        ('{"prompt": "x"}', "mine.jsonl:1: give 'answer' or 'pattern'"),
        ('{"prompt": "x", "pattern": "("}', "mine.jsonl:1: pattern '('"),
        ("not json", "mine.jsonl:1: not JSON"),
        ("", "no items in it"),
    ],
)
def test_bad_task_files_say_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")) as info:
        Task.from_jsonl(path)
    assert "\n" not in str(info.value)


def test_gsm8k_format(tmp_path: Path) -> None:
    test = tmp_path / "test.jsonl"
    rows = [
        {"question": f"Q{i}: how many?", "answer": f"Work {i} + 1.\n#### {i + 1:,}"}
        for i in range(998, 1004)
    ]
    test.write_text("\n".join(json.dumps(r) for r in rows))
    task = Task.gsm8k(test, shots=2)
    assert len(task.items) == 4 and task.items[0].answer == "1001"
    assert task.items[0].prompt.startswith(
        "Question: Q998: how many?\nAnswer: Work 998 + 1.\n#### 999"
    )
    assert task.items[0].prompt.endswith("Question: Q1000: how many?\nAnswer:")
    train = tmp_path / "train.jsonl"
    train.write_text(json.dumps(rows[0]))
    assert len(Task.gsm8k(test, shots=1, few_shot_path=train).items) == 6
    with pytest.raises(ConfigError, match="fewer than 3 examples"):
        Task.gsm8k(test, shots=3, few_shot_path=train)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "q", "answer": "no marker"}))
    with pytest.raises(
        ConfigError, match=r"bad.jsonl:1: needs string 'question' and 'answer' ending in '#### N'"
    ):
        Task.gsm8k(bad, shots=0)
