"""The example pipeline: gold-compatible ids, a reranker that helps, honest refusals,
deterministic cost model."""

from __future__ import annotations

import statistics

import pytest

from rageval_core.example.pipeline import REFUSAL, build
from rageval_core.metrics.retrieval import recall_at_k
from rageval_core.models import PipelineOutput


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
