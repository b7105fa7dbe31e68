"""`Metric`: one measure or figure, and how its numbers are written, read and judged.

A metric's style (score, share, ms, dollars, count) decides its text, plotly and table
formats; its direction how a change is judged; `is_score` whether it is on 0..1.
"""

from __future__ import annotations

from dataclasses import dataclass

from rageval_core import numbers
from rageval_core.catalogue.sections import DEFINITIONS_PATH, SECTIONS
from rageval_core.models import Direction, Unit
from rageval_core.numbers import MISSING

_TEXT = {
    "unit": numbers.score,
    "percent": numbers.percent,
    "ms": numbers.ms,
    "usd": numbers.usd,
    "count": numbers.count,
    "number": numbers.number,
}
_DELTA = {**_TEXT, "percent": lambda d: f"{d * 100:.1f} pp"}
_D3 = {
    "unit": ".3f",
    "percent": ".1%",
    "ms": ",.0f",
    "usd": "$.2~r",
    "count": ",d",
    "number": ",.4~r",
}
"""Plotly (d3) formats of each style: the same numbers in hover text and on axes."""
_SAYS = {
    "unit": "a score from 0 to 1",
    "percent": "a share of questions, in %",
    "ms": "milliseconds",
    "usd": "US dollars",
    "count": "a number of questions",
    "number": "a number",
}

ANSWERABLE_ONLY: frozenset[str] = frozenset({"answer_correctness"})
"""Measures whose run-level figures (mean, p10, share below threshold, compare deltas,
distribution, bottom tenth) cover answerable questions only. On an unanswerable question
`answer_correctness` is refusal credit (1.0 declined, 0.0 answered): mixed into the mean it
let runs with different answers show the same correctness. That credit is reported as
`missed_refusal_rate` instead."""


@dataclass(frozen=True)
class Metric:
    """One measure (per-question column) or figure (run-level number).

    `of` names the measure a figure aggregates (None for a measure itself and for
    figures made of several columns, like `recall_gap`); `aggregate` says how (`value`
    for a measure); `groups` are the views that offer it (see `GROUPS`).
    """

    name: str
    label: str
    direction: Direction
    unit: Unit
    aggregate: str = "value"
    of: str | None = None
    groups: frozenset[str] = frozenset()
    declared: bool = False
    range: tuple[float, float] | None = None
    definition: str = ""
    doc: str = ""  # the anchor of its section of docs/metrics.md

    @property
    def lower_is_better(self) -> bool:
        return self.direction == "lower"

    @property
    def is_score(self) -> bool:
        """Whether its values are on 0..1 (a score or a share), whichever way is better:
        compared and ranked by the size of a move, unlike a latency, cost or count,
        which are read in their own units."""
        return self.unit == "unit"

    @property
    def is_measure(self) -> bool:
        return self.aggregate == "value"

    @property
    def answerable_only(self) -> bool:
        """Whether this figure covers answerable questions only (see `ANSWERABLE_ONLY`)."""
        return (self.of or self.name) in ANSWERABLE_ONLY

    @property
    def style(self) -> str:
        """How its numbers are written: its unit, or `percent` for a rate (a share)."""
        return "percent" if self.aggregate == "rate" else self.unit

    def fmt(self, value: object) -> str:
        """`value` in the one number style (`0.812`, `30.8%`, `1,435 ms`, `$0.000070`);
        `MISSING` when absent."""
        if numbers.absent(value):
            return MISSING
        return _TEXT[self.style](float(value))  # type: ignore[arg-type]

    def fmt_delta(self, delta: object) -> str:
        """A change with its sign and unit (`+0.012`, `−5.0 pp`, `+6 ms`, `−$0.000033`)."""
        if numbers.absent(delta):
            return MISSING
        d = float(delta)  # type: ignore[arg-type]
        return numbers.signed(_DELTA[self.style](abs(d)), d)

    @property
    def says(self) -> str:
        """Its unit in words (`milliseconds`, `a score from 0 to 1`)."""
        return _SAYS[self.style]

    @property
    def d3(self) -> str:
        """The plotly (d3) format of its values, for hover text and axis ticks."""
        return _D3[self.style]

    def column_format(self) -> str:
        """The Streamlit NumberColumn format of its values (printf, or a named one)."""
        return {
            "unit": "%.3f",
            "percent": "percent",
            "ms": "%,d ms",
            "usd": "$%.6f",
            "count": "%,d",
            "number": "%.4f",
        }[self.style]

    @property
    def help(self) -> str:
        """The one-line definition shown as help text: what it is, its unit and direction,
        and a link to its section of docs/metrics.md (Markdown)."""
        way = "lower is better" if self.lower_is_better else "higher is better"
        what = self.definition or f"{self.label} (declared by the run)"
        return f"{what} — {self.says}, {way}. [Definition]({self.link})"

    @property
    def link(self) -> str:
        """Its section of the definitions page, relative to the app (the page's top for a
        metric nobody described)."""
        section = SECTIONS.get(self.doc)
        return section.link if section else DEFINITIONS_PATH

    @property
    def source(self) -> str:
        """Where its definition is written out in the repository (`docs/metrics.md, "Per
        run"`): what the HTML report says, as it cannot link to a dashboard."""
        section = SECTIONS.get(self.doc)
        return section.source if section else "docs/metrics.md"

    def better(self, delta: float) -> bool:
        """True when a change of `delta` is an improvement for this metric."""
        return delta < 0 if self.lower_is_better else delta > 0

    def reading(
        self,
        delta: object,
        interval: tuple[float, float] | None = None,
        noise: float | None = None,
    ) -> str | None:
        """How a change of `delta` reads: `better`, `worse` or `same`; None when there is
        none. (A reading, not a verdict: a verdict is what a judge says of a claim.)

        `same` when the change is within its noise: the paired interval of the delta
        includes 0, or (latency) |delta| is within `noise`, the spread of earlier runs of
        the same config and settings (docs/metrics.md, "Reading a change"). A change with neither is
        judged by its sign alone.
        """
        if numbers.absent(delta):
            return None
        d = float(delta)  # type: ignore[arg-type]
        if abs(d) < 1e-12:
            return "same"
        if interval is not None and not any(map(numbers.absent, interval)):
            low, high = interval
            if low <= 0 <= high:
                return "same"
        if noise is not None and not numbers.absent(noise) and abs(d) <= noise:
            return "same"
        return "better" if self.better(d) else "worse"
