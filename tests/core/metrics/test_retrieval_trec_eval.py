"""Differential check: our retrieval metrics equal trec_eval (via pytrec_eval) exactly.

trec_eval orders a run by score descending and breaks ties by docno *descending*, so each
run gets strictly decreasing scores to make its order the one we pass. trec_eval rejects a
run with a repeated docno and pytrec_eval's {docid: score} cannot hold one, so the cases
here are duplicate-free; duplicate handling is pinned by hand in test_retrieval.py
(it equals trec_eval on the de-duplicated list, which the last test here checks).

Known, deliberate difference: trec_eval scores a query with no relevant document 0 on
every measure; we return None (unanswerable questions are NULL and excluded from means).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.metrics.retrieval import ndcg_at_k, retrieval_metrics
from tests.conftest import import_or_skip_unless_ci

pytrec_eval = import_or_skip_unless_ci("pytrec_eval", "pip install pytrec-eval-terrier")

KS = (1, 2, 3, 5, 7, 10, 20, 50)  # includes cut-offs beyond every generated list
MEASURES = {
    "P." + ",".join(map(str, KS)),
    "recall." + ",".join(map(str, KS)),
    "success." + ",".join(map(str, KS)),
    "ndcg_cut." + ",".join(map(str, KS + (10,))),
    "recip_rank",
}
TOL = 1e-9


def _trec(cases: list[tuple[list[str], list[str]]]) -> dict[str, dict[str, float]]:
    qrels = {f"q{i}": dict.fromkeys(gold, 1) for i, (_, gold) in enumerate(cases)}
    # Scores strictly decreasing with rank: trec_eval then keeps our order exactly.
    run = {
        f"q{i}": {doc: float(len(ranked) - r) for r, doc in enumerate(ranked)}
        for i, (ranked, _) in enumerate(cases)
    }
    return pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(run)


def _assert_equal(ours: dict[str, float | None], theirs: dict[str, float], case) -> None:
    pairs = [("mrr", "recip_rank"), ("ndcg_at_10", "ndcg_cut_10")]
    for k in KS:
        pairs += [
            (f"recall_at_{k}", f"recall_{k}"),
            (f"precision_at_{k}", f"P_{k}"),
            (f"hit_at_{k}", f"success_{k}"),
        ]
    for mine, trec in pairs:
        assert ours[mine] == pytest.approx(theirs[trec], abs=TOL), (mine, case)


def _random_cases(seed: int, n: int) -> list[tuple[list[str], list[str]]]:
    rnd = random.Random(seed)
    # Ids shaped like real chunk ids, some sharing prefixes, so docno ordering is exercised.
    pool = [f"doc{d}#{c}" for d in range(5) for c in range(6)]
    cases = []
    for _ in range(n):
        ranked = rnd.sample(pool, rnd.randint(0, 25))
        gold = rnd.sample(pool, rnd.randint(1, 8))
        if ranked and rnd.random() < 0.3:  # bias towards gold being retrieved early
            ranked.insert(rnd.randint(0, min(3, len(ranked))), rnd.choice(gold))
            ranked = list(dict.fromkeys(ranked))
        cases.append((ranked, gold))
    return cases


def test_matches_trec_eval_on_generated_cases():
    cases = _random_cases(seed=20240611, n=600)
    results = _trec(cases)
    assert len(results) == len(cases)  # empty runs are scored too (all zeros)
    for i, case in enumerate(cases):
        ours = retrieval_metrics(case[0], case[1], ks=KS)
        _assert_equal(ours, results[f"q{i}"], case)


def test_matches_trec_eval_on_ndcg_at_every_k():
    cases = _random_cases(seed=7, n=200)
    results = _trec(cases)
    for i, (ranked, gold) in enumerate(cases):
        for k in KS:
            assert ndcg_at_k(ranked, gold, k) == pytest.approx(
                results[f"q{i}"][f"ndcg_cut_{k}"], abs=TOL
            )


pool_ids = st.sampled_from([f"c{i}" for i in range(15)])


@settings(max_examples=150, deadline=None)
@given(st.lists(pool_ids, max_size=20), st.lists(pool_ids, min_size=1, max_size=6, unique=True))
def test_duplicated_run_equals_trec_eval_on_its_deduplication(ranked, gold):
    deduped = list(dict.fromkeys(ranked))
    theirs = _trec([(deduped, gold)])["q0"]
    _assert_equal(retrieval_metrics(ranked, gold, ks=KS), theirs, (ranked, gold))


def test_trec_eval_breaks_score_ties_by_docno_descending():
    # Why the scores above must be strictly decreasing: with equal scores trec_eval puts
    # "b" before "a" whatever order we pass, so the gold "a" lands at rank 2.
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0, "b": 1.0}}
    result = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    assert result["q"]["recip_rank"] == 0.5


def test_trec_eval_scores_no_relevant_as_zero_we_return_none():
    result = pytrec_eval.RelevanceEvaluator({"q": {"a": 0}}, {"recall.5"}).evaluate(
        {"q": {"a": 1.0}}
    )
    assert result["q"]["recall_5"] == 0.0
    assert retrieval_metrics(["a"], [])["recall_at_5"] is None
