"""Judges turn (question, answer, retrieved chunks, reference) into claims with verdicts.

The runner only sees the `Judge` protocol and `make_judge`; which judge runs is the run
config's `judge:` mapping (docs/judges.md). Kinds:

    offline   deterministic word-overlap rules, zero cost (judges/offline.py), the default
    openai    any OpenAI-compatible chat-completions endpoint over httpx (judges/openai.py)

A judge never invents a score: when it cannot give every claim a valid verdict it returns
a `Judgement` with `error` set, no claims, and NULL answer correctness.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from rageval_core.errors import ConfigError, shown
from rageval_core.models import JudgeInput, Judgement, JudgeRef


class Judge(Protocol):
    def describe(self) -> JudgeRef:
        """Kind, model, version and prompt hash, recorded in the run manifest."""

    def judge(self, inp: JudgeInput) -> Judgement:
        """Judge one answer. Thread-safe: the runner calls it from a thread pool."""

    def close(self) -> None:
        """Release connections; the judge is unusable afterwards."""


def _offline(config: Mapping[str, Any]) -> Judge:
    from rageval_core.judges.offline import OfflineJudge

    return OfflineJudge.from_config(config)


def _openai(config: Mapping[str, Any]) -> Judge:
    from rageval_core.judges.openai import OpenAIJudge

    return OpenAIJudge.from_config(config)


# Imported lazily so an offline run never loads the HTTP stack.
KINDS: dict[str, Callable[[Mapping[str, Any]], Judge]] = {
    "offline": _offline,
    "openai": _openai,
}


def make_judge(config: Mapping[str, Any] | None) -> Judge:
    """The judge a run config asks for; None or {} gives the offline judge.

    HTTP judges keep their replies in the user's cache folder (or the config's
    `cache_dir`; `cache: false` for none), so an unchanged re-run or rescore makes no
    calls wherever it writes. Unknown kinds and bad keys raise ConfigError.
    """
    config = dict(config or {})
    if not isinstance(config.get("kind", "offline"), str):
        raise ConfigError(f"judge.kind must be a string, got {shown(config['kind'])}")
    kind = config.setdefault("kind", "offline")
    if kind not in KINDS:
        raise ConfigError(f"unknown judge kind {shown(kind)}; choose one of: {', '.join(KINDS)}")
    return KINDS[kind](config)


__all__ = ["Judge", "make_judge", "KINDS"]
