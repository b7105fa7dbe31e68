"""The one number style: how a score, a rate, a latency, a cost or a count is written.

Pure text functions, no metric knowledge: `catalogue.Metric` picks one by the metric's
unit, and every page, the report, `rageval runs`, `check` and `compare` print through the
catalogue. Nothing here writes e-notation (`7.002e-05` became `$0.000070`), and a missing
value is always `MISSING`.
"""

from __future__ import annotations

import math

MISSING = "–"
"""The one mark for a value that is absent (None, NaN)."""
MINUS = "−"
"""Signs of deltas: a typographic minus, so `−0.05` and `+0.05` line up."""


def absent(value: object) -> bool:
    """True for None, NaN and anything that is not a real number."""
    if value is None or isinstance(value, bool):
        return value is None
    try:
        return math.isnan(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return True


def plain(x: float, digits: int) -> str:
    """`x` with `digits` significant digits in decimal notation, thousands separated:
    `plain(7.002e-05, 2) == "0.000070"`, `plain(1234.5, 3) == "1,235"` (whole numbers are
    never cut to zeros)."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    return f"{x:,.{decimals}f}"


def short(x: float) -> str:
    """A threshold or a raw difference as a person writes it: four significant digits,
    trailing zeros dropped (`0.85`, `0.4506`, `0.00001`), never `1e-05`."""
    text = plain(x, 4)
    return text.rstrip("0").rstrip(".") if "." in text else text


def score(x: float) -> str:
    """A 0–1 score: three decimals (`0.812`)."""
    return f"{x:.3f}"


def percent(x: float) -> str:
    """A share (0–1) as a percentage: `0.308 -> 30.8%`, whole above 10 ‰ of a point."""
    return f"{x * 100:.1f}%"


def ms(x: float) -> str:
    """A duration in milliseconds: `16 ms`, `1,995 ms`, `12.4 s` from 10 s up."""
    if abs(x) >= 10_000:
        return f"{x / 1000:,.1f} s"
    return f"{x:,.1f} ms" if abs(x) < 10 else f"{x:,.0f} ms"


def usd(x: float) -> str:
    """Dollars: cents from $1 up (`$12.35`), else two significant digits (`$0.000070`)."""
    sign = "-" if x < 0 else ""
    a = abs(x)
    return f"{sign}${a:,.2f}" if a >= 1 or a == 0 else f"{sign}${plain(a, 2)}"


def per_million(x: float) -> str:
    """A per-question cost as dollars per million questions (`$70 per 1M questions`):
    reads better than six decimals when the cost per question is below a cent."""
    return f"{usd(x * 1_000_000)} per 1M questions"


def count(x: float) -> str:
    """A count: `1,234`."""
    return f"{x:,.0f}"


def number(x: float) -> str:
    """Any other number: four significant digits, decimal notation."""
    return plain(x, 4)


def agreement(x: object) -> str:
    """An agreement coefficient (Cohen's kappa, -1..1) with two decimals, or MISSING."""
    return MISSING if absent(x) else f"{float(x):.2f}"  # type: ignore[arg-type]


def signed(text: str, delta: float) -> str:
    """`text` (the formatted magnitude of `delta`) with the delta's sign in front (`±`
    for no change)."""
    return f"{MINUS if delta < 0 else '+' if delta > 0 else '±'}{text}"
