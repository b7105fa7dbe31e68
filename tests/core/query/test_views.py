"""Dashboard query functions: known answers on hand-made runs; hostile parameters."""

from __future__ import annotations

import numpy as np
import pytest

from rageval_core.errors import ConfigError, ResultsError
from rageval_core.query import (
    QuestionFilter,
    ResultsStore,
    bottom_questions,
    cost_quality,
    failure_counts,
    flaky_questions,
    metric_distribution,
    metric_trend,
    question_detail,
    question_history,
    question_rows,
    recall_curve,
    rerank_candidates,
    runs_overview,
)

from .conftest import row, write_run

FAITH = [0.1, 0.9, 0.5, 0.3, None, 1.0, 0.7, 0.2, 0.8, 0.6]


def _run_rows():
    rows = []
    for i, f in enumerate(FAITH):
        rank = [1, 7, 3, 20, 12, None, 6, 2, 21, 5][i]
        retrieved = [f"c{i}-{j}" for j in range(1, 21)]
        gold = [f"c{i}-{rank}"] if rank else []
        rows.append(
            row(
                f"q{i}",
                answerable=bool(rank),
                retrieved=retrieved,
                gold=gold,
                question=["50% off?", "under_score", "it's quoted", "plain"][i % 4] + f" #{i}",
                answer="The answer mentions HYBRID search" if i % 3 == 0 else "nothing",
                faithfulness=f,
                answer_correctness=i / 10,
                tags=["multi-hop"] if i % 2 else ["numeric"],
                failure_type=["ok", "unfaithful", "incorrect", "error", "ranking_miss"][i % 5],
                total_ms=100.0 * (i + 1),
                claims=[
                    {
                        "text": "claim a",
                        "verdict": "supported",
                        "evidence_chunk_id": f"c{i}-1",
                        "evidence": "ev",
                        "reason": "found",
                    },
                    {
                        "text": "claim b",
                        "verdict": "unsupported",
                        "evidence_chunk_id": None,
                        "evidence": None,
                        "reason": "absent",
                    },
                ],
                unsupported_claims=["claim b"],
            )
        )
    return rows


@pytest.fixture
def store(results):
    write_run(results, "base-run", _run_rows(), created_at="2025-01-01T00:00:00Z")
    return ResultsStore(results)


def test_question_rows_filters_sort_paging(store):
    page = question_rows(store, "base-run", limit=3)
    assert page.total == 10 and len(page.rows) == 3
    # worst first: failure-type order error, ..., ok
    assert list(page.rows["failure_type"]) == ["error", "error", "ranking_miss"]
    f = QuestionFilter(failure_types=("ok", "unfaithful"))
    assert set(question_rows(store, "base-run", f).rows["question_id"]) == {"q0", "q5", "q1", "q6"}
    f = QuestionFilter(tags=("numeric",))
    assert question_rows(store, "base-run", f).total == 5
    f = QuestionFilter(metric_ranges={"faithfulness": (0.3, 0.7)})
    got = question_rows(store, "base-run", f, sort="faithfulness").rows
    assert list(got["faithfulness"]) == [0.3, 0.5, 0.6, 0.7]
    got = question_rows(store, "base-run", sort="faithfulness", descending=True, limit=2).rows
    assert list(got["faithfulness"]) == [1.0, 0.9]
    assert question_rows(store, "base-run", QuestionFilter(answerable=False)).total == 1
    p2 = question_rows(store, "base-run", sort="question_id", limit=4, offset=8)
    assert list(p2.rows["question_id"]) == ["q8", "q9"] and p2.total == 10
    assert question_rows(store, "base-run", QuestionFilter(search="hybrid")).total == 4


def test_search_is_literal_text(store):
    def hits(text):
        return set(
            question_rows(store, "base-run", QuestionFilter(search=text)).rows["question_id"]
        )

    assert hits("%") == {"q0", "q4", "q8"}  # only questions containing a real %
    assert hits("_") == {"q1", "q5", "q9"}
    assert hits("it's") == {"q2", "q6"}
    assert hits("' OR 1=1 --") == set()
    assert hits("\\") == set()


def test_hostile_identifiers_rejected(store):
    with pytest.raises(ConfigError, match="unknown sort key"):
        question_rows(store, "base-run", sort="faithfulness; DROP TABLE x")
    with pytest.raises(ConfigError, match="unknown metric"):
        QuestionFilter(metric_ranges={"recall_at_5; DROP TABLE x": (0, 1)})
    with pytest.raises(ConfigError, match="unknown metric"):
        metric_trend(store, 'recall_at_5" OR 1=1 --')
    with pytest.raises(ConfigError, match="unknown metric"):
        bottom_questions(store, "base-run", "question")
    with pytest.raises(ConfigError, match="must be a number"):
        QuestionFilter(metric_ranges={"faithfulness": ("0 OR 1=1", None)})
    with pytest.raises(ResultsError, match="invalid run id"):
        metric_distribution(store, "../etc", "mrr")
    with pytest.raises(ResultsError, match="invalid run id"):
        recall_curve(store, ["x' OR 1=1 --"])
    # a hostile question id is just a value that matches nothing
    with pytest.raises(ResultsError, match="no question"):
        question_detail(store, "base-run", "q1' OR '1'='1")
    assert question_history(store, "q1' OR '1'='1").empty


@pytest.mark.parametrize(
    "lower_is_better",
    [
        "total_ms_p95",
        "cost_usd_per_question",
        "missed_refusal_rate",
        "false_refusal_rate",
        "faithfulness_below_threshold",
        "n_questions",
    ],
)
def test_cost_quality_takes_only_higher_is_better_quality_metrics(store, lower_is_better):
    # the frontier treats higher as better: a latency or a rate there would rank backwards
    with pytest.raises(ConfigError, match=lower_is_better):
        cost_quality(store, quality=lower_is_better)


def test_cost_quality_takes_every_quality_metric_and_its_p10(store):
    assert not cost_quality(store, quality="faithfulness_p10").empty
    assert not cost_quality(store, quality="recall_at_5").empty


def test_bottom_and_distribution(store):
    vals = np.array([f for f in FAITH if f is not None])
    b = bottom_questions(store, "base-run", "faithfulness", pct=10)  # ceil(9 / 10) = 1
    assert list(b.rows["value"]) == [0.1] and b.n_scored == 9 and b.cut == 0.1
    assert list(bottom_questions(store, "base-run", "faithfulness", pct=30).rows["value"]) == [
        0.1,
        0.2,
        0.3,
    ]
    slow = bottom_questions(store, "base-run", "total_ms", pct=20)
    assert list(slow.rows["question_id"]) == ["q9", "q8"]
    assert slow.describe("total ms") == "top 20%: 2 of 10 questions, total ms ≥ 900 ms"
    d = metric_distribution(store, "base-run", "faithfulness")
    assert list(d["value"]) == sorted(vals)


def test_rerank_candidates(store):
    r = rerank_candidates(store, "base-run")
    assert list(zip(r["question_id"], r["first_gold_rank"], strict=True)) == [
        ("q6", 6),
        ("q1", 7),
        ("q4", 12),
        ("q3", 20),
    ]


def test_question_detail(store):
    d = question_detail(store, "base-run", "q1")
    assert d.gold_ids == ("c1-7",) and d.missed_gold_ids == ()
    assert [r.rank for r in d.retrieved[:3]] == [1, 2, 3]
    assert [r.id for r in d.retrieved if r.is_gold] == ["c1-7"]
    assert d.retrieved[6].is_gold and d.retrieved[6].text == "text of c1-7"
    assert [c.verdict for c in d.claims] == ["supported", "unsupported"]
    assert d.claims[1].reason == "absent" and d.unsupported_claims == ("claim b",)
    d8 = question_detail(store, "base-run", "q8")  # gold at rank 21: not retrieved
    assert d8.missed_gold_ids == ("c8-21",)
    assert d8.metrics["recall_at_20"] == 0.0


def _history(results):
    # q1 ok → unfaithful → ok ; q2 always ok ; other dataset ignored
    for n, (ft1, c1) in enumerate([("ok", 0.9), ("unfaithful", 0.2), ("ok", 0.8)]):
        write_run(
            results,
            f"h{n}",
            [row("q1", failure_type=ft1, answer_correctness=c1), row("q2", answer_correctness=0.9)],
            created_at=f"2025-02-0{n + 1}T00:00:00Z",
        )
    write_run(
        results,
        "other",
        [row("q1", failure_type="error")],
        dataset=("zz", "1", "c" * 64),
        created_at="2025-01-01T00:00:00Z",
    )


def test_history_and_flaky(results):
    _history(results)
    store = ResultsStore(results)
    h = question_history(store, "q1")
    assert list(h["run_id"]) == ["other", "h0", "h1", "h2"]
    assert list(question_history(store, "q1", dataset="qa")["failure_type"]) == [
        "ok",
        "unfaithful",
        "ok",
    ]
    f = flaky_questions(store)
    assert list(f["question_id"]) == ["q1"]
    r = f.iloc[0]
    assert (r["n_runs"], r["verdict_flips"], r["correctness_flips"]) == (3, 2, 2)
    assert flaky_questions(store, dataset="zz").empty


def test_flaky_is_kept_on_disk_until_the_runs_change(results, monkeypatch):
    import rageval_core.query._flaky as views_mod

    _history(results)
    first = flaky_questions(ResultsStore(results))
    memo = results / ".rageval" / "memo"
    assert len(list(memo.glob("flaky-*.parquet"))) == 1

    def boom(*a, **k):
        raise AssertionError("recomputed although nothing changed")

    # a new process over unchanged results reads the stored answer, same frame
    monkeypatch.setattr(views_mod, "_flaky", boom)
    assert flaky_questions(ResultsStore(results)).equals(first)
    monkeypatch.undo()
    # a new run changes the answer; the stale file is replaced
    write_run(
        results,
        "h3",
        [row("q1", failure_type="ok", answer_correctness=0.9)],
        created_at="2025-01-09T00:00:00Z",
    )
    again = flaky_questions(ResultsStore(results))
    assert again.set_index("question_id").loc["q1", "n_runs"] == 4
    assert len(list(memo.glob("flaky-*.parquet"))) == 1


def test_cross_run_aggregates(results):
    # quality / latency / cost chosen so that B dominates C, A and B are on the frontier
    spec = {"a": (0.9, 900.0, 0.010), "b": (0.7, 100.0, 0.001), "c": (0.6, 200.0, 0.002)}
    for n, (run, (q, ms, cost)) in enumerate(spec.items()):
        write_run(
            results,
            run,
            [
                row(
                    f"q{i}",
                    answer_correctness=q,
                    total_ms=ms,
                    cost_usd=cost,
                    failure_type="ok" if i else "incorrect",
                    recall_at_5=0.5 * i,
                )
                for i in range(2)
            ],
            created_at=f"2025-03-0{n + 1}T00:00:00Z",
        )
    store = ResultsStore(results)
    cq = cost_quality(store).set_index("run_id")
    assert list(cq.index) == ["a", "b", "c"]
    assert list(cq["dominated"]) == [False, False, True]
    assert cq.loc["c", "dominated_latency"] and not cq.loc["a", "dominated_cost"]
    assert cq.loc["b", "cost_per_question"] == pytest.approx(0.001)
    rc = recall_curve(store, ["b"])
    assert list(rc["k"]) == [1, 3, 5, 10, 20]
    assert rc.set_index("k").loc[5, "recall"] == pytest.approx(0.25)
    fc = failure_counts(store, ["a"]).set_index("failure_type")
    assert fc.loc["ok", "n"] == 1 and fc.loc["incorrect", "share"] == pytest.approx(0.5)
    assert fc["n"].sum() == 2
    t = metric_trend(store, "answer_correctness")
    assert list(t["run_id"]) == ["a", "b", "c"] and list(t["value"]) == pytest.approx(
        [0.9, 0.7, 0.6]
    )
    assert len(runs_overview(store)) == 3
