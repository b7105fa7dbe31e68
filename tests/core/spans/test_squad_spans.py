"""A real dataset (SQuAD v2 sample, 626 questions over 2 articles) becomes documents and
gold spans that validate given both ways: offsets, and quotes where a quote is unique."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rageval_core.dataset import load_dataset
from rageval_core.errors import DatasetError
from rageval_core.importers.squad import import_squad

SQUAD = Path(__file__).parents[2] / "fixtures" / "squad" / "squad-v2-dev-small.json"


def test_squad_sample_becomes_documents_and_spans_given_both_ways(tmp_path: Path) -> None:
    path = import_squad(SQUAD, tmp_path).path
    ds = load_dataset(path)
    assert len(ds.questions) == 626 and len(ds.documents) == 2
    texts = {d.id: d.text for d in ds.documents}
    spans = {q.id: q.gold_spans for q in ds.questions if q.gold_spans}
    assert len(spans) == 293 == sum(q.answerable for q in ds.questions)
    for q in ds.questions:
        for s in q.gold_spans:
            assert texts[s.doc_id][s.start : s.end] == q.reference_answer

    # the same spans written as quotes wherever the answer occurs once in its document
    doc = yaml.safe_load(path.read_text())
    quoted, ambiguous = 0, []
    for q in doc["questions"]:
        for s in q.get("gold_spans", []):
            text = texts[s["doc_id"]][s["start"] : s["end"]]
            if texts[s["doc_id"]].count(text) == 1:
                del s["start"], s["end"]
                s["text"] = text
                quoted += 1
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    again = load_dataset(path)
    assert 50 < quoted < 293  # both ways, in one dataset
    assert {q.id: q.gold_spans for q in again.questions if q.gold_spans} == spans
    assert again.sha256 == ds.sha256  # the same content, however it was written

    # a quote found several times is a problem naming its question, never a guess
    for q in doc["questions"]:
        for s in q.get("gold_spans", []):
            if "start" in s and len(ambiguous) < 3:
                s["text"] = texts[s["doc_id"]][s["start"] : s["end"]]
                del s["start"], s["end"]
                ambiguous.append(q["id"])
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert len(info.value.problems) == 3
    for qid, problem in zip(ambiguous, info.value.problems, strict=True):
        assert f"question {qid}: gold_spans[0]: quote" in problem
        assert "is found more than once" in problem
