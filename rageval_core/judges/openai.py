"""The OpenAI-compatible LLM judge: one chat-completions call per question over httpx.

Works with any endpoint that speaks `POST {base_url}/chat/completions` (hosted APIs, vLLM,
Ollama, llama.cpp server). What it guarantees:

- one call per question asking for the metrics the config selects (`metrics:`, all of
  `JUDGE_METRICS` by default; judges/prompt.py), two with `conservative: true`;
- temperature 0 and `response_format: {"type": "json_object"}` on every call;
- retries with exponential backoff and full jitter on 429, 5xx, timeouts and connection
  errors, waiting at least `Retry-After` seconds when the server sends it (every thread
  waits: judges/limiter.py);
- one repair call for a reply that breaks the schema (judges/reply.py), then a judge
  error for the question — never a guessed verdict;
- at most `concurrency` calls in flight across all runner threads, fewer while the endpoint
  is overloaded, within the requests- and tokens-per-minute budgets (judges/limiter.py);
- replies cached on disk in the user's cache folder, or the config's `cache_dir`
  (judges/reply_cache.py); a cached reply costs nothing, whatever the results location;
  the config's `revision` is part of the key;
- what the endpoint says served each reply (its `model` and `system_fingerprint`) kept in
  the Judgement and the cache entry; a cached reply another model served is asked again
  (`ServedGate`), and runs whose judge was served by another model say so (judge drift,
  query/_drift.py);
- the API key is read once from the environment variable the config names and lives
  only in the HTTP client's headers: it is never logged, cached, put in an error or a repr.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from rageval_core import deadline
from rageval_core.bounded_json import BadJSON, loads
from rageval_core.errors import ConfigError, JudgeError
from rageval_core.judges.grounding import misquoted, ungrounded, ungrounded_statements
from rageval_core.judges.limiter import Limiter
from rageval_core.judges.options import Options
from rageval_core.judges.passages import passages
from rageval_core.judges.prompt import (
    PROMPT_VERSION,
    REPAIR_INSTRUCTION,
    prompt_hash,
    system_prompt,
    user_message,
)
from rageval_core.judges.reply import Asked, Reply, ReplyError, decode, parse_reply, stricter
from rageval_core.judges.reply_cache import (
    ReplyCache,
    Served,
    ServedGate,
    cache_key,
    default_cache_dir,
)
from rageval_core.models import JUDGE_METRICS, JudgeInput, Judgement, JudgeRef
from rageval_core.redact import can_be_secret

log = logging.getLogger(__name__)

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RETRY_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))
# Never sleep longer than this between attempts, whatever the server or the maths says.
MAX_WAIT_S = 120.0
MAX_REPLY_BYTES = 8 << 20  # a reply is kilobytes; a larger one is cut off and an error
MAX_TOKENS = 10_000_000  # more tokens than any context window: a usage figure is wrong
MAX_FREE_RETRIES = 16


@dataclass(frozen=True)
class Prices:
    """USD per 1,000 tokens; usage × prices is the judge cost."""

    input_per_1k_tokens: float = 0.0
    output_per_1k_tokens: float = 0.0

    def cost(self, usage: Mapping[str, int]) -> float:
        return (
            usage.get("prompt_tokens", 0) * self.input_per_1k_tokens
            + usage.get("completion_tokens", 0) * self.output_per_1k_tokens
        ) / 1000


@dataclass(frozen=True)
class OpenAISettings:
    """The `judge:` mapping of kind openai, validated (docs/judges.md lists the keys)."""

    base_url: str
    model: str
    api_key_env: str | None = None
    concurrency: int = 32
    """The ceiling of calls in flight; the limiter starts there and backs off."""
    timeout_s: float = 60.0
    max_retries: int = 4
    backoff_base_s: float = 1.0
    prices: Prices = field(default_factory=Prices)
    conservative: bool = False
    cache_dir: Path | None = None
    """Where replies are kept (`cache: false` gives None: no cache)."""
    metrics: tuple[str, ...] = JUDGE_METRICS
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    revision: str | None = None
    """The user's name for the judge's version (a date, a provider's snapshot): part of the
    reply-cache key, so changing it asks again (judges/reply_cache.py)."""

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> OpenAISettings:
        if "api_key" in config:
            # The value is not echoed: it is probably the key itself.
            raise ConfigError(
                "judge.api_key is not allowed: put the key in an environment variable "
                "and name that variable in judge.api_key_env"
            )
        o = Options(config, "openai")
        base_url = o.get("base_url", str)
        if isinstance(base_url, str) and not re.match(r"^https?://[^/\s]+", base_url):
            o.problems.append("judge.base_url must be an http:// or https:// URL")
        env = o.get("api_key_env", str, None)
        if env is not None and not _ENV_NAME.match(env):
            o.problems.append("judge.api_key_env must be the NAME of an environment variable")
        raw_prices = o.get("prices", dict, {})
        prices = Prices()
        if isinstance(raw_prices, dict):
            p = Options(raw_prices, "openai")
            prices = Prices(
                input_per_1k_tokens=p.get("input_per_1k_tokens", (int, float), 0.0, minimum=0),
                output_per_1k_tokens=p.get("output_per_1k_tokens", (int, float), 0.0, minimum=0),
            )
            unknown = sorted(
                set(map(str, raw_prices)) - {"input_per_1k_tokens", "output_per_1k_tokens"}
            )
            o.problems += [f"judge.prices.{msg[len('judge.') :]}" for msg in p.problems]
            o.problems += [f"judge.prices.{k} is not a price key" for k in unknown]
        cache_dir = o.get("cache_dir", str, None)
        if cache_dir is not None and not cache_dir.strip():
            o.problems.append("judge.cache_dir must be a folder path, got an empty string")
        use_cache = o.get("cache", bool, True)
        settings = cls(
            base_url=(base_url or "").rstrip("/"),
            model=o.get("model", str),
            api_key_env=env,
            concurrency=o.get("concurrency", int, 32, minimum=1, maximum=256),
            timeout_s=o.get("timeout_s", (int, float), 60.0, minimum=0.001),
            max_retries=o.get("max_retries", int, 4, minimum=0, maximum=20),
            backoff_base_s=o.get("backoff_base_s", (int, float), 1.0, minimum=0),
            prices=prices,
            conservative=o.get("conservative", bool, False),
            cache_dir=(Path(cache_dir).expanduser() if cache_dir else default_cache_dir())
            if use_cache
            else None,
            metrics=o.metrics(),
            requests_per_minute=o.get("requests_per_minute", (int, float), None, minimum=1),
            tokens_per_minute=o.get("tokens_per_minute", (int, float), None, minimum=1),
            revision=o.get("revision", str, None),
        )
        o.finish()
        return settings


class _Failure(JudgeError):
    """One question's judging failed; the message goes into Judgement.error."""


@dataclass
class Spend:
    """Money spent on one question (or one generator call), kept even when it ends in an
    error."""

    prices: Prices
    usd: float = 0.0
    usage: dict[str, int] = field(default_factory=dict)

    def add(self, usage: Any) -> dict[str, int]:
        """Add one reply's usage; a figure that cannot be a token count (negative, not a
        whole number, beyond `MAX_TOKENS`) is a judge error, never a negative cost."""
        counts: dict[str, int] = {}
        for k in ("prompt_tokens", "completion_tokens"):
            v = usage.get(k) if isinstance(usage, dict) else None
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_TOKENS:
                raise _Failure(f"judge endpoint reported impossible usage: {k} {str(v)[:40]}")
            counts[k] = v
        self.usd += self.prices.cost(counts)
        return counts


def _grounded(reply: Reply, inp: JudgeInput) -> Reply:
    """`reply` when each claim restates the answer, the statements stand for the
    reference and every evidence quote is in the chunk it names (judges/grounding.py),
    else ReplyError."""
    problem = ungrounded(reply.claims, inp.answer, inp.question)
    if problem is None and reply.statements:
        problem = ungrounded_statements(reply.statements, inp.reference_answer or "", inp.question)
    if problem is None:
        quoted = [(f"claims[{i}]", c) for i, c in enumerate(reply.claims)]
        quoted += [(f"statements[{i}]", s) for i, s in enumerate(reply.statements or ())]
        # a quote may straddle a boundary: each chunk is read within its passage, the
        # chunks adjacent in its document joined (judges/passages.py), as the offline judge
        joined = {cid: p.text for p in passages(inp.retrieved) for cid, _, _ in p.pieces}
        problem = misquoted(quoted, {c.id: joined.get(c.id, c.text) for c in inp.retrieved})
    if problem is not None:
        raise ReplyError(problem)
    return reply


def _joined(values: Iterable[str | None]) -> str | None:
    """The distinct values of a question's replies (two with `conservative: true`)."""
    distinct = list(dict.fromkeys(v for v in values if v is not None))
    return ", ".join(distinct) or None


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds from `retry-after-ms` (Azure, OpenAI) or `Retry-After`; the HTTP-date form
    and nonsense fall back to backoff."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            seconds = float(headers.get(name, "")) / scale
        except ValueError:
            continue
        if math.isfinite(seconds):
            return min(max(seconds, 0.0), MAX_WAIT_S)
    return None


class OpenAIJudge:
    """LLM judge over an OpenAI-compatible endpoint (module docstring). Thread-safe."""

    def __init__(self, settings: OpenAISettings):
        self.settings = settings
        headers = {"Content-Type": "application/json"}
        self._secret: str | None = None
        if settings.api_key_env:
            self._secret = os.environ.get(settings.api_key_env) or None
            if self._secret is None:
                raise ConfigError(
                    f"environment variable {settings.api_key_env} is not set "
                    f"(judge.api_key_env); it must hold the judge's API key"
                )
            headers["Authorization"] = f"Bearer {self._secret}"
        limits = httpx.Limits(
            max_connections=settings.concurrency,
            max_keepalive_connections=settings.concurrency,
        )
        self._client = httpx.Client(
            base_url=settings.base_url + "/",
            headers=headers,
            timeout=settings.timeout_s,
            transport=deadline.transport(limits=limits),
        )
        self.limiter = Limiter(
            settings.concurrency, settings.requests_per_minute, settings.tokens_per_minute
        )
        self._cache = ReplyCache(settings.cache_dir) if settings.cache_dir is not None else None
        self._gate = ServedGate()
        stances = (False, True) if settings.conservative else (False,)
        self._prompts = tuple(system_prompt(settings.metrics, sceptical) for sceptical in stances)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> OpenAIJudge:
        return cls(OpenAISettings.from_config(config))

    def describe(self) -> JudgeRef:
        version = PROMPT_VERSION + ("+conservative" if self.settings.conservative else "")
        return JudgeRef(
            kind="openai",
            model=self.settings.model,
            version=version,
            prompt_hash=prompt_hash(*self._prompts),
            metrics=self.settings.metrics,
        )

    def judge(self, inp: JudgeInput) -> Judgement:
        tally = Spend(self.settings.prices)
        try:
            asked = [self._ask(system, inp, tally) for system in self._prompts]
        except _Failure as exc:
            return Judgement(
                claims=(),
                refused=False,
                answer_correctness=None,
                cost_usd=tally.usd,
                error=self._scrub(str(exc)),
            )
        replies = [reply for reply, _ in asked]
        reply = replies[0] if len(replies) == 1 else stricter(*replies)
        served = [s for _, s in asked]
        return Judgement(
            reply.claims,
            reply.refused,
            reply.answer_correctness,
            cost_usd=tally.usd,
            chunk_verdicts=reply.chunk_verdicts,
            answer_relevancy=reply.answer_relevancy,
            answer_relevancy_reason=reply.answer_relevancy_reason,
            statements=reply.statements,
            served_model=_joined(s.model for s in served),
            system_fingerprint=_joined(s.fingerprint for s in served),
        )

    def close(self) -> None:
        self._client.close()

    def __repr__(self) -> str:
        s = self.settings
        return f"OpenAIJudge(base_url={s.base_url!r}, model={s.model!r}, key_env={s.api_key_env!r})"

    # ------------------------------------------------------------------ one phrasing

    def _body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        return {
            "model": self.settings.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": messages,
        }

    def _ask(self, system: str, inp: JudgeInput, tally: Spend) -> tuple[Reply, Served]:
        """A valid reply for one system prompt, and what served it: from the cache (when
        `ServedGate` trusts it), the call, or its repair."""
        asked = Asked(
            chunk_ids=tuple(c.id for c in inp.retrieved),
            metrics=frozenset(self.settings.metrics),
            reference=bool(inp.reference_answer),
        )
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": user_message(inp, self.settings.metrics)},
        ]
        body = self._body(messages)
        s = self.settings
        key = cache_key(s.base_url, s.model, PROMPT_VERSION, body, s.revision)
        entry = self._cache.get(key) if self._cache is not None else None
        if entry is None:
            return self._live(messages, asked, inp, tally, key)
        recorded = Served.of(entry.get("served"))
        trusted = self._gate.trusts(recorded)
        if trusted is None:  # the probe: what does the endpoint serve now?
            try:
                return self._live(messages, asked, inp, tally, key)
            finally:
                self._gate.probed()
        if trusted:
            try:
                return _grounded(parse_reply(entry["reply"], asked), inp), recorded
            except ReplyError:
                log.warning("judge cache entry %s no longer valid; asking again", key[:12])
        else:
            log.info(
                "judge cache entry %s was served by %s, the endpoint now serves %s; asking again",
                key[:12],
                recorded.model,
                self._gate.now.model,
            )
        return self._live(messages, asked, inp, tally, key)

    def _live(
        self,
        messages: list[dict[str, str]],
        asked: Asked,
        inp: JudgeInput,
        tally: Spend,
        key: str,
    ) -> tuple[Reply, Served]:
        """A valid reply from the endpoint (one repair request at most), cached."""
        body = self._body(messages)
        text, usage, served = self.call(body, tally)
        try:
            raw = decode(text)
            reply = _grounded(parse_reply(raw, asked), inp)
        except ReplyError as first:
            log.info("judge reply malformed (%s); sending one repair request", first)
            repair = messages + [
                {"role": "assistant", "content": text},
                {"role": "user", "content": REPAIR_INSTRUCTION.format(problem=first)},
            ]
            text, more, served = self.call(self._body(repair), tally)
            usage = {k: usage.get(k, 0) + more.get(k, 0) for k in usage.keys() | more.keys()}
            try:
                raw = decode(text)
                reply = _grounded(parse_reply(raw, asked), inp)
            except ReplyError as second:
                raise _Failure(f"malformed judge reply after one repair retry: {second}") from None
        if self._cache is not None:
            self._cache.put(key, raw, usage, served)
        return reply, served

    # ------------------------------------------------------------------ transport

    def call(self, body: dict[str, Any], tally: Spend) -> tuple[str, dict[str, int], Served]:
        """The reply text, usage and what served it of one chat-completions request,
        after retries: the transport the judge and the LLM generator (candidates/chat.py)
        share.

        An overload answered to a call the limiter started before it last backed off
        (`Call.news` false) was the old pace's: it costs no retry of `max_retries`, up to
        `MAX_FREE_RETRIES` such, so a start at the ceiling never fails a question."""
        s = self.settings
        tokens = self.limiter.estimate(len(json.dumps(body, ensure_ascii=False)))
        counted = free = 0
        while True:
            with self.limiter.call(tokens) as call:
                try:
                    status, headers, data = self._post(body)
                except httpx.TimeoutException:
                    call.overloaded()
                    problem = f"timed out after {s.timeout_s:g} s"
                except httpx.TransportError as exc:
                    call.overloaded()
                    problem = f"connection failed ({type(exc).__name__})"
                else:
                    if status == 200:
                        text, usage, served = self._content(data, tally)
                        call.answered(headers, usage)
                        self._gate.heard(served)
                        return text, usage, served
                    problem = f"HTTP {status}"
                    if status not in _RETRY_STATUS:
                        text = data[:200].decode("utf-8", "replace")
                        raise _Failure(f"judge endpoint answered {problem}: {text}")
                    call.overloaded(_retry_after(headers))
            if call.news or free == MAX_FREE_RETRIES:
                counted += 1
            else:
                free += 1
            if counted > s.max_retries:
                break
            # Retry-After pauses every thread in the limiter; otherwise this one backs off
            wait = 0.0
            if call.retry_after is None:
                wait = random.uniform(0, min(MAX_WAIT_S, s.backoff_base_s * 2 ** (counted - 1)))
            log.info("judge call %s; retry %d/%d in %.2f s", problem, counted, s.max_retries, wait)
            time.sleep(wait)
        raise _Failure(f"judge endpoint gave up after {counted + free} attempt(s): {problem}")

    def _post(self, body: dict[str, Any]) -> tuple[int, httpx.Headers, bytes]:
        """One request within one total deadline of `timeout_s` — connect, headers and
        body together (`deadline.within`: httpx's own timeout is per read, and a server
        dripping a byte a second never trips it) — read as a stream with a size cap of
        `MAX_REPLY_BYTES` (reading stops there, nothing more is held). Redirects are
        never followed (httpx's default): the key goes to `base_url` only."""
        with (
            deadline.within(self.settings.timeout_s),
            self._client.stream("POST", "chat/completions", json=body) as resp,
        ):
            parts, size = [], 0
            for chunk in resp.iter_bytes():
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    raise _Failure(f"judge reply longer than {MAX_REPLY_BYTES} bytes; cut off")
                parts.append(chunk)
            return resp.status_code, resp.headers, b"".join(parts)

    @staticmethod
    def _content(data: bytes, tally: Spend) -> tuple[str, dict[str, int], Served]:
        """Message text, usage and what served a 200 reply; a broken envelope counts as
        malformed (and says nothing of what served it)."""
        try:
            envelope = loads(data)
        except BadJSON:
            return data.decode("utf-8", "replace"), {}, Served()
        usage = tally.add(envelope.get("usage") if isinstance(envelope, dict) else None)
        served = Served.of(envelope)
        try:
            text = envelope["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return "", usage, served
        return (text if isinstance(text, str) else ""), usage, served

    def _scrub(self, message: str) -> str:
        """Remove the key from a message, in case a server echoed it back in an error; a
        key too short or common to be a secret (`redact.can_be_secret`) is left, or every
        "the" of an error would go."""
        if self._secret and can_be_secret(self._secret):
            return message.replace(self._secret, "***")
        return message
