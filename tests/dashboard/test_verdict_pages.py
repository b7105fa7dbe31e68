"""The reference-free verdicts on the pages: each retrieved chunk's relevance and reason,
the answer's relevancy, context recall with the statements the retriever missed (model
text escaped), figures a run or question cannot have left out with one note, and a run
of a questions-only dataset on every page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rageval_core import judges
from rageval_core.config import load_config
from rageval_core.models import ChunkVerdict, Claim, JudgeInput, Judgement, JudgeRef
from rageval_core.query import NO_GOLD, ResultsStore, question_detail
from rageval_core.query._coverage import NO_REFERENCE
from rageval_core.runner import RunOptions, run
from tests.core.query.conftest import row, write_run
from tests.core.runner.conftest import Toy
from tests.dashboard.apptest import all_text, no_exception, open_page, texts
from tests.dashboard.reviewing import button, read_labels, sign
from tests.dashboard.reviewing import texts as texts_of

HOSTILE = '<img src=x onerror="alert(1)"> **bold**'
RUN = "verdicts"
FREE = "questions-only"


def _judged(qid: str, **kw: Any) -> dict[str, Any]:
    """A question row with the judge's new verdicts: chunk 1 relevant, 2 not, the rest
    unjudged; two reference statements, the second missed."""
    r = row(qid, retrieved=[f"c{qid}-{i}" for i in range(1, 4)], faithfulness=1.0)
    r.update(
        chunk_verdicts=[
            {"chunk_id": f"c{qid}-1", "rank": 1, "relevant": True, "reason": "names the year"},
            {"chunk_id": f"c{qid}-2", "rank": 2, "relevant": False, "reason": HOSTILE},
        ],
        context_relevance=0.5,
        context_precision=1.0,
        answer_relevancy=0.8,
        answer_relevancy_reason="answers the year asked " + HOSTILE,
        context_recall=0.5,
        recall_statements=[
            {
                "text": "Founded in 2009.",
                "attributed": True,
                "evidence_chunk_id": f"c{qid}-1",
                "evidence": "The company was founded in 2009.",
                "reason": "",
            },
            {
                "text": "Its founder is " + HOSTILE,
                "attributed": False,
                "evidence_chunk_id": None,
                "evidence": None,
                "reason": "no chunk names a founder",
            },
        ],
    )
    r.update(kw)
    return r


def _free(qid: str) -> dict[str, Any]:
    """A question of a questions-only dataset: no gold key, no reference (answerability
    unknown), judged on faithfulness, context relevance and answer relevancy."""
    r = row(qid, answerable=False, retrieved=[f"c{qid}-1", f"c{qid}-2"], faithfulness=1.0)
    r.update(
        answerable=None,
        chunk_verdicts=[
            {"chunk_id": f"c{qid}-1", "rank": 1, "relevant": True, "reason": "on topic"},
            {"chunk_id": f"c{qid}-2", "rank": 2, "relevant": False, "reason": "off topic"},
        ],
        context_relevance=0.5,
        context_precision=1.0,
        answer_relevancy=0.9,
        answer_relevancy_reason="addresses it",
    )
    return r


@pytest.fixture
def verdict_results(scratch) -> Path:
    out = scratch / "results"
    write_run(out, RUN, [_judged(f"q{i}") for i in range(3)], created_at="2025-01-01T00:00Z")
    write_run(out, FREE, [_free(f"f{i}") for i in range(4)], created_at="2025-01-02T00:00Z")
    return out


class FakeJudge:
    """Fills every new verdict: the answer one supported claim from the first chunk, the
    first chunk relevant and the rest not, the answer relevant."""

    def describe(self) -> JudgeRef:
        return JudgeRef("fake", version="fake-1")

    def judge(self, inp: JudgeInput) -> Judgement:
        first = inp.retrieved[0]
        return Judgement(
            claims=(Claim(inp.answer, "supported", first.id, first.text, "stated"),),
            refused=False,
            answer_correctness=None,
            chunk_verdicts=tuple(
                ChunkVerdict(c.id, i, i == 1, "names the fact" if i == 1 else "another fact")
                for i, c in enumerate(inp.retrieved, start=1)
            ),
            answer_relevancy=1.0,
            answer_relevancy_reason="answers the fact asked",
        )

    def close(self) -> None:
        pass


@pytest.fixture
def library_run(scratch, monkeypatch) -> tuple[Path, str]:
    """A run of a questions-only dataset (no reference, no gold key) made by the library's
    runner with `FakeJudge`: (results folder, run id)."""
    toy = Toy(scratch)
    questions = [{"id": f"p{i:03d}", "question": f"What is fact {i}?"} for i in range(1, 7)]
    dataset = {"name": "free", "version": "1", "corpus": "corpus.jsonl", "questions": questions}
    (scratch / "data" / "free.yaml").write_text(yaml.safe_dump(dataset))
    config = toy.config("free", dataset="data/free.yaml", judge={"kind": "fake"}, concurrency=1)
    monkeypatch.setitem(judges.KINDS, "fake", lambda _: FakeJudge())
    monkeypatch.chdir(scratch)
    done = run(load_config(config), RunOptions(results=str(toy.results), progress=False))
    assert done.status == "complete"
    return toy.results, done.run_id


# ---------------------------------------------------------------------------- query


def test_a_questions_verdicts_keep_rank_and_the_missed_statements(verdict_results) -> None:
    d = question_detail(ResultsStore(str(verdict_results)), RUN, "q1")
    v = d.verdicts
    assert v.chunk(1).relevant and not v.chunk(2).relevant and v.chunk(3) is None
    assert [s.text for s in v.missed] == ["Its founder is " + HOSTILE]
    assert [s.evidence for s in v.attributed] == ["The company was founded in 2009."]
    assert (v.answer_relevancy, d.metrics["context_relevance"]) == (0.8, 0.5)
    free = question_detail(ResultsStore(str(verdict_results)), FREE, "f1").verdicts
    assert free.statements is None and free.chunk(1).reason == "on topic"


# ---------------------------------------------------------------------------- pages


def test_question_page_shows_chunk_verdicts_answer_relevancy_and_missed_statements(
    app, verdict_results
) -> None:
    at = open_page(app(verdict_results, run=RUN, question="q1"), "question")
    headings = [e.label for e in at.expander]
    assert any(h.startswith("#1 · ✓ gold") and h.endswith("· relevant") for h in headings)
    assert any(h.startswith("#2") and h.endswith("· not relevant") for h in headings)
    assert not any(h.startswith("#3") and "relevant" in h for h in headings)  # not judged
    shown = all_text(at)
    assert "Answer relevancy 80.0% (relevant)" in shown
    assert "1 statement(s) the retriever missed:" in shown
    assert "Found 1: in cq1-1" in shown and "The company was founded in 2009." in shown
    assert "names the year" in shown
    # every piece of model text escaped: never a tag, never Markdown
    html = " ".join(m.value for m in at.markdown)
    assert "<img" not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    assert "**bold**" in html
    assert "Not shown" not in shown  # this question has every figure


def test_a_questions_only_run_opens_on_every_page_with_its_three_figures(
    app, verdict_results
) -> None:
    for page in ("runs", "diagnose", "tails", "retrieval", "cost", "compare", "judge", "review"):
        at = open_page(app(verdict_results, run=FREE, runs=[FREE]), page)
        no_exception(at)
    at = open_page(app(verdict_results, run=FREE, question="f1"), "question")
    tiles = [m.label for m in at.metric]
    for figure in ("faithfulness", "context relevance", "answer relevancy"):
        assert any(figure in t for t in tiles), (figure, tiles)
    assert not any(t.startswith(("recall", "MRR", "nDCG", "answer correctness")) for t in tiles)
    notes = [i.value for i in at.info if i.value.startswith("Not shown")]
    assert len(notes) == 1 and NO_GOLD in notes[0] and NO_REFERENCE in notes[0]
    assert not any(s.value.startswith("Context recall") for s in at.subheader)


def test_runs_leaves_out_the_latest_runs_figures_it_cannot_have(app, verdict_results) -> None:
    at = open_page(app(verdict_results), "runs")  # the questions-only run is the latest
    notes = [i.value for i in at.info if i.value.startswith("Not shown")]
    assert len(notes) == 1 and NO_GOLD in notes[0] and NO_REFERENCE in notes[0]
    tiles = [m.label for m in at.metric]
    assert "faithfulness" in tiles and "faithfulness p10" in tiles
    assert not {"recall@5", "MRR", "correctness (answerable)"} & set(tiles)


def test_retrieval_leaves_out_runs_without_gold_and_names_them_once(app, verdict_results) -> None:
    at = open_page(app(verdict_results, runs=[RUN, FREE], run=RUN), "retrieval")
    notes = [i.value for i in at.info if i.value.startswith("Left out")]
    assert notes == [f"Left out 1 run(s) — {NO_GOLD}: `{FREE}`"]
    curves = [c for c in at.get("plotly_chart") if RUN in c.proto.spec]
    assert curves and not [c for c in at.get("plotly_chart") if FREE in c.proto.spec]
    only = open_page(app(verdict_results, runs=[FREE], run=FREE), "retrieval")
    assert not [i for i in only.info if i.value == "Pick at least one run."]


def test_diagnose_leaves_out_the_columns_a_questions_only_run_cannot_have(
    app, verdict_results
) -> None:
    at = open_page(app(verdict_results, run=FREE), "diagnose")
    notes = [i.value for i in at.info if i.value.startswith("Not shown")]
    assert len(notes) == 1 and NO_GOLD in notes[0] and NO_REFERENCE in notes[0]
    columns = list(at.dataframe[0].value.columns)
    assert "recall_at_5" not in columns and "answer_correctness" not in columns
    assert "faithfulness" in columns
    full = open_page(app(verdict_results, run=RUN), "diagnose")
    assert not [i for i in full.info if i.value.startswith("Not shown")]
    assert "recall_at_5" in list(full.dataframe[0].value.columns)


def test_a_run_written_before_the_verdicts_says_so_once(app, scratch) -> None:
    old = scratch / "old"
    rows = [row(f"q{i}", retrieved=[f"c{i}-1", f"c{i}-2"], faithfulness=1.0) for i in range(3)]
    write_run(old, "before-verdicts", rows, created_at="2025-01-01T00:00Z")
    at = open_page(app(old, run="before-verdicts", question="q1"), "question")
    notes = [i.value for i in at.info if i.value.startswith("Not shown")]
    assert len(notes) == 1 and "no context relevance verdicts" in notes[0]
    assert "no answer relevancy" in notes[0] and "no context recall" in notes[0]
    assert not any("relevant" in e.label for e in at.expander if e.label.startswith("#"))
    assert texts(at.caption)  # the page is still drawn in full


def test_a_questions_only_run_made_by_the_runner_shows_its_three_figures(app, library_run) -> None:
    results, run_id = library_run
    for page in ("runs", "diagnose", "tails", "retrieval", "cost", "compare", "judge", "review"):
        no_exception(open_page(app(results, run=run_id, runs=[run_id]), page))
    at = open_page(app(results, run=run_id, question="p002"), "question")
    tiles = {m.label: m.value for m in at.metric}
    assert tiles["faithfulness"] == "1.000"
    assert any("context relevance" in t for t in tiles), tiles
    assert any("answer relevancy" in t for t in tiles), tiles
    notes = [i.value for i in at.info if i.value.startswith("Not shown")]
    assert len(notes) == 1 and NO_GOLD in notes[0] and NO_REFERENCE in notes[0]
    assert any(e.label.endswith("· relevant") for e in at.expander if e.label.startswith("#1"))


# ---------------------------------------------------------------------------- labelling


def test_the_answer_relevancy_form_says_it_needs_a_name_first(app, verdict_results, labels):
    at = open_page(app(verdict_results, run=RUN, question="q1"), "question")
    assert any(
        c.value.startswith("Mark the answer relevant or not here once you have entered your name")
        for c in at.caption
    )
    assert not [b for b in at.button if b.label in ("Save chunk label", "Save answer label")]


def test_a_chunk_label_and_an_answer_label_are_saved_beside_the_judge(
    app, verdict_results, labels
) -> None:
    at = sign(open_page(app(verdict_results, run=RUN, question="q1"), "question"))
    key = f"question_label_{RUN}_q1"
    chunk = at.radio(key=f"{key}_chunk_2_choice")
    assert chunk.value == "irrelevant"  # the form starts from the judge's verdict
    chunk.set_value("relevant")
    at.text_input(key=f"{key}_chunk_2_note").input("it names the founding company")
    no_exception(button(at, "Save chunk label", 1).click().run())
    assert at.radio(key=f"{key}_choice").value == "relevant"  # answer relevancy 0.8
    at.radio(key=f"{key}_choice").set_value("irrelevant")
    no_exception(button(at, "Save answer label").click().run())
    got = sorted(read_labels(labels), key=lambda d: d["chunk_id"] is None)
    assert [(d["chunk_id"], d["relevant"], d["judge"], d["run_id"]) for d in got[:1]] == [
        ("cq1-2", True, "irrelevant", RUN)
    ]
    assert (got[1]["answer"], got[1]["answer_relevant"], got[1]["judge"]) == (
        "answer q1",
        False,
        "relevant",
    )
    assert got[0]["claim"] is None and got[0]["question_label"] is None
    # shown at once, and each form now starts from the reviewer's own label
    assert "Ann Reviewer: relevant (judge: irrelevant) — it names the founding company" in (
        texts_of(at)
    )
    assert at.radio(key=f"{key}_chunk_2_choice").value == "relevant"
    assert at.radio(key=f"{key}_choice").value == "irrelevant"


def test_a_refusal_is_not_labelled_for_relevancy(app, scratch, labels) -> None:
    out = scratch / "results"
    write_run(out, "refusal", [_judged("q1", refused=True, answer="I don't know.")])
    at = sign(open_page(app(out, run="refusal", question="q1"), "question"))
    assert "A refusal (or an empty answer) is not labelled for relevancy." in texts_of(at)
    assert not [b for b in at.button if b.label == "Save answer label"]


def test_the_judge_page_shows_chunk_relevance_agreement(app, verdict_results, labels) -> None:
    at = sign(open_page(app(verdict_results, run=RUN, question="q1"), "question"))
    key = f"question_label_{RUN}_q1"
    at.radio(key=f"{key}_chunk_2_choice").set_value("relevant")  # the judge: irrelevant
    no_exception(button(at, "Save chunk label", 1).click().run())
    judge = no_exception(open_page(app(verdict_results), "judge"))
    assert "Relevance: retrieved chunks and answers" in texts_of(judge)
    tables = [t.value for t in judge.table]
    relevance = next(t for t in tables if "chunk relevance" in t.columns)
    assert "answer relevancy" not in relevance.columns  # nobody labelled an answer
    assert relevance.loc["labels behind these figures", "chunk relevance"] == "1"
    assert relevance.loc["raw agreement", "chunk relevance"] == "0.0%"


def test_retrieval_opens_on_the_runs_that_have_retrieval_figures(app, verdict_results) -> None:
    """Without runs in the URL the newest runs with recall@5 are drawn: the newer
    questions-only run is not picked only to be left out again."""
    at = open_page(app(verdict_results), "retrieval")
    assert at.multiselect(key="retrieval_runs").value == [RUN]
    assert not [i for i in at.info if i.value.startswith("Left out")]
