"""Span gold from the app's own documents: the span figures of a LlamaIndex run, its
chunks placed by their node offsets, equal those of the same chunks handed over by hand
(placed by finding their text), at every chunk size, on one dataset hash."""

from __future__ import annotations

import json

import pytest
import yaml

import rageval_core
from rageval_core.adapters import adapt
from rageval_core.catalogue import span_columns
from rageval_core.cli import main
from tests.core.adapters import apps
from tests.core.adapters.apps import need


def span_dataset(folder, capsys) -> str:
    """documents.jsonl from the app's loader, gold spans as quotes of the key phrases."""
    folder.mkdir()
    loader = "tests.core.adapters.apps:llamaindex_documents"
    out = folder / "documents.jsonl"
    assert main(["dataset", "documents", "--from-llamaindex", loader, "--out", str(out)]) == 0
    capsys.readouterr()
    questions = []
    for qid, question, phrase in apps.QUESTIONS:
        entry = {"id": qid, "question": question}
        if phrase:
            doc = next(d for d, t in apps.DOCUMENTS.items() if phrase in t)
            entry["gold_spans"] = [{"doc_id": doc, "text": phrase}]
            entry["reference_answer"] = phrase
        else:
            entry["answerable"] = False
        questions.append(entry)
    doc = {"name": "handbook-spans", "version": "1", "documents": out.name, "questions": questions}
    (folder / "dataset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(folder / "dataset.yaml")


def by_hand(engine):
    """The engine's chunks as a plain pipeline would give them: id, text, score only."""
    ask = adapt(engine)

    def pipeline(question: str) -> dict:
        out = ask(question)
        return {
            "answer": out["answer"],
            "retrieved": [{k: c[k] for k in ("id", "text", "score")} for c in out["retrieved"]],
        }

    return pipeline


@pytest.mark.parametrize("chunk_size", [24, 60])
def test_span_figures_from_node_offsets_equal_those_of_the_same_chunks_by_hand(
    chunk_size, tmp_path, capsys
):
    need("llamaindex")
    from llama_index.core.llms import MockLLM

    dataset = span_dataset(tmp_path / "data", capsys)
    index, _ = apps.llamaindex_parts(chunk_size)
    engine = index.as_query_engine(llm=MockLLM(max_tokens=6), similarity_top_k=3)
    results = tmp_path / "results"
    framework = rageval_core.evaluate(engine, dataset, results=results, run_id="li", progress=False)
    hand = rageval_core.evaluate(
        by_hand(engine), dataset, results=results, run_id="hand", progress=False
    )
    columns = span_columns()
    a = framework.rows.set_index("question_id")[columns]
    b = hand.rows.set_index("question_id")[columns]
    assert a.loc[["q1", "q2", "q3"]].notna().all().all()
    assert a.equals(b), (a, b)
    assert (a.loc[["q1", "q2", "q3"], "span_recall_at_5"] == 1.0).all()
    manifests = [json.loads((results / r / "manifest.json").read_text()) for r in ("li", "hand")]
    assert manifests[0]["dataset"]["sha256"] == manifests[1]["dataset"]["sha256"]
