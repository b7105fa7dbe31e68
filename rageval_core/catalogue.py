"""The metric catalogue (docs/metrics.md): every figure rageval shows, described once.

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

import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from rageval_core import numbers
from rageval_core.errors import ConfigError
from rageval_core.models import FAILURE_TYPES, DeclaredMetric, Direction, Unit
from rageval_core.numbers import MISSING
from rageval_core.thresholds import DEFAULT_THRESHOLDS

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10, 20)
"""Cut-offs whose recall/precision/hit every run stores (docs/pipeline.md)."""
NDCG_K = 10
"""The one nDCG cut-off stored per question (column `ndcg_at_10`)."""
TAIL_QUANTILE = 0.1
"""The tail every `_p10` figure and bottom-tenth view is about."""

DECLARED_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
UNITS: tuple[str, ...] = ("unit", "ms", "usd", "count", "number")
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
DEFINITIONS_PATH = "definitions"
"""The dashboard's page of definitions (`dashboard/app_pages/definitions.py`), one section
each. Help texts link to it relative to the app: no address to configure, so a link works
offline, under any base URL path, and opens its section."""


# anchors of the sections (`SECTIONS`), as docs/metrics.md's headings make them
_RETRIEVAL, _GENERATION, _FAILURES = (
    "retrieval-per-answerable-question",
    "generation-per-question",
    "one-failure-type-per-question",
)
_PER_RUN, _SPEED, _DECLARED = "per-run", "latency-and-cost", "declared-metrics"
_SPANS = "span-metrics"
_VERDICTS = "reference-free-verdicts"
READING_A_CHANGE = "reading-a-change"


@dataclass(frozen=True)
class Section:
    """One section of the definitions: its anchor, and its title, the heading of
    docs/metrics.md that holds its formulas and edge cases (a test keeps both in step)."""

    anchor: str
    title: str
    lead: str

    @property
    def link(self) -> str:
        """Its address, relative to the app (Markdown links and `st.page_link` take it)."""
        return f"{DEFINITIONS_PATH}#{self.anchor}"

    @property
    def source(self) -> str:
        """Where it is written out in the repository, for what cannot link to the dashboard
        (the HTML report, the command line)."""
        return f'docs/metrics.md, "{self.title}"'


SECTIONS: Mapping[str, Section] = {
    s.anchor: s
    for s in (
        Section(
            _RETRIEVAL,
            "Retrieval, per answerable question",
            "Scores of the ranked list of retrieved chunks against the question's gold "
            "chunks, per cut-off k. Questions with no gold chunks have none.",
        ),
        Section(
            _SPANS,
            "Span metrics",
            "Retrieval scored on character ranges of the dataset's documents, for a dataset "
            "that gives gold spans: chunkings of any size compare on the same gold.",
        ),
        Section(
            _GENERATION,
            "Generation, per question",
            "Scores of the answer, from the judge's verdicts on its claims and from its "
            "reference answer.",
        ),
        Section(
            _VERDICTS,
            "Reference-free verdicts",
            "The judge's verdicts on the retrieved context and the answer that need no gold; "
            "empty where the judge was not asked.",
        ),
        Section(
            _FAILURES,
            "One failure type per question",
            "Each question gets the first failure type that applies, so the counts add up "
            "to the run's questions.",
        ),
        Section(
            _PER_RUN,
            "Per run",
            "Run-level figures: means and 10th percentiles of the per-question scores, "
            "shares, rates and counts. Correctness is over answerable questions only.",
        ),
        Section(
            _SPEED,
            "Latency and cost",
            "Per-question timings and costs; lower is better for all of them. Per run they "
            "become p50 / p95 and a mean per question and a total.",
        ),
        Section(
            READING_A_CHANGE,
            "Reading a change",
            "A change between two runs is better or worse only beyond its noise: a mean "
            "score whose 95% paired bootstrap interval includes 0 is unchanged, and so is a "
            "latency figure within the spread of earlier runs of the same config and dataset "
            "version. Other figures are judged by their sign. Unchanged is shown neutral, "
            "with the delta still written.",
        ),
        Section(
            _DECLARED,
            "Declared metrics",
            "Per-question scores a run brings itself, declared in its manifest with a label, "
            "a direction and a range; shown like faithfulness.",
        ),
    )
}
"""The sections help texts link to, in the order of docs/metrics.md."""


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

    def verdict(
        self,
        delta: object,
        interval: tuple[float, float] | None = None,
        noise: float | None = None,
    ) -> str | None:
        """`better`, `worse` or `same` for a change of `delta`; None when there is none.

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


GROUPS: Mapping[str, str] = {
    # measures (per-question columns)
    "retrieval": "measures of the ranked list (Retrieval page)",
    "generation": "measures of the answer (faithfulness, correctness, relevancy, declared ones)",
    "context": "the judge's verdicts of the retrieved context, which need no retrieval gold",
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
    "context_relevance": frozenset({"compare", "tails"}),
    "context_precision": frozenset({"compare"}),
    "answer_relevancy": frozenset({"compare", "tails"}),
    "context_recall": frozenset({"compare"}),
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
    "span_recall_at_5": frozenset({"check", "report"}),
    "span_iou_at_5": frozenset({"check", "report"}),
    "context_relevance": frozenset({"runs", "check", "report"}),
    "context_precision": frozenset({"report"}),
    "answer_relevancy": frozenset({"runs", "check", "report"}),
    "context_recall": frozenset({"runs", "check", "report"}),
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
    return list(_names(_span_measures, tuple(ks)))


def retrieval_columns(ks: Iterable[int] = DEFAULT_KS) -> list[str]:
    """Names of the per-k retrieval columns in schema order, then `mrr` and nDCG."""
    return list(_names(_retrieval_measures, tuple(ks)))


@functools.lru_cache(maxsize=64)
def _names(
    measures: Callable[[Iterable[int]], list[Metric]], ks: tuple[int, ...]
) -> tuple[str, ...]:
    """The column names of `measures(ks)`, kept: every row of a run asks for the same ks."""
    return tuple(m.name for m in measures(ks))


LATENCY_COLUMNS: tuple[str, ...] = ("retrieval_ms", "generation_ms", "ttft_ms", "total_ms")
COST_COLUMNS: tuple[str, ...] = ("cost_usd", "judge_cost_usd")
_STAGE = {
    "retrieval_ms": "retrieval latency",
    "generation_ms": "generation latency",
    "ttft_ms": "time to first token",
    "total_ms": "latency",
}
_COST = {"cost_usd": "pipeline cost", "judge_cost_usd": "judge cost"}
TOTAL_COST_COUNT = "n_total_cost"
"""The questions `total_cost_per_question` covers: the pipeline's cost known."""
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
        # the reference-free verdicts (rows.JUDGE_FIELDS): NULL where the judge was not asked
        *(
            _measure(name, label, "higher", "unit", group, "quality")
            for name, label, group in (
                ("context_relevance", "context relevance", "context"),
                ("context_precision", "context precision", "context"),
                ("answer_relevancy", "answer relevancy", "generation"),
                ("context_recall", "context recall", "context"),
            )
        ),
        # per-question counts of what did not match the dataset (docs/metrics.md); no figures
        _measure("n_unplaced", "chunks not placed in a document", "lower", "count"),
        _measure("n_unknown_ids", "retrieved ids not in the corpus", "lower", "count"),
        _measure(
            "n_offsets_mismatched", "chunks whose offsets missed their text", "lower", "count"
        ),
        _measure(
            "n_unknown_doc_placed", "chunks of unknown documents placed by text", "lower", "count"
        ),
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


FAILURE_GROUPS: Mapping[str, str] = {
    "retrieval_miss": "retrieval",
    "ranking_miss": "retrieval",
    "unfaithful": "generation",
    "incorrect": "generation",
    "missed_refusal": "abstention",
    "false_refusal": "abstention",
    "error": "error",
    "ok": "ok",
}
"""The stage each failure type blames: the Diagnose chart and the report group by it."""
GROUP_ORDER: tuple[str, ...] = ("retrieval", "generation", "abstention", "error", "ok")


def failure_label(failure_type: str) -> str:
    """A failure type as people read it (`retrieval miss`): the one spelling of every
    page, chart and the report."""
    return failure_type.replace("_", " ")


def failure_rank(failure_type: str) -> tuple[int, int]:
    """Where a failure type is listed: by its group (`GROUP_ORDER`), then in the order of
    `FAILURE_TYPES` within it. An unknown type (a damaged file) goes last."""
    group = FAILURE_GROUPS.get(failure_type)
    if group is None:
        return (len(GROUP_ORDER), 0)
    return (GROUP_ORDER.index(group), FAILURE_TYPES.index(failure_type))


def _run_figures() -> list[Metric]:
    """Figures made of several columns or counts (not one measure's aggregate)."""
    return [
        _figure("n_questions", "questions", "higher", "count", "count"),
        _figure("n_answerable", "answerable questions", "higher", "count", "count"),
        _figure("n_unanswerable", "unanswerable questions", "higher", "count", "count"),
        _figure("n_reference_free", "reference-free questions", "higher", "count", "count"),
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
            _figure(f"n_{c}", f"questions with a {what}", "higher", "count", "count")
            for c, what in {**_STAGE, **_COST}.items()
        ),
        _figure(TOTAL_COST_COUNT, "questions with a cost", "higher", "count", "count"),
        *(
            _figure(
                f"failure_{ft}",
                failure_label(ft),
                "higher" if ft == "ok" else "lower",
                "count",
                "count",
            )
            for ft in FAILURE_TYPES
        ),
    ]


# ---------------------------------------------------------------------------- definitions


def _stem_definition(name: str) -> tuple[str, str] | None:
    """The definition and docs section of a per-k measure (`recall_at_5`,
    `span_iou_at_5`), else None."""
    stem, _, k = name.rpartition("_at_")
    if not k.isdigit():
        return None
    if stem in SPAN_DEFINITIONS:
        return SPAN_DEFINITIONS[stem], _SPANS
    says = {
        "recall": f"share of the question's gold chunks found in the top {k} retrieved "
        "(1.0 = all found)",
        "precision": f"share of the top {k} retrieved chunks that are gold",
        "hit": f"1 when a gold chunk is in the top {k}, else 0: its mean is the share of "
        "questions with one",
        "ndcg": f"how close the top {k}'s order is to the ideal (1.0 = gold chunks first)",
    }
    return (says[stem], _RETRIEVAL) if stem in says else None


DEFINITIONS: Mapping[str, tuple[str, str]] = {
    # measures: (one line, section of docs/metrics.md)
    "mrr": ("1 / rank of the first gold chunk retrieved (1.0 = a gold chunk first)", _RETRIEVAL),
    "faithfulness": (
        "share of the answer's claims the judge found supported by the retrieved chunks "
        "(1.0 = fully grounded)",
        _GENERATION,
    ),
    "answer_correctness": (
        "how well the answer matches its reference (1.0 = contains it); on an "
        "unanswerable question, 1.0 for declining",
        _GENERATION,
    ),
    "context_relevance": (
        "share of the top-k retrieved chunks the judge found relevant to the question "
        "(no gold needed)",
        _VERDICTS,
    ),
    "context_precision": (
        "average precision of the judge's chunk verdicts in rank order (1.0 = every "
        "relevant chunk ranked above every irrelevant one)",
        _VERDICTS,
    ),
    "answer_relevancy": (
        "how well the answer addresses the question, per the judge (NULL for a refusal)",
        _VERDICTS,
    ),
    "context_recall": (
        "share of the reference answer's statements the judge found in the retrieved chunks",
        _VERDICTS,
    ),
    "retrieval_ms": ("time the pipeline spent retrieving", _SPEED),
    "generation_ms": ("time the pipeline spent writing the answer", _SPEED),
    "ttft_ms": ("time until the answer's first token", _SPEED),
    "total_ms": ("end-to-end time to answer one question", _SPEED),
    "cost_usd": ("what the pipeline's tokens cost at the config's prices", _SPEED),
    "judge_cost_usd": ("what the judge's tokens cost at its prices", _SPEED),
    # figures made of several columns or counts
    "n_questions": ("questions in the run", _PER_RUN),
    "n_answerable": ("questions that have a gold answer", _PER_RUN),
    "n_unanswerable": ("questions the pipeline should decline", _PER_RUN),
    "n_reference_free": (
        "questions whose answerability is unknown: no reference answer and no gold (or an "
        "import that gave no gold)",
        _PER_RUN,
    ),
    "n_errors": ("questions on which the pipeline raised", _PER_RUN),
    "n_unplaced": (
        "retrieved chunks that could not be placed in a dataset document (counted not relevant)",
        _SPANS,
    ),
    "n_unknown_ids": (
        "retrieved chunk ids that are not in the dataset's corpus: is the pipeline chunking "
        "differently? Use gold_spans",
        _SPANS,
    ),
    "n_offsets_mismatched": (
        "retrieved chunks whose offsets did not hold their text (a sentence window records "
        "the window): placed by their text instead",
        _SPANS,
    ),
    "n_unknown_doc_placed": (
        "retrieved chunks naming a document id the dataset does not have (a path as id), "
        "placed by their text anyway",
        _SPANS,
    ),
    "faithfulness_below_threshold": (
        "share of questions whose faithfulness is below the run's failure_thresholds."
        f"faithfulness_min ({DEFAULT_THRESHOLDS.faithfulness_min:g} unless set)",
        _PER_RUN,
    ),
    "answer_correctness_below_threshold": (
        "share of answerable questions whose correctness is below the run's "
        f"failure_thresholds.correctness_min ({DEFAULT_THRESHOLDS.correctness_min:g} unless set)",
        _PER_RUN,
    ),
    "recall_gap": (
        "mean recall@5 − recall@20: below 0 when gold chunks are found but ranked 6–20, "
        "which a reranker can fix (0 = nothing to gain)",
        _PER_RUN,
    ),
    "missed_refusal_rate": (
        "share of unanswerable questions the pipeline answered anyway (0 = declined them all)",
        _PER_RUN,
    ),
    "false_refusal_rate": (
        "share of answerable questions the pipeline declined (0 = answered them all)",
        _PER_RUN,
    ),
    "total_cost_per_question": (
        "pipeline plus judge cost, mean over the questions whose pipeline cost is known (× 1M: "
        "the cost of a million questions); – when none is",
        _PER_RUN,
    ),
    **{
        f"n_{c}": (f"questions whose {what} is known: the ones its figures cover", _PER_RUN)
        for c, what in {**_STAGE, **_COST}.items()
    },
    TOTAL_COST_COUNT: (
        "questions whose pipeline cost is known: the ones cost / question covers",
        _PER_RUN,
    ),
}
"""One line per built-in measure and per figure not derived from one measure. A new metric
needs its line here (or in `_stem_definition`); `test_every_metric_has_a_definition`
fails until it has one."""

_AGGREGATE = {
    "mean": "mean over the questions with a value of: {}",
    "p10": "10th percentile over the questions, the tail a mean hides, of: {}",
    "p50": "median over the questions of: {}",
    "p95": "95th percentile over the questions (1 in 20 is slower) of: {}",
    "per_question": "mean per question of: {}",
    "total": "sum over the run's questions of: {}",
}


def _define(m: Metric, measures: Mapping[str, Metric]) -> Metric:
    """`m` with its definition and docs section: its own line, a per-k stem's, a failure
    type's, or its measure's line under the aggregate's words."""
    if not m.is_measure and m.of in measures and m.aggregate in _AGGREGATE:
        base = _define(measures[m.of], measures)
        scope = " (answerable questions only)" if m.answerable_only else ""
        text = _AGGREGATE[m.aggregate].format(base.definition) + scope
        doc = _DECLARED if m.declared else _PER_RUN
    elif m.name in DEFINITIONS:
        text, doc = DEFINITIONS[m.name]
    elif stem := _stem_definition(m.name):
        text, doc = stem
    elif m.name.startswith("failure_") and m.name[8:] in FAILURE_TYPES:
        ft = failure_label(m.name[8:])
        text = f"questions whose failure is {ft}"
        if ft == "ok":
            text = "questions that passed every check"
        doc = _FAILURES
    elif m.declared and m.is_measure:
        # not its label: that is the run's text, and help texts are Markdown
        text, doc = "a per-question score the run declares in its manifest", _DECLARED
    else:
        return m
    return replace(m, definition=text, doc=doc)


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
            measures[d.name] = m = _define(m, measures)
            for f in _figures_of(m):
                figures[f.name] = _define(f, measures)
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
    measures = {n: _define(m, measures) for n, m in measures.items()}
    figures: dict[str, Metric] = {}
    for m in measures.values():
        figures.update((f.name, f) for f in _figures_of(m))
    figures.update((f.name, f) for f in _run_figures())
    return Catalogue(measures, {n: _define(f, measures) for n, f in figures.items()})


BUILTIN = _builtin()
"""The catalogue of what every run has; runs with `metrics:` extend it (`with_declared`)."""

QUESTION_METRICS: tuple[str, ...] = BUILTIN.measure_names()
"""Per-question numeric columns a caller may name (ranges, distributions, bottom-X%).
Here, not in the query layer, so the URL contract (links.py) validates against it without
importing DuckDB."""

SORT_KEYS: tuple[str, ...] = ("severity", "question_id", "failure_type", *QUESTION_METRICS)
"""Accepted `sort` values of `question_rows`; `severity` = failure type order, then
answer correctness (worst first)."""


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
