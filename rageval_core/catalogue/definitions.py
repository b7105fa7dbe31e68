"""The one-line definition and docs section of every metric (help texts, the definitions
page, the report), built-in or declared.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from rageval_core.catalogue.failures import failure_label
from rageval_core.catalogue.measures import (
    COST_LABELS,
    SPAN_DEFINITIONS,
    STAGE_LABELS,
    TOTAL_COST_COUNT,
)
from rageval_core.catalogue.metric import Metric
from rageval_core.catalogue.sections import (
    DECLARED_SECTION,
    FAILURES_SECTION,
    GENERATION_SECTION,
    PER_RUN_SECTION,
    RETRIEVAL_SECTION,
    SPANS_SECTION,
    SPEED_SECTION,
    VERDICTS_SECTION,
)
from rageval_core.models import FAILURE_TYPES
from rageval_core.thresholds import DEFAULT_THRESHOLDS


def _stem_definition(name: str) -> tuple[str, str] | None:
    """The definition and docs section of a per-k measure (`recall_at_5`,
    `span_iou_at_5`), else None."""
    stem, _, k = name.rpartition("_at_")
    if not k.isdigit():
        return None
    if stem in SPAN_DEFINITIONS:
        return SPAN_DEFINITIONS[stem], SPANS_SECTION
    says = {
        "recall": f"share of the question's gold chunks found in the top {k} retrieved "
        "(1.0 = all found)",
        "precision": f"share of the top {k} retrieved chunks that are gold",
        "hit": f"1 when a gold chunk is in the top {k}, else 0: its mean is the share of "
        "questions with one",
        "ndcg": f"how close the top {k}'s order is to the ideal (1.0 = gold chunks first)",
    }
    return (says[stem], RETRIEVAL_SECTION) if stem in says else None


DEFINITIONS: Mapping[str, tuple[str, str]] = {
    # measures: (one line, section of docs/metrics.md)
    "mrr": (
        "1 / rank of the first gold chunk retrieved (1.0 = a gold chunk first)",
        RETRIEVAL_SECTION,
    ),
    "faithfulness": (
        "share of the answer's claims the judge found supported by the retrieved chunks "
        "(1.0 = fully grounded)",
        GENERATION_SECTION,
    ),
    "answer_correctness": (
        "how well the answer matches its reference (1.0 = contains it); on an "
        "unanswerable question, 1.0 for declining",
        GENERATION_SECTION,
    ),
    "context_relevance": (
        "share of the top-k retrieved chunks the judge found relevant to the question "
        "(no gold needed)",
        VERDICTS_SECTION,
    ),
    "context_precision": (
        "average precision of the judge's chunk verdicts in rank order (1.0 = every "
        "relevant chunk ranked above every irrelevant one)",
        VERDICTS_SECTION,
    ),
    "context_relevance_chars": (
        "share of the judged chunks' characters that lie in chunks the judge found "
        "relevant: the same text cut into more chunks reads the same",
        VERDICTS_SECTION,
    ),
    "context_precision_chars": (
        "average precision of the chunk verdicts with the character as its unit (1.0 = "
        "every relevant character ranked above every irrelevant one), whatever the chunking",
        VERDICTS_SECTION,
    ),
    "answer_relevancy": (
        "how well the answer addresses the question, per the judge (NULL for a refusal)",
        VERDICTS_SECTION,
    ),
    "context_recall": (
        "share of the reference answer's statements the judge found in the retrieved chunks",
        VERDICTS_SECTION,
    ),
    "retrieval_ms": ("time the pipeline spent retrieving", SPEED_SECTION),
    "generation_ms": ("time the pipeline spent writing the answer", SPEED_SECTION),
    "ttft_ms": ("time until the answer's first token", SPEED_SECTION),
    "total_ms": ("end-to-end time to answer one question", SPEED_SECTION),
    "cost_usd": ("what the pipeline's tokens cost at the config's prices", SPEED_SECTION),
    "judge_cost_usd": ("what the judge's tokens cost at its prices", SPEED_SECTION),
    # figures made of several columns or counts
    "n_questions": ("questions in the run", PER_RUN_SECTION),
    "n_answerable": ("questions that have a gold answer", PER_RUN_SECTION),
    "n_unanswerable": ("questions the pipeline should decline", PER_RUN_SECTION),
    "n_reference_free": (
        "questions whose answerability is unknown: no reference answer and no gold (or an "
        "import that gave no gold)",
        PER_RUN_SECTION,
    ),
    "n_errors": ("questions on which the pipeline raised", PER_RUN_SECTION),
    "n_chars_cut": (
        "characters cut from the question's answer, question and chunk texts beyond the "
        "per-text bound (models.MAX_TEXT_CHARS, docs/pipeline.md) before judging and scoring",
        PER_RUN_SECTION,
    ),
    "n_unplaced": (
        "retrieved chunks that could not be placed in a dataset document (counted not relevant)",
        SPANS_SECTION,
    ),
    "n_unknown_ids": (
        "retrieved chunk ids that are not in the dataset's corpus: is the pipeline chunking "
        "differently? Use gold_spans",
        SPANS_SECTION,
    ),
    "n_offsets_mismatched": (
        "retrieved chunks whose offsets did not hold their text (a sentence window records "
        "the window): placed by their text instead",
        SPANS_SECTION,
    ),
    "n_unknown_doc_placed": (
        "retrieved chunks naming a document id the dataset does not have (a path as id), "
        "placed by their text anyway",
        SPANS_SECTION,
    ),
    "faithfulness_below_threshold": (
        "share of questions whose faithfulness is below the run's failure_thresholds."
        f"faithfulness_min ({DEFAULT_THRESHOLDS.faithfulness_min:g} unless set)",
        PER_RUN_SECTION,
    ),
    "answer_correctness_below_threshold": (
        "share of answerable questions whose correctness is below the run's "
        f"failure_thresholds.correctness_min ({DEFAULT_THRESHOLDS.correctness_min:g} unless set)",
        PER_RUN_SECTION,
    ),
    "recall_gap": (
        "mean recall@5 − recall@20: below 0 when gold chunks are found but ranked 6–20, "
        "which a reranker can fix (0 = nothing to gain)",
        PER_RUN_SECTION,
    ),
    "missed_refusal_rate": (
        "share of unanswerable questions the pipeline answered anyway (0 = declined them all)",
        PER_RUN_SECTION,
    ),
    "false_refusal_rate": (
        "share of answerable questions the pipeline declined (0 = answered them all)",
        PER_RUN_SECTION,
    ),
    "total_cost_per_question": (
        "pipeline plus judge cost, mean over the questions whose pipeline cost is known (× 1M: "
        "the cost of a million questions); – when none is",
        PER_RUN_SECTION,
    ),
    **{
        f"n_{c}": (f"questions whose {what} is known: the ones its figures cover", PER_RUN_SECTION)
        for c, what in {**STAGE_LABELS, **COST_LABELS}.items()
    },
    TOTAL_COST_COUNT: (
        "questions whose pipeline cost is known: the ones cost / question covers",
        PER_RUN_SECTION,
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
    "count": "questions with a value, the ones its mean and p10 cover, of: {}",
}


def define(m: Metric, measures: Mapping[str, Metric]) -> Metric:
    """`m` with its definition and docs section: its own line, a per-k stem's, a failure
    type's, or its measure's line under the aggregate's words."""
    if not m.is_measure and m.of in measures and m.aggregate in _AGGREGATE:
        base = define(measures[m.of], measures)
        scope = " (answerable questions only)" if m.answerable_only else ""
        text = _AGGREGATE[m.aggregate].format(base.definition) + scope
        doc = DECLARED_SECTION if m.declared else PER_RUN_SECTION
    elif m.name in DEFINITIONS:
        text, doc = DEFINITIONS[m.name]
    elif stem := _stem_definition(m.name):
        text, doc = stem
    elif m.name.startswith("failure_") and m.name[8:] in FAILURE_TYPES:
        ft = failure_label(m.name[8:])
        text = f"questions whose failure is {ft}"
        if ft == "ok":
            text = "questions that passed every check"
        elif ft == "unscored":
            text = "questions the judge could not score (a judge error): never ok"
        doc = FAILURES_SECTION
    elif m.declared and m.is_measure:
        # not its label: that is the run's text, and help texts are Markdown
        text, doc = "a per-question score the run declares in its manifest", DECLARED_SECTION
    else:
        return m
    return replace(m, definition=text, doc=doc)
