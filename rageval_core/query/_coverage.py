"""What a run, a set of runs or one question cannot compute, and why: the one rule every
page follows, through the dashboard's cached `unavailable` (docs/metrics.md,
"Reference-free verdicts").

A metric is unavailable in a scope when it is NULL (or NaN) in every row of the scope where
it is due and a reason is known; metrics are grouped by that reason, so a page drops the
empty columns and says each reason once. Due rows: never a row the pipeline or the judge
failed on (its page shows the error instead); retrieval figures not on an unanswerable
question (there is no gold to find); faithfulness and answer relevancy not on a refusal
(there are no claims, and declining is counted by the refusal figures). The reasons, in
this order: no retrieval gold; no reference answers (correctness and context recall); the
judge was not asked for a verdict, or the run predates the verdict (its manifest's judge
records no `metrics:` choice), or the judge gave none. Counted in one parameterised query
over the scope's rows (`COUNTS`), never by reading the rows into Python.

A figure known for some questions only (a latency or cost the pipeline reported for some)
says how many it covers, in one wording: `$0.0030 (2 of 6 questions)` (`covered`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rageval_core.catalogue import BUILTIN
from rageval_core.metrics.context import CHAR_COLUMNS
from rageval_core.runs.source import bind, reading_results
from rageval_core.runs.summary import COVERED_BY
from rageval_core.store.results import ResultsStore

NO_GOLD = "no retrieval gold: retrieval figures need gold ids or spans"
NO_REFERENCE = "no reference answers: answer correctness and context recall need one"
NOT_ASKED = "no {what}: the judge was not asked for it"
PREDATES = "no {what}: the run was written before the judge gave them"
GAVE_NONE = "no {what}: the judge gave none"

RETRIEVAL: tuple[str, ...] = BUILTIN.measure_names("retrieval")
NEEDS_REFERENCE: tuple[str, ...] = ("answer_correctness", "context_recall")
JUDGED: Mapping[str, tuple[str, tuple[str, ...]]] = {
    # the judge metric (`models.JUDGE_METRICS`): the words for it, the columns it fills
    "faithfulness": ("faithfulness", ("faithfulness",)),
    "answer_correctness": ("answer correctness", ("answer_correctness",)),
    "context_relevance": (
        "context relevance verdicts",
        ("context_relevance", "context_precision", *CHAR_COLUMNS),
    ),
    "answer_relevancy": ("answer relevancy", ("answer_relevancy",)),
    "context_recall": ("context recall", ("context_recall",)),
}
VERDICT_METRICS: tuple[str, ...] = ("context_relevance", "answer_relevancy", "context_recall")
"""The judge metrics a run written before the `metrics:` choice has none of."""
_MAY_BE_EMPTY = ("faithfulness", *VERDICT_METRICS)
"""Judge metrics whose NULLs in every due row are a reason of their own ("the judge gave
none"); correctness is NULL only without a reference or when the judge was not asked."""

# Each count is named for the column it counts, so `rule` reads them back by name. The
# identifiers are this module's constants, never a caller's text.
_OK = "error IS NULL AND judge_error IS NULL"
_DUE = {
    "due": _OK,
    "due_retrieval": f"{_OK} AND answerable IS DISTINCT FROM false",
    "due_answered": f"{_OK} AND refused IS NOT TRUE",
}
_DUE_OF = {  # the figures not due in every row that ran cleanly (module doc)
    "recall_at_5": "due_retrieval",
    "faithfulness": "due_answered",
    "answer_relevancy": "due_answered",
}
COUNTS = (
    "SELECT\n  "
    + ",\n  ".join(
        [
            *(f'count(*) FILTER (WHERE {w}) AS "{n}"' for n, w in _DUE.items()),
            f'count(*) FILTER (WHERE {_OK} AND reference_answer IS NOT NULL) AS "reference"',
            *(
                f'count(*) FILTER (WHERE {_DUE[_DUE_OF.get(c, "due")]} AND NOT isnan("{c}")) '
                f'AS "{c}"'
                for c in ("recall_at_5", *JUDGED)
            ),
        ]
    )
    + "\nFROM {src}\nWHERE $question_id IS NULL OR question_id = $question_id"
)
"""Per scope (a run, or its one question `$question_id`): the due rows of each kind, those
with a reference answer, and the due rows holding each counted figure (NaN is NULL too)."""


@dataclass(frozen=True)
class Unavailable:
    """Metrics a scope cannot show, and the one reason why: `family` is `retrieval`,
    `reference` or the judge metric (`models.JUDGE_METRICS`) the reason is about."""

    family: str
    metrics: tuple[str, ...]
    reason: str


def rule(counts: Mapping[str, int], asked: Iterable[str] | None) -> tuple[Unavailable, ...]:
    """The unavailable metrics of a scope from its `COUNTS` and the judge metrics the run's
    judge was asked for (None: a manifest written before the choice, which asked for
    faithfulness and correctness only)."""
    out: list[Unavailable] = []
    if counts["due_retrieval"] and not counts["recall_at_5"]:
        out.append(Unavailable("retrieval", RETRIEVAL, NO_GOLD))
    no_reference = not counts["reference"] and not counts["answer_correctness"]
    if counts["due"] and no_reference:
        out.append(Unavailable("reference", NEEDS_REFERENCE, NO_REFERENCE))
    asked = None if asked is None else set(asked)
    for metric, (what, columns) in JUDGED.items():
        if not counts[_DUE_OF.get(metric, "due")] or counts[metric]:
            continue
        if no_reference and metric in NEEDS_REFERENCE:
            continue  # said once, above
        if asked is not None and metric not in asked:
            why = NOT_ASKED
        elif asked is None and metric in VERDICT_METRICS:
            why = PREDATES
        elif metric in _MAY_BE_EMPTY:
            why = GAVE_NONE
        else:
            continue
        out.append(Unavailable(metric, columns, why.format(what=what)))
    return tuple(out)


def unavailable(
    store: ResultsStore, run_id: str, question_id: str | None = None
) -> tuple[Unavailable, ...]:
    """What `run_id` cannot show (or its question `question_id`), and why: `rule` over the
    scope's rows. A question the run does not have, or an empty run, has nothing due."""
    info = store.run(run_id)
    with store.cursor() as cur, store.run_source(cur, info) as src:
        q = COUNTS.format(src=src.sql)
        with reading_results(info.run_id):
            rel = cur.execute(q, bind(q, {**src.params, "question_id": question_id}))
            names = [d[0] for d in rel.description]
            rows = rel.fetchall()  # to the end: a journal is unregistered after this
    counts = dict(zip(names, rows[0] if rows else (0,) * len(names), strict=True))
    return rule(counts, info.manifest.judge.metrics if info.manifest else None)


def unavailable_metrics(store: ResultsStore, run_ids: Iterable[str]) -> tuple[Unavailable, ...]:
    """What none of `run_ids` can show, each metric under the first run's reason (a metric
    one run has is shown, NULL for the others)."""
    per_run = [unavailable(store, r) for r in run_ids]
    if not per_run:
        return ()
    common = set.intersection(*({m for u in found for m in u.metrics} for found in per_run))
    kept = (
        Unavailable(u.family, tuple(m for m in u.metrics if m in common), u.reason)
        for u in per_run[0]
    )
    return tuple(u for u in kept if u.metrics)


def part_of(known: object, questions: object) -> str:
    """`2 of 6 questions` when `known` of `questions` have a value; "" when all (or none:
    then the figure itself is `–`) or when either count is unknown."""
    if not isinstance(known, int) or not isinstance(questions, int):
        return ""
    return f"{known:,} of {questions:,} questions" if 0 < known < questions else ""


def covered(text: str, known: object, questions: object) -> str:
    """`text` (a formatted figure) with the questions it covers when only some: `$0.0030
    (2 of 6 questions)`."""
    part = part_of(known, questions)
    return f"{text} ({part})" if part else text


def figure_covered(text: str, figure: str, row: Mapping[str, Any]) -> str:
    """`covered` for `figure` of a run's summary `row` (its `COVERED_BY` count against its
    `n_questions`); `text` as it is for a figure every question has."""
    key = COVERED_BY.get(figure)
    if key is None:
        return text
    return covered(text, _int(row.get(key)), _int(row.get("n_questions")))


def _int(v: object) -> int | None:
    """A count from a summary row (an int, a numpy integer, a float from pandas, or NaN)."""
    try:
        return None if v is None or v != v else int(v)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None
