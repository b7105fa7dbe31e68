"""`rageval dataset to-spans`: an id dataset of in-order chunks becomes documents + spans."""

from __future__ import annotations

from pathlib import Path

from rageval_core.cli import main
from rageval_core.dataset import example_dataset_path, load_dataset


def test_to_spans_writes_documents_and_spans_that_validate(tmp_path: Path, capsys) -> None:
    src = tmp_path / "ids"
    src.mkdir()
    (src / "corpus.jsonl").write_text((example_dataset_path().parent / "corpus.jsonl").read_text())
    (src / "dataset.yaml").write_text(
        "name: ids\nversion: 1\ncorpus: corpus.jsonl\nquestions:\n"
        "  - {id: q1, question: a, reference_answer: r, gold_chunk_ids: [company-overview#2]}\n"
        "  - {id: q2, question: b, reference_answer: r,"
        " gold_chunk_ids: [temperature-control@v2#3, driver-shifts@v1#1]}\n"
        "  - {id: q3, question: c, gold_chunk_ids: []}\n"
    )
    out = tmp_path / "spans"
    assert main(["dataset", "to-spans", str(src / "dataset.yaml"), "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    before, after = load_dataset(src / "dataset.yaml"), load_dataset(out / "dataset.yaml")
    texts = {d.id: d.text for d in after.documents}
    chunks = before.chunk_map()
    for q in after.questions:
        assert len(q.gold_spans) == len(q.gold_chunk_ids)
        for gid, s in zip(q.gold_chunk_ids, q.gold_spans, strict=True):
            assert texts[s.doc_id][s.start : s.end] == chunks[gid].text
    assert {"temperature-control@v1", "temperature-control@v2"} <= set(texts)  # versions apart
    assert after.questions[2].answerability == "unanswerable"
    assert after.sha256 != before.sha256
    assert main(["validate", str(out / "dataset.yaml")]) == 0
    assert "19 documents, 3 gold spans" in capsys.readouterr().out
    # the same again refuses to overwrite a curated dataset
    assert main(["dataset", "to-spans", str(src / "dataset.yaml"), "--out", str(out)]) == 2
