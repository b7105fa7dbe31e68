"""The one rule of what a run or one question cannot show (rageval_core/query/_coverage.py),
over real run folders and DuckDB: each reason said once, the per-question exceptions
(refusal, unanswerable, an error), what the manifest says the judge was asked for, and a
property: a metric is reported iff it is NULL in every row where it is due, under the
reason that explains it, and a question's answer is the run rule over its one row."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.metrics.context import CHAR_COLUMNS
from rageval_core.models import JUDGE_METRICS
from rageval_core.query import NO_GOLD, ResultsStore, unavailable, unavailable_metrics
from rageval_core.query._coverage import (
    GAVE_NONE,
    JUDGED,
    NEEDS_REFERENCE,
    NO_REFERENCE,
    NOT_ASKED,
    PREDATES,
    RETRIEVAL,
    VERDICT_METRICS,
)
from tests.core.query.conftest import row, write_run

_ids = itertools.count()


def _run(root: Path, rows: list[dict[str, Any]], asked: tuple[str, ...] | None = None) -> str:
    """A run of `rows` whose judge was asked for `asked` (None: a manifest from before
    the choice); its id."""
    run_id = f"r{next(_ids):05d}"
    folder = write_run(root, run_id, rows)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["judge"]["metrics"] = None if asked is None else list(asked)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return run_id


def _store(root: Path) -> ResultsStore:
    return ResultsStore(str(root), read_only=True, refresh=False, cache_dir=root / ".cache")


def _by_family(found) -> dict[str, tuple[tuple[str, ...], str]]:
    return {u.family: (u.metrics, u.reason) for u in found}


def _judged(qid: str, **kw: Any) -> dict[str, Any]:
    """A question with gold, a reference and every figure."""
    figures = dict.fromkeys(
        ("faithfulness", "answer_correctness", "context_relevance", "context_precision"), 1.0
    )
    return row(qid, **{**figures, "answer_relevancy": 1.0, "context_recall": 1.0, **kw})


def _free(qid: str) -> dict[str, Any]:
    """A question of a questions-only dataset: no gold, no reference."""
    r = row(qid, faithfulness=1.0, context_relevance=0.5, answer_relevancy=0.9)
    r.update(answerable=None, reference_answer=None, gold_ids=[], gold_ranks=[])
    return {**r, **dict.fromkeys(RETRIEVAL)}


def test_a_questions_only_run_says_each_reason_once(results) -> None:
    run = _run(results, [_free(f"f{i}") for i in range(3)], JUDGE_METRICS)
    found = unavailable(_store(results), run)
    assert _by_family(found) == {
        "retrieval": (RETRIEVAL, NO_GOLD),
        "reference": (("answer_correctness", "context_recall"), NO_REFERENCE),
    }
    assert unavailable(_store(results), run, "f1") == found  # each question the same


def test_a_run_with_every_figure_has_nothing_unavailable(results) -> None:
    run = _run(results, [_judged(f"q{i}") for i in range(3)], JUDGE_METRICS)
    assert unavailable(_store(results), run) == ()
    assert unavailable(_store(results), run, "no such question") == ()  # nothing due


def test_the_manifest_says_whether_the_judge_was_asked_or_predates_the_verdicts(results) -> None:
    rows = [_judged("q1", context_relevance=None, context_precision=None, context_recall=None)]
    asked = _by_family(unavailable(_store(results), _run(results, rows, ("faithfulness",))))
    assert asked == {
        "context_relevance": (
            ("context_relevance", "context_precision", *CHAR_COLUMNS),
            NOT_ASKED.format(what="context relevance verdicts"),
        ),
        "context_recall": (("context_recall",), NOT_ASKED.format(what="context recall")),
    }
    older = _by_family(unavailable(_store(results), _run(results, rows, None)))
    assert older["context_recall"][1] == PREDATES.format(what="context recall")
    assert set(older) == {"context_relevance", "context_recall"}
    given_none = _by_family(unavailable(_store(results), _run(results, rows, JUDGE_METRICS)))
    assert given_none["context_recall"][1] == GAVE_NONE.format(what="context recall")


def test_a_question_is_spared_what_it_cannot_have(results) -> None:
    rows = [
        _judged("refused", refused=True, faithfulness=None, answer_relevancy=None),
        _judged("unanswerable", answerable=False, **dict.fromkeys(RETRIEVAL)),
        row("failed", error="boom"),  # every figure NULL: its page shows the error
        _judged("unjudged", faithfulness=None),
    ]
    run = _run(results, rows, JUDGE_METRICS)
    s = _store(results)
    assert unavailable(s, run, "refused") == ()
    assert unavailable(s, run, "unanswerable") == ()
    assert unavailable(s, run, "failed") == ()
    assert _by_family(unavailable(s, run, "unjudged")) == {
        "faithfulness": (("faithfulness",), GAVE_NONE.format(what="faithfulness"))
    }
    assert unavailable(s, run) == ()  # the run as a whole has every figure somewhere


def test_across_runs_only_what_none_has_with_the_first_runs_reason(results) -> None:
    not_asked = {**_free("f1"), "answer_relevancy": None}
    free = _run(results, [not_asked], ("faithfulness", "context_relevance"))
    full = _run(results, [_judged("q1", answer_relevancy=None)], JUDGE_METRICS)
    found = _by_family(unavailable_metrics(_store(results), [free, full]))
    assert found == {
        "answer_relevancy": (("answer_relevancy",), NOT_ASKED.format(what="answer relevancy"))
    }
    assert unavailable_metrics(_store(results), []) == ()


def test_a_running_run_is_read_from_its_journal(results) -> None:
    write_run(results, "running", [_free("f1"), _judged("q1")], status="running")
    s = _store(results)
    assert unavailable(s, "running") == ()
    assert [u.family for u in unavailable(s, "running", "f1")] == ["retrieval", "reference"]


# ---------------------------------------------------------------------------- property

_VALUE = st.sampled_from([None, math.nan, 0.0, 0.5])
_ROW = st.fixed_dictionaries(
    {
        "answerable": st.sampled_from([True, False, None]),
        "refused": st.booleans(),
        "error": st.sampled_from([None, None, None, "boom"]),
        "judge_error": st.sampled_from([None, None, None, "bad reply"]),
        "reference_answer": st.sampled_from([None, "ref"]),
        "recall_at_5": _VALUE,
        **{m: _VALUE for m in JUDGED},
    }
)
_ASKED = st.one_of(st.none(), st.sets(st.sampled_from(JUDGE_METRICS)).map(tuple))


def _null(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _due(metric: str, r: dict[str, Any]) -> bool:
    if r["error"] or r["judge_error"]:
        return False
    if metric == "recall_at_5":
        return r["answerable"] is not False
    return not (metric in ("faithfulness", "answer_relevancy") and r["refused"])


def _empty(metric: str, rows: list[dict[str, Any]]) -> bool:
    """Due somewhere, and NULL in every row where it is due."""
    due = [r for r in rows if _due(metric, r)]
    return bool(due) and all(_null(r[metric]) for r in due)


def _expected(rows: list[dict[str, Any]], asked: tuple[str, ...] | None) -> dict[str, str]:
    """The rule said plainly: family -> reason."""
    out = {}
    if _empty("recall_at_5", rows):
        out["retrieval"] = NO_GOLD
    ok = [r for r in rows if _due("answer_correctness", r)]
    no_reference = bool(ok) and all(
        r["reference_answer"] is None and _null(r["answer_correctness"]) for r in ok
    )
    if no_reference:
        out["reference"] = NO_REFERENCE
    for metric, (what, _) in JUDGED.items():
        if not _empty(metric, rows) or (no_reference and metric in NEEDS_REFERENCE):
            continue
        if asked is not None and metric not in asked:
            out[metric] = NOT_ASKED.format(what=what)
        elif asked is None and metric in VERDICT_METRICS:
            out[metric] = PREDATES.format(what=what)
        elif metric != "answer_correctness":
            out[metric] = GAVE_NONE.format(what=what)
    return out


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_ROW, min_size=1, max_size=4), _ASKED)
def test_a_metric_is_unavailable_iff_null_wherever_due_for_the_stated_reason(
    results, drawn, asked
) -> None:
    rows = [
        row(f"q{i}", **r, context_precision=r["context_relevance"]) for i, r in enumerate(drawn)
    ]
    run = _run(results, rows, asked)
    s = _store(results)
    found = unavailable(s, run)
    got = {u.family: u.reason for u in found}
    assert got == _expected(rows, asked)
    assert len({u.reason for u in found}) == len(found)  # each reason once
    metrics = [m for u in found for m in u.metrics]
    assert len(metrics) == len(set(metrics))  # each metric under one reason
    for r in rows:  # a question's answer is the run rule over its one row
        alone = unavailable(s, _run(results, [r], asked))
        assert unavailable(s, run, r["question_id"]) == alone
