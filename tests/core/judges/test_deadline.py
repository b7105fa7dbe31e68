"""One total deadline per judge call, whatever the server drips (issue 35).

httpx bounds each read, not the call: a server sending its headers a byte every half
second kept a `timeout_s: 2` call running for minutes. These tests bound themselves (a
thread joined with a timeout), so the bug fails in seconds instead of hanging the suite.
"""

from __future__ import annotations

import threading
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.judges import make_judge


def bounded(fn, limit_s: float):
    """fn()'s result and the seconds it took; fails when it is still running at `limit_s`."""
    box: dict = {}

    def call():
        start = time.monotonic()
        box["value"] = fn()
        box["took"] = time.monotonic() - start

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(limit_s)
    assert not t.is_alive(), f"still running after {limit_s} s: no total deadline"
    return box["value"], box["took"]


def drip_judge(server, timeout_s: float, max_retries: int):
    return make_judge(
        {
            "kind": "openai",
            "base_url": server.base_url,
            "model": "m",
            "timeout_s": timeout_s,
            "max_retries": max_retries,
            "backoff_base_s": 0.01,
            "cache": False,
        }
    )


def test_dripping_headers_end_at_the_deadline_of_each_attempt(chat, sample_input):
    with chat.DripServer(every_s=0.5) as srv:
        judge = drip_judge(srv, timeout_s=2, max_retries=1)
        result, took = bounded(lambda: judge.judge(sample_input), limit_s=15)
    print(f"judge against a dripping server, timeout_s 2, max_retries 1: {took:.2f} s")
    assert result.error is not None and "timed out after 2 s" in result.error
    assert srv.connections == 2  # both attempts made, each cut at its deadline
    assert 4.0 <= took < 6.0


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(every_s=st.floats(0.01, 0.3), timeout_s=st.floats(0.2, 0.8))
def test_any_drip_rate_is_cut_at_the_deadline(chat, sample_input, every_s, timeout_s):
    """Whatever the pace of the drip, one attempt ends within its deadline plus a margin."""
    with chat.DripServer(every_s=every_s) as srv:
        judge = drip_judge(srv, timeout_s=timeout_s, max_retries=0)
        result, took = bounded(lambda: judge.judge(sample_input), limit_s=timeout_s + 10)
    assert result.error is not None
    assert took < timeout_s + 1.0
