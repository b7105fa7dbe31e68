"""The same passage in two documents (twins), and a run's chunks placed by what they hold:
a copy of a gold span's text covers the span; a repeated id at another place counts; a
chunk whose offsets or document id do not fit is placed by its text and the run says so."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import rageval_core
from rageval_core.cli import main
from rageval_core.metrics.spans import Range, span_metrics, span_scores
from rageval_core.mismatch import mismatch_warnings
from rageval_core.models import Document, GoldSpan
from rageval_core.placement import MIN_TEXT, Placer
from rageval_core.query import ResultsStore, question_detail

GOLD = "The if statement is used for conditional execution."
IF_DOC = "XXXXXXXXXX" + GOLD + "YYYYY"
ELSE_DOC = "ZZZZZ" + GOLD.replace("if statement", "if \n statement") + " and else too."
DOCS = [Document("if", IF_DOC), Document("else", ELSE_DOC)]
SPAN = GoldSpan("if", 10, 10 + len(GOLD))


def test_a_chunk_holding_a_copy_of_the_gold_text_covers_it_character_for_character() -> None:
    p = Placer(DOCS)
    (twin,) = p.twins([SPAN])
    assert (twin.doc_id, ELSE_DOC[twin.start : twin.end].replace(" \n ", " ")) == ("else", GOLD)
    # the first 25 characters of the copy and 5 others: 25 gold characters of 30
    # (the copy's "if \n statement" is two characters longer: its run maps onto " ")
    cut = twin.start + 25 + 2
    got = span_scores([Range("else", 0, cut)], [SPAN], 1, p.twins([SPAN]))
    assert got == (25 / len(GOLD), 25 / 30, 25 / (30 + len(GOLD) - 25))
    whole = span_metrics([Range("else", twin.start, twin.end)], [SPAN], (1,), p.twins([SPAN]))
    assert whole["span_recall_at_1"] == whole["span_precision_at_1"] == 1.0
    assert whole["recall_at_1"] == whole["hit_at_1"] == whole["mrr"] == 1.0
    # without the twin rule the copy is nothing
    assert span_scores([Range("else", twin.start, twin.end)], [SPAN], 1) == (0.0, 0.0, 0.0)


def test_short_spans_and_the_span_itself_are_no_twins() -> None:
    p = Placer([Document("a", "Yes. Yes. Yes. The if statement is used here."), *DOCS])
    assert p.twins([GoldSpan("a", 0, 4)]) == ()  # "Yes." is everywhere
    assert [t.doc_id for t in p.twins([SPAN])] == ["else"]


words = st.sampled_from(["if", "else", "statement", "x", "é", "\x00", "loop"])
seps = st.sampled_from([" ", "  ", "\n", "\t"])


def _text(draw, n: int) -> str:
    return "".join(draw(words) + draw(seps) for _ in range(n))


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_any_copy_of_a_gold_text_covers_it_and_twins_only_add(data) -> None:
    """Property: a chunk exactly over a copy (white space changed or not) of a gold span's
    text scores span recall 1 on it; with twins every figure stays in [0, 1] and no
    figure of coverage drops."""
    body = data.draw(st.integers(4, 30))
    a = _text(data.draw, body)
    start = data.draw(st.integers(0, len(a) - 1))
    end = data.draw(st.integers(start + 1, len(a)))
    gold = a[start:end]
    folded = re.sub(r"\s+", " ", gold).strip()
    copy = gold if data.draw(st.booleans()) else folded
    before, after = _text(data.draw, data.draw(st.integers(0, 5))), "."
    docs = [Document("a", a), Document("b", before + "|" + copy + "|" + after)]
    span = GoldSpan("a", start, end)
    p = Placer(docs)
    twins = p.twins([span])
    at = len(before) + 1
    if len(folded) >= MIN_TEXT:
        chunk = Range("b", at, at + len(copy))
        got = span_metrics([chunk], [span], (1,), twins)
        assert got["hit_at_1"] == 1.0
        # the copy covers every character of the span but white space at its ends
        assert got["span_recall_at_1"] >= len(gold.strip()) / len(gold) - 1e-12
    else:
        assert twins == ()
    ranges = data.draw(
        st.lists(
            st.builds(
                lambda d, s, n: Range(d, s, s + n),
                st.sampled_from(["a", "b"]),
                st.integers(0, len(a) + len(before) + 3),
                st.integers(0, 40),
            ),
            max_size=4,
        )
    )
    plain, twinned = span_metrics(ranges, [span], (5,)), span_metrics(ranges, [span], (5,), twins)
    for key, value in twinned.items():
        assert value is not None and 0.0 <= value <= 1.0 + 1e-12, key
    for key in ("span_recall_at_5", "recall_at_5", "hit_at_5", "mrr"):
        assert twinned[key] >= plain[key] - 1e-12, key


# ---------------------------------------------------------------------------- whole runs


def _dataset(folder: Path, docs: list[Document], spans: list[GoldSpan]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "documents.jsonl").write_text(
        "".join(json.dumps({"id": d.id, "text": d.text}) + "\n" for d in docs)
    )
    questions = [
        {
            "id": f"q{i}",
            "question": f"question {i}?",
            "reference_answer": "conditional execution",
            "gold_spans": [{"doc_id": s.doc_id, "start": s.start, "end": s.end}],
        }
        for i, s in enumerate(spans, start=1)
    ]
    doc = {"name": "twins", "version": "1", "documents": "documents.jsonl", "questions": questions}
    (folder / "dataset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder / "dataset.yaml"


def test_a_run_scores_the_copy_the_repeat_and_the_mismatched_chunk(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path / "data", DOCS, [SPAN])
    at = ELSE_DOC.index("The if")

    def pipeline(question: str) -> dict:
        copy = ELSE_DOC[at : at + len(GOLD) + 2]
        return {
            "answer": "conditional execution",
            "retrieved": [
                # the copy, its offsets those of a sentence inside it (a sentence window)
                {"id": "w", "text": copy, "doc_id": "else", "start": at, "end": at + 6},
                # a path as id: another folder's files
                {"id": "p", "text": "and else too.", "doc_id": "/elsewhere/else.txt"},
            ],
        }

    ran = rageval_core.evaluate(pipeline, dataset, results=tmp_path / "r", progress=False)
    row = ran.rows.iloc[0]
    assert row["span_recall_at_5"] == 1.0 and row["recall_at_5"] == 1.0
    assert row["failure_type"] != "retrieval_miss"
    # the Question page says what the figures say: the copy is gold, nothing missed
    detail = question_detail(ResultsStore(str(tmp_path / "r")), ran.run_id, "q1")
    assert [c.is_gold for c in detail.retrieved] == [True, False]
    assert detail.missed_gold_ids == ()
    assert row["n_offsets_mismatched"] == 1 and list(row["unknown_doc_ids"]) == [
        "/elsewhere/else.txt"
    ]
    totals = json.loads((ran.path / "manifest.json").read_text())["totals"]
    assert totals["n_offsets_mismatched"] == 1
    assert totals["unknown_doc_ids"] == ["/elsewhere/else.txt"]
    assert totals["n_unknown_doc_placed"] == 0  # "and else too." is too short to place
    said = mismatch_warnings(totals)
    assert (
        "1 chunks' offsets do not match their text: placed by text (LlamaIndex sentence "
        "windows record the window)" in said
    )
    assert any("/elsewhere/else.txt" in w and "0 of them placed by their text" in w for w in said)


def test_a_repeated_id_at_another_place_counts_in_the_span_figures(tmp_path: Path) -> None:
    """One id, two texts: the second, exactly on the gold span, was dropped before."""
    dataset = _dataset(tmp_path / "data", DOCS, [SPAN])

    def pipeline(question: str) -> dict:
        return {
            "answer": "x",
            "retrieved": [
                {"id": "c", "text": "XXXXXXXXXX", "doc_id": "if", "start": 0, "end": 10},
                {"id": "c", "text": GOLD, "doc_id": "if", "start": 10, "end": 10 + len(GOLD)},
                {"id": "c", "text": GOLD, "doc_id": "if", "start": 10, "end": 10 + len(GOLD)},
            ],
        }

    ran = rageval_core.evaluate(pipeline, dataset, results=tmp_path / "r", progress=False)
    row = ran.rows.iloc[0]
    assert row["span_recall_at_5"] == 1.0
    assert row["span_precision_at_5"] == len(GOLD) / (10 + len(GOLD))
    assert row["precision_at_5"] == 1 / 5  # the exact repeat counts once, at its first rank
    assert list(row["gold_ranks"]) == [2]
    detail = question_detail(ResultsStore(str(tmp_path / "r")), ran.run_id, "q1")
    assert [c.is_gold for c in detail.retrieved] == [False, True, True]


def test_validate_counts_the_gold_spans_that_have_twins(tmp_path: Path, capsys) -> None:
    other = GoldSpan("else", ELSE_DOC.index("and else"), len(ELSE_DOC))
    dataset = _dataset(tmp_path / "data", DOCS, [SPAN, other])
    assert main(["validate", str(dataset)]) == 0
    out = capsys.readouterr().out
    assert "2 gold spans (1 with twins: their text stands elsewhere too" in out


PIPELINE = """
def build():
    def ask(question):
        n = question.split()[1].rstrip("?")
        text = "The if statement is used for conditional execution."
        return {
            "answer": "x",
            "retrieved": [{"id": "c" + n, "text": text, "doc_id": "/folder" + n + "/if.txt"}],
        }

    return ask
"""


def test_shards_merge_the_unknown_document_ids_they_name(tmp_path: Path) -> None:
    """Totals of two shards: the names merged, the counts summed (a list summed failed)."""
    dataset = _dataset(tmp_path / "data", DOCS, [SPAN] * 4)
    (tmp_path / "paths_app.py").write_text(PIPELINE)
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "paths",
                "dataset": str(dataset),
                "pipeline": {"factory": "paths_app:build"},
                "judge": {"kind": "offline"},
            }
        )
    )
    results = str(tmp_path / "results")
    for shard in ("1/2", "2/2"):
        args = ["run", str(config), "--results", results, "--run-id", "sh", "--shard", shard]
        assert main([*args, "--no-progress"]) == 0
    totals = json.loads((tmp_path / "results" / "sh" / "manifest.json").read_text())["totals"]
    assert sorted(totals["unknown_doc_ids"]) == [f"/folder{i}/if.txt" for i in range(1, 5)]
    assert totals["n_unknown_doc_placed"] == 4 and totals["n_unplaced"] == 0
