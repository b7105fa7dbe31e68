"""The built-in measures (per-question columns) and figures (run-level numbers), and the
views (groups) that offer each.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from rageval_core.catalogue.failures import failure_label
from rageval_core.catalogue.metric import ANSWERABLE_ONLY, Metric
from rageval_core.models import FAILURE_TYPES, Direction, Unit

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10, 20)
"""Cut-offs whose recall/precision/hit every run stores (docs/pipeline.md)."""
NDCG_K = 10
"""The one nDCG cut-off stored per question (column `ndcg_at_10`)."""
TAIL_QUANTILE = 0.1
"""The tail every `_p10` figure and bottom-tenth view is about."""


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
    "chunked": "measures that count chunks: the same text cut into other chunks moves them "
    "(compare and check say when two runs cut differently)",
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
    "context_relevance": frozenset({"compare", "tails", "chunked"}),
    "context_precision": frozenset({"compare", "chunked"}),
    "context_relevance_chars": frozenset({"compare"}),
    "context_precision_chars": frozenset({"compare"}),
    "answer_relevancy": frozenset({"compare", "tails"}),
    "context_recall": frozenset({"compare"}),
}
FIGURE_GROUPS: Mapping[str, frozenset[str]] = {
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
    "span_precision_at_5": frozenset({"report"}),
    "span_iou_at_5": frozenset({"check", "report"}),
    "context_relevance": frozenset({"runs", "check", "report"}),
    "context_precision": frozenset({"report"}),
    "context_relevance_chars": frozenset({"check", "report"}),
    "context_precision_chars": frozenset({"report"}),
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
    ranked = ("retrieval", "quality", "chunked")
    out = [
        _measure(f"{stem}_at_{k}", f"{stem}@{k}", "higher", "unit", *ranked)
        for k in ks
        for stem in ("recall", "precision", "hit")
    ]
    out.append(_measure("mrr", "MRR", "higher", "unit", *ranked))
    out.append(_measure(f"ndcg_at_{NDCG_K}", f"nDCG@{NDCG_K}", "higher", "unit", *ranked))
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
        _measure(
            f"{stem}_at_{k}", f"{label}@{k}", "higher", "unit", "retrieval", "quality", "chunked"
        )
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
STAGE_LABELS = {
    "retrieval_ms": "retrieval latency",
    "generation_ms": "generation latency",
    "ttft_ms": "time to first token",
    "total_ms": "latency",
}
COST_LABELS = {"cost_usd": "pipeline cost", "judge_cost_usd": "judge cost"}
TOTAL_COST_COUNT = "n_total_cost"
"""The questions `total_cost_per_question` covers: the pipeline's cost known."""


def builtin_measures() -> list[Metric]:
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
                ("context_relevance_chars", "context relevance (chars)", "context"),
                ("context_precision_chars", "context precision (chars)", "context"),
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
        _measure("n_chars_cut", "characters cut from over-long texts", "lower", "count"),
        *(
            _measure(c, f"{STAGE_LABELS[c]} (ms)", "lower", "ms", "latency")
            for c in LATENCY_COLUMNS
        ),
        *(_measure(c, f"{COST_LABELS[c]} ($)", "lower", "usd", "cost") for c in COST_COLUMNS),
    ]


def _figure(
    name: str, label: str, direction: Direction, unit: Unit, aggregate: str, of: str | None = None
) -> Metric:
    return Metric(name, label, direction, unit, aggregate, of, FIGURE_GROUPS.get(name, frozenset()))


def figures_of(m: Metric) -> list[Metric]:
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
        if not m.declared:  # the questions both cover (`runs.summary.COVERED_BY`)
            figs.append(
                _figure(f"n_{m.name}", f"questions with {base}", "higher", "count", "count", m.name)
            )
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


def run_figures() -> list[Metric]:
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
            for c, what in {**STAGE_LABELS, **COST_LABELS}.items()
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
