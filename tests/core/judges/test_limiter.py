"""The HTTP judge's limiter (rageval_core/judges/limiter.py): its rules on a fake clock,
as properties, and the judge against a real rate-limited server on 127.0.0.1."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.judges import make_judge
from rageval_core.judges.limiter import Bucket, Limiter, Window


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


# ---------------------------------------------------------------------------- the window


@settings(max_examples=300)
@given(
    ceiling=st.integers(1, 256),
    events=st.lists(st.tuples(st.booleans(), st.integers(-3, 0)), max_size=200),
)
def test_the_window_stays_between_one_and_the_ceiling_and_halves_once_a_round(ceiling, events):
    w = Window(ceiling)
    assert w.limit == ceiling  # starts high
    for ok, age in events:
        before, round_ = w.limit, w.round
        if ok:
            w.succeeded()
            assert before <= w.limit <= max(before, ceiling)
        else:
            news = w.overloaded(round_ + age)  # age < 0: the call started in an earlier round
            assert news == (age == 0)
            assert w.limit == (max(1.0, before / 2) if news else before)
            assert w.round == round_ + news
        assert 1 <= w.slots <= ceiling


def test_the_window_grows_back_about_one_slot_per_window_of_successes():
    w = Window(32)
    w.overloaded(0)
    w.overloaded(1)
    assert w.slots == 8
    for _ in range(8):
        w.succeeded()
    assert w.slots == 8 and w.limit > 8.9
    for _ in range(600):  # 8 + 9 + ... + 31 successes to get back to the top
        w.succeeded()
    assert w.limit == 32  # never past the ceiling


# ---------------------------------------------------------------------------- the budgets


@settings(max_examples=200)
@given(
    per_minute=st.floats(6, 6000),
    arrivals=st.lists(st.floats(0, 30), min_size=1, max_size=300),
)
def test_a_bucket_never_lets_more_than_its_rate_through(per_minute, arrivals):
    """Callers arriving at any times, each starting as soon as the bucket allows: in any
    interval of length T at most capacity + rate * T start."""
    start = 0.0
    b = Bucket.per_minute(per_minute, start)
    starts = []
    for t in sorted(arrivals):
        t = max(t, starts[-1] if starts else t)
        t += b.wait(1, t)
        assert b.wait(1, t) == 0
        b.take(1, t)
        starts.append(t)
    for i, a in enumerate(starts):
        for j in range(i, len(starts)):
            span = starts[j] - a
            assert j - i + 1 <= b.capacity + b.rate * span + 1e-6


@settings(max_examples=200)
@given(sizes=st.lists(st.integers(1, 50_000), min_size=1, max_size=50))
def test_token_budget_holds_on_average_even_for_calls_larger_than_a_second(sizes):
    clock = Clock()
    lim = Limiter(256, tokens_per_minute=60_000, clock=clock)  # 1,000 tokens a second
    for n in sizes:
        clock.now += lim.wait(n, clock.now)
        with lim.call(n):
            pass
    # the last call may start once the bucket is full again: all but its excess is paid
    assert clock.now >= (sum(sizes) - sizes[-1] - 1000) / 1000 - 1e-6


def test_retry_after_pauses_every_caller_and_halves_the_window():
    clock = Clock()
    lim = Limiter(8, clock=clock)
    with lim.call(10) as call:
        call.overloaded(retry_after=2.5)
    assert call.news and lim.window.slots == 4
    assert lim.wait(10, clock.now) == 2.5  # every thread waits, not only the one refused
    clock.now = 2.5
    assert lim.wait(10, clock.now) == 0


def test_a_full_window_waits_for_a_call_to_end():
    lim = Limiter(2, clock=Clock())
    with lim.call(1), lim.call(1):
        assert lim.in_flight == 2 and lim.wait(1, 0.0) == float("inf")
    assert lim.wait(1, 0.0) == 0


def test_budgets_are_learned_from_headers_and_the_lower_one_holds():
    clock = Clock()
    lim = Limiter(32, requests_per_minute=1200, clock=clock)
    with lim.call(100) as call:
        call.answered(
            {"x-ratelimit-limit-requests": "600", "x-ratelimit-limit-tokens": "90000"},
            {"prompt_tokens": 900, "completion_tokens": 100},
        )
    assert lim.budget("requests") == 600 and lim.budget("tokens") == 90000
    lim2 = Limiter(32, requests_per_minute=300, clock=clock)
    with lim2.call(100) as call:
        call.answered({"x-ratelimit-limit-requests": "600", "x-ratelimit-limit-tokens": "x"}, {})
    assert lim2.budget("requests") == 300 and lim2.budget("tokens") is None


def test_the_token_estimate_learns_the_completion_size():
    lim = Limiter(4, clock=Clock())
    first = lim.estimate(4000)
    with lim.call(first) as call:
        call.answered({}, {"prompt_tokens": 1000, "completion_tokens": 40})
    assert first == 1000 + 256 and lim.estimate(4000) == 1040


def test_threads_never_exceed_the_window():
    lim = Limiter(3)
    peak, now, lock = [0], [0], threading.Lock()

    def work(_):
        with lim.call(1):
            with lock:
                now[0] += 1
                peak[0] = max(peak[0], now[0])
            time.sleep(0.005)
            with lock:
                now[0] -= 1

    with ThreadPoolExecutor(12) as pool:
        list(pool.map(work, range(60)))
    assert peak[0] == 3


# ---------------------------------------------------------------------------- on the wire


class RateLimited:
    """A server-side token bucket: `rate` requests a second, `burst` at once; a request
    beyond it gets 429 with the wait in `retry-after-ms`. With `headers`, every answer
    says the budget as OpenAI's servers do (`x-ratelimit-limit-requests`, per minute)."""

    def __init__(self, chat, reply, rate, burst, headers=False):
        self.chat, self.reply, self.rate, self.burst = chat, reply, rate, burst
        self.headers = headers
        self.level, self.at = float(burst), time.monotonic()
        self.refused = 0
        self.accepted: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, n, request):
        with self._lock:
            now = time.monotonic()
            self.level = min(self.burst, self.level + (now - self.at) * self.rate)
            self.at = now
            if self.level < 1:
                self.refused += 1
                wait_ms = (1 - self.level) / self.rate * 1000
                return self.chat.Step(status=429, headers={"retry-after-ms": f"{wait_ms:.0f}"})
            self.level -= 1
            self.accepted.append(now)
        extra = {"x-ratelimit-limit-requests": str(self.rate * 60)} if self.headers else {}
        return self.chat.Step(content=self.reply, delay_s=0.05, headers=extra)


def _judge_many(chat, sample_input, server, n=60, **kw):
    inputs = [replace(sample_input, question=f"When did the museum open? ({i})") for i in range(n)]
    with chat.ChatServer(server) as srv:
        judge = make_judge(
            {
                "kind": "openai",
                "base_url": srv.base_url,
                "model": "m",
                "cache": False,
                "metrics": ["faithfulness"],
                "max_retries": 2,
                "backoff_base_s": 0.05,
                **kw,
            }
        )
        start = time.monotonic()
        with ThreadPoolExecutor(32) as pool:
            results = list(pool.map(judge.judge, inputs))
        took = time.monotonic() - start
        judge.close()
    return results, took, judge.limiter


def test_a_429ing_server_gets_every_question_judged_at_its_pace(chat, sample_input):
    server = RateLimited(chat, {"claims": [], "refused": True}, rate=40, burst=4)
    # retries to spare: on a loaded machine a thread can wake after others took its slot
    # (2 retries failed one question in 60 in a full suite run beside a second one)
    results, took, limiter = _judge_many(chat, sample_input, server, max_retries=5)
    assert [r.error for r in results] == [None] * 60  # no 429 left unhandled
    assert server.refused > 0 and limiter.counts.decreases > 0  # it did back off
    assert limiter.window.slots < 32
    assert took < 8  # the server's floor is 1.5 s; a retry budget spent waiting is far more


def test_a_budget_announced_by_the_server_or_configured_paces_the_calls(chat, sample_input):
    server = RateLimited(chat, {"claims": [], "refused": True}, rate=40, burst=4, headers=True)
    results, _, limiter = _judge_many(chat, sample_input, server, concurrency=2)
    assert [r.error for r in results] == [None] * 60
    assert limiter.budget("requests") == 2400  # learned from x-ratelimit-limit-requests
    fresh = RateLimited(chat, {"claims": [], "refused": True}, rate=40, burst=4)
    more, _, _ = _judge_many(chat, sample_input, fresh, requests_per_minute=2400)
    assert [r.error for r in more] == [None] * 60
    assert fresh.refused == 0  # 32 threads paced from the start: not one 429
