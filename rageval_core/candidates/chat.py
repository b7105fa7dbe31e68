"""One chat-completions call through the HTTP judge's client (judges/openai.py), for the
LLM generator: the same retries with backoff and `Retry-After`, the same total deadline
per attempt and reply size cap, the same prices, and replies kept in the same on-disk
cache (judges/reply_cache.py) under a key of their own prompt version.

The judge offers no public call for a prompt of another's making, so this module is the
one place that reaches into it: `OpenAIJudge._call(body, tally)`, the judge's transport,
handed a `_Spend` that prices each reply's usage as the judge's own tally does. When the
judge grows a public call (text, usage, cost of one body), only this module changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rageval_core.errors import JudgeError, shown
from rageval_core.judges.openai import MAX_TOKENS, OpenAIJudge, OpenAISettings, Prices
from rageval_core.judges.reply_cache import ReplyCache, cache_key


class _Spend:
    """What one call cost: each reply's usage priced; a figure that cannot be a token
    count (negative, not whole, beyond `MAX_TOKENS`) is a JudgeError, never a cost."""

    def __init__(self, prices: Prices):
        self.prices, self.usd = prices, 0.0

    def add(self, usage: Any) -> dict[str, int]:
        counts = {}
        for k in ("prompt_tokens", "completion_tokens"):
            v = usage.get(k) if isinstance(usage, dict) else None
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_TOKENS:
                raise JudgeError(f"the endpoint reported impossible usage: {k} {shown(v, 40)}")
            counts[k] = v
        self.usd += self.prices.cost(counts)
        return counts


@dataclass(frozen=True)
class Answer:
    """What one call gave: the reply's value (checked by `parse`) or the error, and what
    it cost (0 from the cache)."""

    value: Any | None
    error: str | None
    cost_usd: float
    cached: bool


class Chat:
    """Ask JSON of an OpenAI-compatible endpoint, through the judge's client."""

    def __init__(self, settings: OpenAISettings, prompt_version: str):
        self.settings = settings
        self.prompt_version = prompt_version
        self._judge = OpenAIJudge(settings)
        self._cache = ReplyCache(settings.cache_dir) if settings.cache_dir is not None else None

    def ask(self, messages: list[dict[str, str]], parse: Callable[[str], Any]) -> Answer:
        """One reply to `messages`, checked by `parse` (text to value, ValueError when
        the reply will not do); only a value `parse` accepted is cached."""
        body = {
            "model": self.settings.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": messages,
        }
        s = self.settings
        key = cache_key(s.base_url, s.model, self.prompt_version, body)
        if self._cache is not None and (entry := self._cache.get(key)) is not None:
            try:
                return Answer(parse(entry["reply"]), None, 0.0, True)
            except ValueError:
                pass  # a reply cached by an older parser: ask again
        tally = _Spend(s.prices)
        try:
            text, usage = self._judge._call(body, tally)
        except JudgeError as exc:
            return Answer(None, shown(exc.message, 200, bare=True), tally.usd, False)
        try:
            value = parse(text)
        except ValueError as exc:
            return Answer(
                None, f"malformed reply: {shown(str(exc), 200, bare=True)}", tally.usd, False
            )
        if self._cache is not None:
            self._cache.put(key, text, usage)
        return Answer(value, None, tally.usd, False)

    def close(self) -> None:
        self._judge.close()
