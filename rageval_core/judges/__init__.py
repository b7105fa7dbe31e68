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


def _openai_settings(config: Mapping[str, Any]) -> object:
    from rageval_core.judges.openai import OpenAISettings

    return OpenAISettings.from_config(config)


# Imported lazily so an offline run never loads the HTTP stack.
KINDS: dict[str, Callable[[Mapping[str, Any]], Judge]] = {
    "offline": _offline,
    "openai": _openai,
}
# What reading a kind's settings takes, without its side effects (an HTTP client, the
# environment's API key): the offline judge is its settings.
_SETTINGS: dict[str, Callable[[Mapping[str, Any]], object]] = {
    "offline": _offline,
    "openai": _openai_settings,
}


def _with_kind(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """`config` with its kind checked (offline when absent)."""
    config = dict(config or {})
    if not isinstance(config.get("kind", "offline"), str):
        raise ConfigError(f"judge.kind must be a string, got {shown(config['kind'])}")
    kind = config.setdefault("kind", "offline")
    if kind not in KINDS:
        raise ConfigError(f"unknown judge kind {shown(kind)}; choose one of: {', '.join(KINDS)}")
    return config


def judge_problems(config: Mapping[str, Any] | None) -> list[str]:
    """Every problem of a `judge:` mapping, found without building the judge: a run config
    (config.py) and `rescore`'s JUDGE.yaml (rescore.py) report them when the file loads,
    with the file's other problems, before a dataset is read or a run written."""
    try:
        config = _with_kind(config)
        # a kind added to KINDS (a plugin, a test's fake judge) has no settings reader of
        # its own here: its settings are checked when it is built
        settings = _SETTINGS.get(config["kind"])
        if settings is not None:
            settings(config)
    except ConfigError as exc:
        return list(exc.problems or [exc.message])
    return []


def make_judge(config: Mapping[str, Any] | None) -> Judge:
    """The judge a run config asks for; None or {} gives the offline judge.

    HTTP judges keep their replies in the user's cache folder (or the config's
    `cache_dir`; `cache: false` for none), so an unchanged re-run or rescore makes no
    calls wherever it writes. Unknown kinds and bad keys raise ConfigError (a loaded
    config has none: `judge_problems`); an unset API key variable raises it here.
    """
    config = _with_kind(config)
    return KINDS[config["kind"]](config)


__all__ = ["Judge", "make_judge", "judge_problems", "KINDS"]
