"""Span gold from the app's own documents: the span figures of a LlamaIndex run, its
chunks placed by their node offsets, equal those of the same chunks handed over by hand
(placed by finding their text), at every chunk size, on one dataset hash."""

from __future__ import annotations

import json

import pytest

import rageval_core
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
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return str(apps.write_span_dataset(folder, rows))


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
        apps.by_hand(engine), dataset, results=results, run_id="hand", progress=False
    )
    columns = span_columns()
    a = framework.rows.set_index("question_id")[columns]
    b = hand.rows.set_index("question_id")[columns]
    assert a.loc[["q1", "q2", "q3"]].notna().all().all()
    assert a.equals(b), (a, b)
    assert (a.loc[["q1", "q2", "q3"], "span_recall_at_5"] == 1.0).all()
    manifests = [json.loads((results / r / "manifest.json").read_text()) for r in ("li", "hand")]
    assert manifests[0]["dataset"]["sha256"] == manifests[1]["dataset"]["sha256"]
