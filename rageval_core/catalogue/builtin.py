"""`Catalogue`, metrics by name, and `BUILTIN`, the one of what every run has; the
whitelists of question columns and sort keys taken from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from rageval_core.catalogue.definitions import define
from rageval_core.catalogue.measures import (
    DECLARED_GROUPS,
    FIGURE_GROUPS,
    builtin_measures,
    figures_of,
    run_figures,
)
from rageval_core.catalogue.metric import Metric
from rageval_core.errors import ConfigError
from rageval_core.models import DeclaredMetric


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

    def is_score(self, name: str) -> bool:
        m = self.metric(name)
        return bool(m and m.is_score)

    def entry(self, name: str) -> Metric:
        """The metric called `name`, or a plain number of that name (a column nobody
        described: formatted as a number, with no definition)."""
        return self.metric(name) or Metric(name, name.replace("_", " "), "higher", "number")

    def fmt(self, name: str, value: object) -> str:
        return self.entry(name).fmt(value)

    def fmt_delta(self, name: str, delta: object) -> str:
        return self.entry(name).fmt_delta(delta)

    def help(self, name: str) -> str | None:
        """The help text of `name`, None for a column the catalogue does not know."""
        m = self.metric(name)
        return m.help if m else None

    def in_section(self, anchor: str) -> tuple[Metric, ...]:
        """Its measures and figures that the section `anchor` defines, measures first."""
        return tuple(m for m in self if m.doc == anchor)

    def measure_names(self, group: str | None = None) -> tuple[str, ...]:
        return tuple(n for n, m in self.measures.items() if group is None or group in m.groups)

    def figure_names(self, group: str | None = None) -> tuple[str, ...]:
        """Figures in `group` (all when None); the headline ones in `FIGURE_GROUPS` order."""
        names = [n for n, m in self.figures.items() if group is None or group in m.groups]
        rank = {n: i for i, n in enumerate(FIGURE_GROUPS)}
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
            measures[d.name] = m = define(m, measures)
            for f in figures_of(m):
                figures[f.name] = define(f, measures)
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
    measures = {m.name: m for m in builtin_measures()}
    measures = {n: define(m, measures) for n, m in measures.items()}
    figures: dict[str, Metric] = {}
    for m in measures.values():
        figures.update((f.name, f) for f in figures_of(m))
    figures.update((f.name, f) for f in run_figures())
    return Catalogue(measures, {n: define(f, measures) for n, f in figures.items()})


BUILTIN = _builtin()
"""The catalogue of what every run has; runs with `metrics:` extend it (`with_declared`)."""

QUESTION_METRICS: tuple[str, ...] = BUILTIN.measure_names()
"""Per-question numeric columns a caller may name (ranges, distributions, bottom-X%).
Here, not in the query layer, so the URL contract (links.py) validates against it without
importing DuckDB."""

SORT_KEYS: tuple[str, ...] = ("severity", "question_id", "failure_type", *QUESTION_METRICS)
"""Accepted `sort` values of `question_rows`; `severity` = failure type order, then
answer correctness (worst first)."""

TABLE_FIRST: tuple[str, ...] = ("question", "failure_type", "faithfulness", "n_unsupported_claims")
"""Diagnose's first columns after the question id: what a failing question is opened for
(its failure, its faithfulness and unsupported claims), then the retrieval figure that
explains a miss (`recall_at_5`, or `span_recall_at_5` on a run scored by spans)."""

TABLE_COLUMNS: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
            *TABLE_FIRST,
            "recall_at_5",
            "span_recall_at_5",
            "answer_correctness",
            "context_relevance",
            "answer_relevancy",
            "context_recall",
            "mrr",
            "answerable",
            "tags",
            "total_ms",
            "cost_usd",
            *QUESTION_METRICS,
        )
    )
)
"""Every column Diagnose's column chooser offers (the URL's `cols` names them), in order."""
