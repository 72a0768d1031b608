"""Speculative decoding measured on the text it will meet, and its accept length per load.

Why: how many draft tokens the target accepts depends on what is being generated. On
random-word prompts a draft model has little to predict from (acceptance collapses), and with
``ignore_eos`` a run keeps decoding past the natural end of an answer, where the text
degenerates into repetition the draft predicts well (acceptance skews up). Either way the
accept length, and the speed that follows from it, is not production's, and the "which
``--speculative-num-steps``" answer drawn from it may be wrong. So a speculative config
benchmarked that way gets one line in the summary saying so and what to use instead: the
user's own traffic as text (:class:`~.workload.ShareGPTPrompts`, :class:`~.workload.JsonlPrompts`,
:class:`~.workload.PromptList`) with ``ignore_eos=False``. A Mooncake trace or the generated
shared-prefix, multi-turn and long-context sources carry lengths and sharing, not text: their
words are generated too.

And because acceptance also shifts with the batch (a verify step's cost grows with batch x
draft tokens, so the best step count at batch 1 is often not the best at batch 64), the accept
length is reported per workload (a concurrency level of a sweep is a workload of its own) in a
table of its own: configs down, workloads across.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..terminal import Column, TextTable
from .workload import JsonlPrompts, PromptList, ShareGPTPrompts, Workload

__all__ = ["accept_table", "off_text_reasons", "speculative_text_note"]

#: Prompt sources that are text a user brought (their own traffic), not generated words.
USER_TEXT = (ShareGPTPrompts, JsonlPrompts, PromptList)
#: The result key that holds a run's reasons (set by the bench fixture for speculative runs).
KEY = "speculative_text"


def off_text_reasons(workload: Workload) -> list[str]:
    """Why ``workload`` does not measure speculative decoding on text it will meet ([] when
    it does): generated prompts, ``ignore_eos``."""
    reasons = []
    if not isinstance(workload.prompts, USER_TEXT):
        reasons.append(f"generated random-word prompts ({workload.prompts.label})")
    if workload.ignore_eos:
        reasons.append("ignore_eos")
    return reasons


def is_speculative(info: Mapping[str, Any]) -> bool:
    """Whether a result's config runs speculative decoding: its resolved config says so, or
    the server reported an accept length."""
    config = info.get("config") or {}
    if config.get("speculative_algorithm"):
        return True
    if "--speculative-algorithm" in (config.get("extra_args") or ()):
        return True
    return info.get("accept_length") is not None


def speculative_text_note(results: Sequence[Mapping[str, Any]]) -> str:
    """One line for the session when any speculative config ran off its text; "" if none."""
    flagged = [r for r in results if r.get(KEY)]
    if not flagged:
        return ""
    configs = ", ".join(dict.fromkeys(str(r.get("config_id", "?")) for r in flagged))
    reasons = " and ".join(dict.fromkeys(reason for r in flagged for reason in r[KEY]))
    return (
        f"speculative decoding ({configs}) was measured with {reasons}: acceptance depends on "
        "the text generated, so its accept length and speed are not production's; measure it "
        "with your own traffic (ShareGPTPrompts, JsonlPrompts or PromptList) and "
        "ignore_eos=False"
    )


def accept_table(results: Sequence[Mapping[str, Any]]) -> TextTable:
    """The accept length of every speculative run: one row per config, one column per workload
    (in the order they first ran); "-" where a config did not run that workload. No rows when no
    run reported an accept length."""
    runs = [r for r in results if r.get("accept_length") is not None]
    workloads = list(dict.fromkeys(str(r.get("workload", "?")) for r in runs))
    cells: dict[str, dict[str, str]] = {}
    for r in runs:  # a config's last run of a workload counts
        row = cells.setdefault(str(r.get("config_id", "?")), {})
        row[str(r.get("workload", "?"))] = f"{float(r['accept_length']):.2f}"
    table = TextTable([Column("config"), *(Column(w, ">") for w in workloads)])
    for config, row in cells.items():
        table.add(config, *(row.get(w, "-") for w in workloads))
    return table
