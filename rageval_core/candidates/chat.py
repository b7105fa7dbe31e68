"""One chat-completions call through the HTTP judge's client (judges/openai.py), for the
LLM generator: the same retries with backoff and `Retry-After`, the same total deadline
per attempt and reply size cap, the same prices, and replies kept in the same on-disk
cache (judges/reply_cache.py) under a key of their own prompt version.

It goes through `OpenAIJudge.call(body, spend)`, the judge's own transport, with a
`Spend` that prices each reply's usage as the judge's questions are priced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rageval_core.errors import JudgeError, shown
from rageval_core.judges.openai import OpenAIJudge, OpenAISettings, Spend
from rageval_core.judges.reply_cache import ReplyCache, cache_key


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
        key = cache_key(s.base_url, s.model, self.prompt_version, body, s.revision)
        if self._cache is not None and (entry := self._cache.get(key)) is not None:
            try:
                return Answer(parse(entry["reply"]), None, 0.0, True)
            except ValueError:
                pass  # a reply cached by an older parser: ask again
        tally = Spend(s.prices)
        try:
            text, usage, served = self._judge.call(body, tally)
        except JudgeError as exc:
            return Answer(None, shown(exc.message, 200, bare=True), tally.usd, False)
        try:
            value = parse(text)
        except ValueError as exc:
            return Answer(
                None, f"malformed reply: {shown(str(exc), 200, bare=True)}", tally.usd, False
            )
        if self._cache is not None:
            self._cache.put(key, text, usage, served)
        return Answer(value, None, tally.usd, False)

    def close(self) -> None:
        self._judge.close()
