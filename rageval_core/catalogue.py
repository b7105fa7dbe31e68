"""The metric catalogue (SPEC §9): every figure rageval shows, described once.

Two kinds of entry, both `Metric`:

- a **measure** is a per-question numeric column (`recall_at_5`, `faithfulness`,
  `total_ms`, `cost_usd`, or a column a run declares in its manifest);
- a **figure** is a run-level number computed from those rows: a measure's mean
  (`faithfulness`), its 10th percentile (`faithfulness_p10`), a latency quantile
  (`total_ms_p95`), a rate (`missed_refusal_rate`), a count (`failure_error`).

Pages, `check`, `compare`, the report and the CLI take labels, directions, units and the
groups a figure belongs to from here; nobody keeps a label table or a "lower is better"
set of their own. Every SQL identifier built from a metric name comes from a catalogue:
the built-in one, or the built-in one plus a run's validated declarations.

Pure: imports nothing that does I/O, so the metric maths and the results schema can build
on it without pulling in Arrow or a filesystem.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from rageval_core.errors import ConfigError
from rageval_core.models import FAILURE_TYPES, DeclaredMetric, Direction, Unit

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10, 20)
"""Cut-offs whose recall/precision/hit every run stores (SPEC §4)."""
NDCG_K = 10
"""The one nDCG cut-off stored per question (column `ndcg_at_10`)."""
TAIL_QUANTILE = 0.1
"""The tail every `_p10` figure and bottom-tenth view is about."""

DECLARED_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
UNITS: tuple[str, ...] = ("unit", "ms", "usd", "count", "number")
_FORMATS: Mapping[str, str] = {
    "unit": "{:.3f}",
    "ms": "{:,.0f}",
    "usd": "{:.4g}",
    "count": "{:,.0f}",
    "number": "{:.4g}",
}


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

    @property
    def lower_is_better(self) -> bool:
        return self.direction == "lower"

    @property
    def is_measure(self) -> bool:
        return self.aggregate == "value"

    @property
    def answerable_only(self) -> bool:
        """Whether this figure covers answerable questions only (see `ANSWERABLE_ONLY`)."""
        return (self.of or self.name) in ANSWERABLE_ONLY

    def fmt(self, value: object, missing: str = "–") -> str:
        """`value` in this metric's unit (`0.812`, `1,435`, `0.0037`), `missing` if absent."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return missing
        try:
            return _FORMATS[self.unit].format(value)
        except (TypeError, ValueError):
            return str(value)[:40]

    def better(self, delta: float) -> bool:
        """True when a change of `delta` is an improvement for this metric."""
        return delta < 0 if self.lower_is_better else delta > 0


GROUPS: Mapping[str, str] = {
    # measures (per-question columns)
    "retrieval": "measures of the ranked list (Retrieval page)",
    "generation": "measures of the answer (faithfulness, correctness, declared metrics)",
    "latency": "per-question timings in milliseconds",
    "cost": "per-question costs in dollars",
    "quality": "measures with a mean and a p10 figure (tails, trends, cost vs quality)",
    "compare": "measures Compare pairs per question, with bootstrap intervals",
    # figures (run-level numbers)
    "runs": "the Runs table's headline figures, with deltas to the previous run",
    "check": "figures `rageval check` shows when no thresholds name any",
    "report": "rows of the HTML report's summary table",
    "tails": "measures whose distribution and bottom tenth the Tails views offer first",
}

# Which views show which built-in entries by default; everything else is still offered
# in pickers (trend, range filters, thresholds) through its measure group.
_MEASURE_GROUPS: Mapping[str, frozenset[str]] = {
    "recall_at_5": frozenset({"compare", "tails"}),
    "recall_at_20": frozenset({"compare"}),
    "mrr": frozenset({"compare"}),
    "ndcg_at_10": frozenset({"compare", "tails"}),
    "span_recall_at_5": frozenset({"compare"}),
    "span_precision_at_5": frozenset({"compare"}),
    "span_iou_at_5": frozenset({"compare"}),
    "faithfulness": frozenset({"compare", "tails"}),
    "answer_correctness": frozenset({"compare", "tails"}),
}
_FIGURE_GROUPS: Mapping[str, frozenset[str]] = {
    "n_questions": frozenset({"report"}),
    "recall_at_5": frozenset({"runs", "check", "report"}),
    "recall_at_20": frozenset({"check", "report"}),
    "recall_gap": frozenset({"report"}),
    "mrr": frozenset({"runs", "check", "report"}),
    "ndcg_at_10": frozenset({"report"}),
    "faithfulness": frozenset({"runs", "check", "report"}),
    "faithfulness_p10": frozenset({"runs", "check", "report"}),
    "answer_correctness": frozenset({"runs", "check", "report"}),
    "answer_correctness_p10": frozenset({"runs", "report"}),
    "missed_refusal_rate": frozenset({"runs", "report"}),
    "false_refusal_rate": frozenset({"runs", "report"}),
    "total_ms_p50": frozenset({"report"}),
    "total_ms_p95": frozenset({"runs", "report"}),
    "total_cost_per_question": frozenset({"runs", "report"}),
    "cost_usd_total": frozenset({"report"}),
}
DECLARED_GROUPS = frozenset({"generation", "quality", "compare", "tails"})
DECLARED_FIGURE_GROUPS = frozenset({"runs", "report", "check"})
"""A declared measure is shown like faithfulness: on the trend, tails and Compare, and
its mean in the Runs table and the report."""


def _measure(name: str, label: str, direction: Direction, unit: Unit, *groups: str) -> Metric:
    return Metric(
        name, label, direction, unit, groups=frozenset(groups) | _MEASURE_GROUPS.get(name, set())
    )


def _retrieval_measures(ks: Iterable[int]) -> list[Metric]:
    out = [
        _measure(f"{stem}_at_{k}", f"{stem}@{k}", "higher", "unit", "retrieval", "quality")
        for k in ks
        for stem in ("recall", "precision", "hit")
    ]
    out.append(_measure("mrr", "MRR", "higher", "unit", "retrieval", "quality"))
    out.append(
        _measure(f"ndcg_at_{NDCG_K}", f"nDCG@{NDCG_K}", "higher", "unit", "retrieval", "quality")
    )
    return out


SPAN_STEMS: Mapping[str, str] = {
    "span_recall": "span recall",
    "span_precision": "span precision",
    "span_iou": "span IoU",
}
SPAN_DEFINITIONS: Mapping[str, str] = {
    "span_recall": "share of the gold spans' characters that the top-k chunks cover",
    "span_precision": "share of the top-k chunks' characters that lie in a gold span",
    "span_iou": "characters in both the top-k chunks and the gold spans / in either",
}
"""One-line definitions (docs/metrics.md#span-metrics has the formulas and edge cases)."""


def _span_measures(ks: Iterable[int]) -> list[Metric]:
    return [
        _measure(f"{stem}_at_{k}", f"{label}@{k}", "higher", "unit", "retrieval", "quality")
        for k in ks
        for stem, label in SPAN_STEMS.items()
    ]


def span_columns(ks: Iterable[int] = DEFAULT_KS) -> list[str]:
    """Names of the per-k span columns (`span_recall_at_5`, …), in schema order."""
    return [m.name for m in _span_measures(ks)]


def definition(name: str) -> str | None:
    """The one-line definition of a span measure or figure (`span_iou_at_5_p10` too)."""
    stem = re.sub(r"_at_\d+(_p10)?$", "", name)
    return SPAN_DEFINITIONS.get(stem)


def retrieval_columns(ks: Iterable[int] = DEFAULT_KS) -> list[str]:
    """Names of the per-k retrieval columns in schema order, then `mrr` and nDCG."""
    return [m.name for m in _retrieval_measures(ks)]


LATENCY_COLUMNS: tuple[str, ...] = ("retrieval_ms", "generation_ms", "ttft_ms", "total_ms")
COST_COLUMNS: tuple[str, ...] = ("cost_usd", "judge_cost_usd")
_STAGE = {
    "retrieval_ms": "retrieval latency",
    "generation_ms": "generation latency",
    "ttft_ms": "time to first token",
    "total_ms": "latency",
}
_COST = {"cost_usd": "pipeline cost", "judge_cost_usd": "judge cost"}
ANSWERABLE_ONLY: frozenset[str] = frozenset({"answer_correctness"})
"""Measures whose run-level figures (mean, p10, share below threshold, compare deltas,
distribution, bottom tenth) cover answerable questions only. On an unanswerable question
`answer_correctness` is refusal credit (1.0 declined, 0.0 answered): mixed into the mean it
let runs with different answers show the same correctness. That credit is reported as
`missed_refusal_rate` instead."""


def _builtin_measures() -> list[Metric]:
    return [
        *_retrieval_measures(DEFAULT_KS),
        *_span_measures(DEFAULT_KS),
        _measure("faithfulness", "faithfulness", "higher", "unit", "generation", "quality"),
        _measure(
            "answer_correctness", "answer correctness", "higher", "unit", "generation", "quality"
        ),
        # per-question counts of what did not match the dataset (SPEC §13); no figures
        _measure("n_unplaced", "chunks not placed in a document", "lower", "count"),
        _measure("n_unknown_ids", "retrieved ids not in the corpus", "lower", "count"),
        *(_measure(c, f"{_STAGE[c]} (ms)", "lower", "ms", "latency") for c in LATENCY_COLUMNS),
        *(_measure(c, f"{_COST[c]} ($)", "lower", "usd", "cost") for c in COST_COLUMNS),
    ]


def _figure(
    name: str, label: str, direction: Direction, unit: Unit, aggregate: str, of: str | None = None
) -> Metric:
    return Metric(
        name, label, direction, unit, aggregate, of, _FIGURE_GROUPS.get(name, frozenset())
    )


def _figures_of(m: Metric) -> list[Metric]:
    """The run-level figures of one measure (what `summarize_run` computes for it)."""
    if "quality" in m.groups:
        # a figure over answerable questions only says so; one question's score does not
        base, scope = m.label, ""
        if m.name in ANSWERABLE_ONLY:
            base, scope = "correctness", " (answerable)"
        figs = [
            _figure(m.name, f"{base}{scope}", m.direction, m.unit, "mean", m.name),
            _figure(f"{m.name}_p10", f"{base} p10{scope}", m.direction, m.unit, "p10", m.name),
        ]
        figs = [replace(f, groups=f.groups | {"quality"}) for f in figs]
    elif m.unit == "ms":
        stem = m.label.removesuffix(" (ms)")
        figs = [
            _figure(f"{m.name}_{q}", f"{q} {stem} (ms)", "lower", "ms", q, m.name)
            for q in ("p50", "p95")
        ]
    elif m.unit == "usd":
        stem = m.label.removesuffix(" ($)")
        figs = [
            _figure(
                f"{m.name}_per_question",
                f"{stem} / question ($)",
                "lower",
                "usd",
                "per_question",
                m.name,
            ),
            _figure(f"{m.name}_total", f"{stem}, total ($)", "lower", "usd", "total", m.name),
        ]
    else:
        return []
    if m.declared:
        figs = [
            replace(
                f,
                declared=True,
                range=m.range,
                groups=(DECLARED_FIGURE_GROUPS if f.aggregate == "mean" else frozenset())
                | {"quality"},
            )
            for f in figs
        ]
    return figs


def _run_figures() -> list[Metric]:
    """Figures made of several columns or counts (not one measure's aggregate)."""
    return [
        _figure("n_questions", "questions", "higher", "count", "count"),
        _figure("n_answerable", "answerable questions", "higher", "count", "count"),
        _figure("n_unanswerable", "unanswerable questions", "higher", "count", "count"),
        _figure("n_errors", "pipeline errors", "lower", "count", "count"),
        _figure(
            "faithfulness_below_threshold",
            "share unfaithful",
            "lower",
            "unit",
            "rate",
            "faithfulness",
        ),
        _figure(
            "answer_correctness_below_threshold",
            "share incorrect",
            "lower",
            "unit",
            "rate",
            "answer_correctness",
        ),
        _figure("recall_gap", "recall@5 − recall@20", "higher", "unit", "gap"),
        _figure("missed_refusal_rate", "missed refusals", "lower", "unit", "rate"),
        _figure("false_refusal_rate", "false refusals", "lower", "unit", "rate"),
        _figure("total_cost_per_question", "cost / question ($)", "lower", "usd", "per_question"),
        *(
            _figure(
                f"failure_{ft}",
                ft.replace("_", " "),
                "higher" if ft == "ok" else "lower",
                "count",
                "count",
            )
            for ft in FAILURE_TYPES
        ),
    ]


@dataclass(frozen=True)
class Catalogue:
    """Measures and figures by name; `with_declared` adds a run's own measures."""

    measures: Mapping[str, Metric]
    figures: Mapping[str, Metric]
    declared: tuple[DeclaredMetric, ...] = field(default=())

    def metric(self, name: str) -> Metric | None:
        """The figure or measure called `name` (figures first: `faithfulness` is both)."""
        return self.figures.get(name) or self.measures.get(name)

    def label(self, name: str) -> str:
        m = self.metric(name)
        return m.label if m else name.replace("_", " ")

    def bounds(self, name: str) -> tuple[float, float]:
        """The values a measure can take, for a range filter: its declared `[low, high]`,
        else 0..1 (a score)."""
        m = self.metric(name)
        return m.range if m and m.range else (0.0, 1.0)

    def question_label(self, name: str) -> str:
        """A per-question column's display name: one question's answer_correctness is its
        own score (refusal credit on an unanswerable question), so no `(answerable)`."""
        m = self.measures.get(name)
        return m.label if m else self.label(name)

    def lower_is_better(self, name: str) -> bool:
        m = self.metric(name)
        return bool(m and m.lower_is_better)

    def fmt(self, name: str, value: object, missing: str = "–") -> str:
        m = self.metric(name)
        return (
            m.fmt(value, missing)
            if m
            else Metric(name, name, "higher", "number").fmt(value, missing)
        )

    def measure_names(self, group: str | None = None) -> tuple[str, ...]:
        return tuple(n for n, m in self.measures.items() if group is None or group in m.groups)

    def figure_names(self, group: str | None = None) -> tuple[str, ...]:
        """Figures in `group` (all when None); the headline ones in `_FIGURE_GROUPS` order."""
        names = [n for n, m in self.figures.items() if group is None or group in m.groups]
        rank = {n: i for i, n in enumerate(_FIGURE_GROUPS)}
        return tuple(sorted(names, key=lambda n: rank.get(n, len(rank))))

    def __iter__(self) -> Iterator[Metric]:
        yield from self.measures.values()
        yield from self.figures.values()

    def with_declared(self, declared: Iterable[DeclaredMetric]) -> Catalogue:
        """This catalogue plus the given declarations (already validated by `parse_declared`).

        A declared measure gets what a built-in quality measure gets: a mean and a p10,
        offered on the trend, tails, compare and check. Declarations of the same name from
        several runs must agree on direction; the first label wins.
        """
        measures = dict(self.measures)
        figures = dict(self.figures)
        kept = list(self.declared)
        for d in declared:
            old = measures.get(d.name)
            if old is not None:
                if old.declared and old.direction != d.direction:
                    raise ConfigError(
                        f"metric {d.name!r} is declared both higher- and lower-is-better"
                    )
                continue
            m = Metric(
                d.name,
                d.label,
                d.direction,
                d.unit,
                groups=DECLARED_GROUPS,
                declared=True,
                range=d.range,
            )
            measures[d.name] = m
            for f in _figures_of(m):
                figures[f.name] = f
            kept.append(d)
        return Catalogue(measures, figures, tuple(kept))

    @property
    def declared_names(self) -> tuple[str, ...]:
        """Names of the declared measures (columns of some runs' files, not of every run)."""
        return tuple(d.name for d in self.declared)

    def with_runs(
        self, runs: Iterable[tuple[str, Iterable[DeclaredMetric]]]
    ) -> tuple[Catalogue, tuple[tuple[str, str], ...]]:
        """This catalogue plus the declarations of several runs, `(run_id, declared)` each.

        Never raises: a declaration whose direction contradicts an earlier run's is left
        out and comes back as a `(run_id, message)` problem (the first run wins).
        """
        cat, problems = self, []
        for run_id, declared in runs:
            for d in declared:
                try:
                    cat = cat.with_declared((d,))
                except ConfigError as exc:
                    problems.append((run_id, f"{exc.message}; the first run's direction is used"))
        return cat, tuple(problems)


def _builtin() -> Catalogue:
    measures = {m.name: m for m in _builtin_measures()}
    figures: dict[str, Metric] = {}
    for m in measures.values():
        figures.update((f.name, f) for f in _figures_of(m))
    figures.update((f.name, f) for f in _run_figures())
    return Catalogue(measures, figures)


BUILTIN = _builtin()
"""The catalogue of what every run has; runs with `metrics:` extend it (`with_declared`)."""


def parse_declared(raw: object, source: str) -> tuple[DeclaredMetric, ...]:
    """Validate a manifest's `metrics:` mapping; ConfigError naming `source` and the entry.

    A name must match `^[a-z][a-z0-9_]{0,63}$` (it becomes a quoted SQL identifier, so it
    is checked here and never taken as SQL text) and must not shadow a built-in measure or
    figure.
    """
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: metrics must be a mapping of name -> {{label, direction}}")
    out = []
    for name, spec in raw.items():
        where = f"{source}: metrics.{str(name)[:64]!r}"
        if not isinstance(name, str) or not DECLARED_NAME_RE.fullmatch(name):
            raise ConfigError(f"{where}: a name is lowercase letters, digits and _ (<= 64)")
        if BUILTIN.metric(name) is not None or name.endswith("_p10"):
            raise ConfigError(f"{where}: shadows a built-in figure; choose another name")
        spec = {} if spec is None else spec
        if not isinstance(spec, Mapping):
            raise ConfigError(f"{where}: expected a mapping with label, direction, range")
        out.append(_declared(name, spec, where))
    return tuple(out)


def declared_to_spec(d: DeclaredMetric) -> dict[str, Any]:
    """The `metrics:` entry `parse_declared` reads back as `d` (manifests store this)."""
    rng: Any = d.unit
    if d.range is not None and d.unit == "number":
        rng = list(d.range)
    return {"label": d.label, "direction": d.direction, "range": rng}


def _declared(name: str, spec: Mapping[str, Any], where: str) -> DeclaredMetric:
    label = spec.get("label", name.replace("_", " "))
    if not isinstance(label, str) or not label.strip() or len(label) > 80:
        raise ConfigError(f"{where}: label must be text of at most 80 characters")
    direction = spec.get("direction", "higher")
    if direction not in ("higher", "lower"):
        raise ConfigError(f"{where}: direction must be 'higher' or 'lower'")
    rng = spec.get("range", "unit")
    if isinstance(rng, str):
        if rng not in UNITS:
            raise ConfigError(f"{where}: range must be one of {', '.join(UNITS)} or [low, high]")
        unit, bounds = rng, ((0.0, 1.0) if rng == "unit" else None)
    elif (
        isinstance(rng, list | tuple)
        and len(rng) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in rng)
        and all(math.isfinite(v) for v in rng)
        and rng[0] < rng[1]
    ):
        bounds = (float(rng[0]), float(rng[1]))
        unit = "unit" if bounds == (0.0, 1.0) else "number"
    else:
        raise ConfigError(f"{where}: range must be one of {', '.join(UNITS)} or [low, high]")
    return DeclaredMetric(name, label.strip(), direction, unit, bounds)
