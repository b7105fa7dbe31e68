"""The one way the benches time a call: wall-clock and process CPU milliseconds of one call,
and the median wall time of several. Tests may import it like any module."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Timed(Generic[T]):
    """One call's value, its wall-clock ms and its process CPU ms (every thread's: DuckDB's
    and Arrow's included, so CPU can exceed wall time)."""

    value: T
    ms: float
    cpu_ms: float


def timed(fn: Callable[[], T]) -> Timed[T]:
    c, t = time.process_time(), time.perf_counter()
    value = fn()
    return Timed(value, (time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000)


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    """The median wall-clock ms of `repeat` calls (at least one)."""
    return statistics.median(timed(fn).ms for _ in range(max(1, repeat)))
