"""Accuracy tasks: prompts with a known answer, from the built-in generator or a JSONL file.

Why a task is data and not code: the eval runs the same way for every task (the load generator
sends each prompt once at temperature 0, :func:`score` reads each answer), so a user's own file
is as good as the built-in task. Formats:

- **Task JSONL** (:meth:`Task.from_jsonl`): one object per line, ``{"prompt": "...",
  "answer": "42"}``; the answer is compared after normalisation (:func:`normalize`) with the
  answer read from the output by the task's ``extract`` pattern. A line may give ``"pattern"``
  (a regular expression) instead of or beside ``answer``: the item is right when it matches the
  output (``re.search``).
- **GSM8K JSONL** (:meth:`Task.gsm8k`): GSM8K's own ``{"question": ..., "answer": "...\\n####
  72"}`` lines (``test.jsonl`` as published); the number after ``####`` is the answer. ``shots``
  takes that many worked examples (question and full answer) from ``few_shot_path`` (GSM8K's
  ``train.jsonl``) or, without it, from the first lines of the file itself, which are then not
  evaluated.
- **Built-in** (:meth:`Task.arithmetic`): multi-step arithmetic word problems
  (:mod:`.arithmetic`), seeded; nothing is downloaded, ever.

Prompts are ``prefix + "Question: " + question + "\\nAnswer:"``; the default extraction takes
the number after ``####`` or ``answer is``, else the last number of the output (GSM8K's rule).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import arithmetic
from ..errors import ConfigError

__all__ = ["DEFAULT_EXTRACT", "Item", "Task", "extract_answer", "normalize", "score"]

#: The answer after ``####`` or ``answer is``; :func:`extract_answer` falls back to the last number.
DEFAULT_EXTRACT = r"(?:####|answer is)\s*\$?\s*(-?[\d,]*\.?\d+)"
_NUMBER = re.compile(r"-?[\d,]*\.?\d+")


@dataclass(frozen=True)
class Item:
    """One question: its prompt (prefix included) and what a right output contains."""

    prompt: str
    answer: str = ""
    pattern: str = ""


def normalize(answer: str) -> str:
    """Compare answers as text without commas, dollar signs, spaces and a trailing ``.0``."""
    text = answer.strip().replace(",", "").replace("$", "").rstrip(".")
    if re.fullmatch(r"-?\d+\.0+", text):
        text = text.split(".", 1)[0]
    return text


def extract_answer(output: str, extract: str = DEFAULT_EXTRACT) -> str:
    """The answer in a model's output: the first match of ``extract`` (its first group), else
    the last number; "" when there is none."""
    match = re.search(extract, output)
    if match:
        return match.group(1) if match.groups() else match.group(0)
    numbers = _NUMBER.findall(output)
    return numbers[-1] if numbers else ""


def score(item: Item, output: str, extract: str = DEFAULT_EXTRACT) -> bool:
    """Whether ``output`` answers ``item`` right."""
    if item.pattern and not re.search(item.pattern, output):
        return False
    if item.answer:
        return normalize(extract_answer(output, extract)) == normalize(item.answer)
    return bool(item.pattern)


def _question(text: str) -> str:
    return f"Question: {text}\nAnswer:"


@dataclass(frozen=True)
class Task:
    """A named list of items, how to read an answer, and how long an answer may be."""

    name: str
    items: tuple[Item, ...]
    extract: str = DEFAULT_EXTRACT
    max_tokens: int = 256
    description: dict[str, object] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.items:
            raise ConfigError(f"task {self.name!r}: no items")
        try:
            re.compile(self.extract)
        except re.error as exc:
            raise ConfigError(f"task {self.name!r}: extract {self.extract!r}: {exc}") from None

    @property
    def digest(self) -> str:
        """Identifies the prompts and answers (what the baselines key accuracy on)."""
        h = hashlib.sha256(self.extract.encode())
        for item in self.items:
            h.update(b"\0" + item.prompt.encode() + b"\0" + item.answer.encode())
            h.update(b"\0" + item.pattern.encode())
        return h.hexdigest()[:12]

    @property
    def prompts(self) -> list[str]:
        """The items' prompts, in order."""
        return [item.prompt for item in self.items]

    # -- sources ------------------------------------------------------------------------------

    @classmethod
    def arithmetic(cls, count: int = 500, *, seed: int = 0, steps: int = 3, shots: int = 0) -> Task:
        """The built-in task: ``count`` word problems (``shots`` worked examples first)."""
        try:
            problems = arithmetic.generate(count + shots, seed=seed, steps=steps)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        prefix = "".join(f"{_question(p.question)} #### {p.answer}\n\n" for p in problems[:shots])
        items = tuple(Item(prefix + _question(p.question), str(p.answer)) for p in problems[shots:])
        name = f"arithmetic-{count}" + (f"-{shots}shot" if shots else "")
        return cls(name, items, max_tokens=64, description=dict(seed=seed, steps=steps))

    @classmethod
    def from_jsonl(
        cls,
        path: str | Path,
        *,
        prefix: str = "",
        extract: str = DEFAULT_EXTRACT,
        max_tokens: int = 256,
        limit: int | None = None,
    ) -> Task:
        """A task file: ``{"prompt", "answer"}`` and/or ``"pattern"`` per line."""
        items: list[Item] = []
        for number, row in _rows(Path(path)):
            prompt, answer, pattern = (
                row.get("prompt"),
                row.get("answer", ""),
                row.get("pattern", ""),
            )
            if not isinstance(prompt, str) or not prompt:
                raise ConfigError(f"task file {path}:{number}: needs a non-empty string 'prompt'")
            if not isinstance(answer, (str, int, float)) or not isinstance(pattern, str):
                raise ConfigError(f"task file {path}:{number}: 'answer' and 'pattern' are strings")
            if not str(answer) and not pattern:
                raise ConfigError(f"task file {path}:{number}: give 'answer' or 'pattern'")
            if pattern:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ConfigError(
                        f"task file {path}:{number}: pattern {pattern!r}: {exc}"
                    ) from None
            items.append(Item(prefix + prompt, str(answer), pattern))
        return cls(Path(path).stem, tuple(items[:limit]), extract=extract, max_tokens=max_tokens)

    @classmethod
    def gsm8k(
        cls,
        path: str | Path,
        *,
        shots: int = 5,
        few_shot_path: str | Path | None = None,
        max_tokens: int = 512,
        limit: int | None = None,
    ) -> Task:
        """GSM8K-format JSONL (``question``, ``answer`` ending in ``#### N``), ``shots``-shot."""
        rows = [(n, _gsm8k_row(path, n, row)) for n, row in _rows(Path(path))]
        if few_shot_path is not None:
            examples = [_gsm8k_row(few_shot_path, n, r) for n, r in _rows(Path(few_shot_path))]
            examples = examples[:shots]
        else:
            examples, rows = [r for _, r in rows[:shots]], rows[shots:]
        if len(examples) < shots:
            raise ConfigError(f"GSM8K file {few_shot_path or path}: fewer than {shots} examples")
        prefix = "".join(f"{_question(q)} {full}\n\n" for q, full, _ in examples)
        items = tuple(Item(prefix + _question(q), answer) for _, (q, _full, answer) in rows)
        name = f"gsm8k-{Path(path).stem}-{shots}shot"
        return cls(name[:60], items[:limit], max_tokens=max_tokens)


def _rows(path: Path) -> list[tuple[int, dict[str, object]]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"task file {path}: cannot read it: {exc}") from None
    rows: list[tuple[int, dict[str, object]]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"task file {path}:{number}: not JSON ({exc.args[0]})") from None
        if not isinstance(row, dict):
            raise ConfigError(f"task file {path}:{number}: not a JSON object")
        rows.append((number, row))
    if not rows:
        raise ConfigError(f"task file {path}: no items in it")
    return rows


def _gsm8k_row(path: str | Path, number: int, row: dict[str, object]) -> tuple[str, str, str]:
    """(question, the full worked answer, the final answer after ``####``)."""
    question, full = row.get("question"), row.get("answer")
    if not isinstance(question, str) or not isinstance(full, str) or "####" not in full:
        raise ConfigError(
            f"GSM8K file {path}:{number}: needs string 'question' and 'answer' ending in '#### N'"
        )
    return question, full.strip(), normalize(full.rsplit("####", 1)[1])
