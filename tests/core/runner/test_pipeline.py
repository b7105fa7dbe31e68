"""The example pipeline: gold-compatible ids, a reranker that helps, honest refusals,
deterministic cost model."""

from __future__ import annotations

import os
import statistics
from functools import partial

import pyarrow.parquet as pq
import pytest

from rageval_core.cli import main
from rageval_core.dataset import example_dataset_path, load_dataset
from rageval_core.engines import DATASET_ENV
from rageval_core.example import pipeline as example
from rageval_core.metrics.retrieval import recall_at_k
from rageval_core.models import PipelineOutput

REFUSAL = example.REFUSAL
# Outside a run nothing names the dataset: these tests index the bundled one.
build = partial(example.build, dataset=example_dataset_path())


@pytest.fixture(scope="module")
def base():
    return build(top_k=5)


def mean_recall_at_5(pipeline) -> float:
    qs = [q for q in pipeline.dataset.questions if q.answerable]
    return statistics.mean(
        recall_at_k([c.id for c in pipeline(q.question).retrieved], q.gold_chunk_ids, 5) for q in qs
    )


def test_returns_a_pipeline_output_with_corpus_ids(base):
    q = base.dataset.questions[0]
    out = base(q.question)
    assert isinstance(out, PipelineOutput) and len(out.retrieved) == 5
    corpus = base.dataset.chunk_map()
    assert all(c.id in corpus and c.text == corpus[c.id].text for c in out.retrieved)
    assert out.retrieved[0].score >= out.retrieved[-1].score
    assert out.input_tokens > 60 and out.output_tokens >= 1
    assert 0 < out.ttft_ms <= out.generation_ms


def test_rechunked_passages_keep_the_source_chunk_id(base):
    small = build(top_k=8, chunk_size=12)
    corpus = small.dataset.chunk_map()
    for q in small.dataset.questions[:20]:
        out = small(q.question)
        ids = [c.id for c in out.retrieved]
        assert len(ids) == len(set(ids)) == 8 and all(i in corpus for i in ids)
        assert all(len(c.text.split()) <= 12 and c.text in corpus[c.id].text for c in out.retrieved)


def test_reranker_lifts_recall_at_5(base):
    assert mean_recall_at_5(build(top_k=5, reranker=True)) >= mean_recall_at_5(base) + 0.05


def test_declines_without_support_unless_told_never_to(base):
    unanswerable = [q for q in base.dataset.questions if not q.answerable]
    refused = sum(base(q.question).answer == REFUSAL for q in unanswerable)
    assert refused >= len(unanswerable) // 2
    never = build(top_k=5, never_refuse=True)
    assert all(never(q.question).answer != REFUSAL for q in unanswerable)


def test_memorising_answers_the_reference():
    mem = build(top_k=3, generator="memorising")
    q = next(q for q in mem.dataset.questions if q.answerable)
    assert q.reference_answer.rstrip(".").lower() in mem(q.question).answer.lower()
    unanswerable = next(q for q in mem.dataset.questions if not q.answerable)
    assert mem(unanswerable.question).answer == REFUSAL


def test_verbose_adds_an_invented_sentence(base):
    verbose = build(top_k=5, verbose=True)
    q = next(q for q in base.dataset.questions if base(q.question).answer != REFUSAL)
    plain, chatty = base(q.question).answer, verbose(q.question).answer
    assert chatty.startswith(plain) and len(chatty) > len(plain)


def test_deterministic_and_seeded_by_question_and_settings(base):
    q1, q2 = (q.question for q in base.dataset.questions[:2])
    assert base(q1) == build(top_k=5)(q1)
    assert base(q1).ttft_ms != base(q2).ttft_ms
    assert base(q1).retrieval_ms != build(top_k=5, min_coverage=0.4)(q1).retrieval_ms


def test_more_context_costs_more_tokens_and_time(base):
    big = build(top_k=20)
    q = base.dataset.questions[0].question
    assert big(q).input_tokens > 3 * base(q).input_tokens
    assert big(q).retrieval_ms > base(q).retrieval_ms


@pytest.mark.parametrize(
    "params",
    [{"top_k": 0}, {"generator": "gpt"}, {"chunk_size": 2}, {"top_k": 30}, {"min_coverage": 2}],
)
def test_invalid_settings(params):
    with pytest.raises(ValueError):
        build(**params)


def test_without_a_dataset_param_it_indexes_the_corpus_of_the_run(toy):
    # The config evaluates the toy dataset and names no `dataset` param: the pipeline must
    # retrieve from the toy corpus, not silently from the bundled one (recall 0, "complete").
    path = toy.config(pipeline={"factory": "rageval_core.example.pipeline:build"})
    assert main(["run", str(path), "--results", str(toy.results), "--run-id", "r"]) == 0
    rows = pq.read_table(toy.results / "r" / "questions.parquet").to_pylist()
    corpus = {f"f{i}" for i in range(1, 31)}
    assert all(set(r["retrieved_ids"]) <= corpus for r in rows)
    answerable = [r for r in rows if r["answerable"]]
    assert statistics.mean(r["recall_at_5"] for r in answerable) > 0.9
    assert DATASET_ENV not in os.environ  # set only while the factory runs


def test_an_explicit_dataset_param_wins(toy):
    params = {"dataset": str(example_dataset_path())}
    path = toy.config(pipeline={"factory": "rageval_core.example.pipeline:build", "params": params})
    assert main(["run", str(path), "--results", str(toy.results), "--run-id", "r"]) == 0
    ids = pq.read_table(toy.results / "r" / "questions.parquet").column("retrieved_ids")
    bundled = load_dataset(example_dataset_path()).chunk_map()
    assert all(i in bundled for r in ids.to_pylist() for i in r)


def test_outside_a_run_the_dataset_must_be_named(monkeypatch):
    monkeypatch.delenv(DATASET_ENV, raising=False)
    with pytest.raises(ValueError, match="dataset"):
        example.build(top_k=5)
