"""bench/timing.py, the benches' one clock: a call's value, wall and CPU time."""

from __future__ import annotations

import time

from bench.timing import median_ms, timed


def test_a_timed_call_keeps_its_value_and_counts_its_wall_and_cpu_time() -> None:
    slept = timed(lambda: time.sleep(0.03) or "done")
    assert slept.value == "done"
    assert slept.ms >= 30 and slept.cpu_ms < slept.ms  # sleeping costs no CPU
    busy = timed(lambda: sum(range(300_000)))
    assert busy.value == sum(range(300_000)) and busy.cpu_ms > 0


def test_the_median_is_of_every_call() -> None:
    calls = []
    assert median_ms(lambda: calls.append(time.sleep(0.01)), 3) >= 10
    assert len(calls) == 3
    median_ms(lambda: calls.append(1), 0)
    assert len(calls) == 4  # at least one call
