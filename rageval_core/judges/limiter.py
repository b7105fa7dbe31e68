"""How fast the HTTP judge calls its endpoint: adaptive concurrency under per-minute budgets.

    Window    how many calls may be in flight: starts at the ceiling (the config's
              `concurrency`), halves on an overload (429, 5xx, a timeout, a failed
              connection) once per round, and grows back by about one per window of
              successes, never past the ceiling
    Bucket    a token bucket: on average at most `rate` a second, `capacity` at once
    Limiter   both for many threads: `call()` waits until a call may start, is told how it
              went, and learns budgets from the server's rate-limit headers

A judge that starts low wastes a fast endpoint (4 calls in flight made rageval the slowest
of three tools on a 0.5 s endpoint, issue 32); one that stays high on a rate-limited
endpoint spends its retries on 429s. Budgets: `requests_per_minute` and
`tokens_per_minute` from the config, and the `x-ratelimit-limit-requests` /
`x-ratelimit-limit-tokens` headers OpenAI-style servers send (per minute); the lower of
the two holds, used at `HEADROOM`. A `Retry-After` (or `retry-after-ms`) pauses every
thread, not only the one that got the 429. Tokens are counted before a call by an
estimate (prompt characters / 4 plus the mean completion so far) and corrected by the
reply's `usage`.

This module never sends a request: it decides when one may start. Its clock is injected,
so its rules are tested without waiting (tests/core/judges/test_limiter.py).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

CHARS_PER_TOKEN = 4
FIRST_COMPLETION_TOKENS = 256
"""The completion a call is assumed to cost before any reply has said (a judge reply with
reasons for five metrics is a few hundred tokens)."""
MAX_PAUSE_S = 120.0
HEADROOM = 0.95
"""The share of a budget the judge uses: a server counts arrivals on its own clock, and a
call queued behind another lands early; at exactly the budget every such jitter is a 429."""
_EPSILON = 1e-9


@dataclass
class Window:
    """The most calls in flight: multiplicative decrease, additive increase (as TCP)."""

    ceiling: int
    limit: float = field(init=False)
    round: int = 0
    """Raised at each decrease: an overload of a call started in an earlier round was
    caused by the old, higher limit and is already answered."""

    def __post_init__(self) -> None:
        self.limit = float(self.ceiling)

    @property
    def slots(self) -> int:
        return max(1, int(self.limit))

    def succeeded(self) -> None:
        self.limit = min(float(self.ceiling), self.limit + 1 / self.limit)

    def overloaded(self, started_in: int) -> bool:
        """Halve the limit (not below 1) unless the call started before the last
        decrease; True when this overload lowered it."""
        if started_in != self.round:
            return False
        self.limit = max(1.0, self.limit / 2)
        self.round += 1
        return True


@dataclass
class Bucket:
    """At most `rate` units a second on average and `capacity` at once. A take larger than
    the capacity waits for a full bucket and leaves a debt, so the average holds.

    The judge's buckets hold one unit (`per_minute`): calls are spread evenly and never
    burst, since providers enforce a per-minute budget in shorter slices, and a burst a
    server does not allow costs 429s for nothing."""

    rate: float
    capacity: float
    level: float
    at: float

    @classmethod
    def per_minute(cls, budget: float, now: float) -> Bucket:
        return cls(budget * HEADROOM / 60, 1.0, 1.0, now)

    def _fill(self, now: float) -> None:
        if now > self.at:
            self.level = min(self.capacity, self.level + (now - self.at) * self.rate)
            self.at = now

    def wait(self, n: float, now: float) -> float:
        """Seconds until `n` units may be taken (0: now)."""
        self._fill(now)
        short = min(n, self.capacity) - self.level
        # a wait of exactly `short / rate` must be enough, whatever the float rounding
        return 0.0 if short <= _EPSILON * self.capacity else short / self.rate

    def take(self, n: float, now: float) -> None:
        self._fill(now)
        self.level -= n

    def resize(self, budget: float, now: float) -> None:
        """A new per-minute budget; what the bucket holds stays (never a new burst)."""
        self._fill(now)
        self.rate = budget * HEADROOM / 60

    def correct(self, n: float) -> None:
        """`n` more units were used than taken (fewer when negative)."""
        self.level = min(self.capacity, self.level - n)


@dataclass
class Counts:
    """What the limiter saw, for a bench or a log line."""

    calls: int = 0
    overloads: int = 0
    decreases: int = 0


@dataclass
class Call:
    """One call under way; the caller says how it went (an answer is a success)."""

    round: int
    tokens: int
    overload: bool = False
    retry_after: float | None = None
    used: int | None = None
    completion: int | None = None
    headers: Mapping[str, str] | None = None
    news: bool = field(default=False, init=False)
    """Set when the call ends: its overload lowered the window (an overload of an earlier
    round is the limiter's doing, not the endpoint's answer to the current pace)."""

    def overloaded(self, retry_after: float | None = None) -> None:
        self.overload, self.retry_after = True, retry_after

    def answered(self, headers: Mapping[str, str], usage: Mapping[str, int]) -> None:
        self.headers = headers
        if usage:
            self.used = sum(usage.get(k, 0) for k in ("prompt_tokens", "completion_tokens"))
            self.completion = usage.get("completion_tokens")


def _header_budget(headers: Mapping[str, str], name: str) -> float | None:
    try:
        value = float(headers.get(name, ""))
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


class Limiter:
    """The window and the budgets for all of a judge's threads (module docstring)."""

    def __init__(
        self,
        ceiling: int,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.window = Window(ceiling)
        self.counts = Counts()
        self._clock = clock
        self._cond = threading.Condition()
        self._configured = {"requests": requests_per_minute, "tokens": tokens_per_minute}
        now = clock()
        self._buckets: dict[str, Bucket | None] = {
            k: None if v is None else Bucket.per_minute(v, now) for k, v in self._configured.items()
        }
        self._in_flight = 0
        self._paused_until = now
        self._completion_mean = float(FIRST_COMPLETION_TOKENS)
        self._answers = 0

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def budget(self, kind: str) -> float | None:
        """The per-minute budget of `kind` ("requests", "tokens") in force; None: none."""
        bucket = self._buckets[kind]
        return None if bucket is None else round(bucket.rate * 60 / HEADROOM, 6)

    def estimate(self, prompt_chars: int) -> int:
        """Tokens a call with a prompt of `prompt_chars` characters is expected to cost."""
        return math.ceil(prompt_chars / CHARS_PER_TOKEN + self._completion_mean)

    def wait(self, tokens: int, now: float) -> float:
        """Seconds until a call of `tokens` may start (0: now; inf: when one ends)."""
        waits = [self._paused_until - now]
        if self._in_flight >= self.window.slots:
            waits.append(math.inf)
        for kind, n in (("requests", 1), ("tokens", tokens)):
            bucket = self._buckets[kind]
            if bucket is not None:
                waits.append(bucket.wait(n, now))
        return max(0.0, *waits)

    @contextmanager
    def call(self, tokens: int) -> Iterator[Call]:
        """Wait for a slot and the budgets, then hold them for the call; on leaving, the
        call's outcome (`Call.overloaded`, `Call.answered`) adjusts the window and budgets.
        An exception out of the call is neither: the slot is freed."""
        with self._cond:
            while (wait := self.wait(tokens, self._clock())) > 0:
                self._cond.wait(None if math.isinf(wait) else wait)
            now = self._clock()
            for kind, n in (("requests", 1), ("tokens", tokens)):
                bucket = self._buckets[kind]
                if bucket is not None:
                    bucket.take(n, now)
            self._in_flight += 1
            self.counts.calls += 1
            call = Call(self.window.round, tokens)
        try:
            yield call
        finally:
            self._finish(call)

    def _finish(self, call: Call) -> None:
        with self._cond:
            self._in_flight -= 1
            if call.overload:
                self.counts.overloads += 1
                call.news = self.window.overloaded(call.round)
                self.counts.decreases += call.news
                if call.retry_after is not None:
                    until = self._clock() + min(call.retry_after, MAX_PAUSE_S)
                    self._paused_until = max(self._paused_until, until)
            elif call.headers is not None:
                self.window.succeeded()
                self._learn(call)
            self._cond.notify_all()

    def _learn(self, call: Call) -> None:
        """Budgets the server announced, and the call's real token cost."""
        now = self._clock()
        for kind in ("requests", "tokens"):
            heard = _header_budget(call.headers or {}, f"x-ratelimit-limit-{kind}")
            mine = self._configured[kind]
            budget = heard if mine is None else mine if heard is None else min(mine, heard)
            bucket = self._buckets[kind]
            if budget is None or budget == self.budget(kind):
                continue
            if bucket is None:
                self._buckets[kind] = Bucket.per_minute(budget, now)
            else:
                bucket.resize(budget, now)
        tokens = self._buckets["tokens"]
        if tokens is not None and call.used is not None:
            tokens.correct(call.used - call.tokens)
        if call.completion is not None:
            self._answers += 1
            self._completion_mean += (call.completion - self._completion_mean) / self._answers
