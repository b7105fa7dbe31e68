"""`rageval dataset documents`: the documents file from the app's own loader, named as the
framework's chunks name their source, so chunk offsets index the written texts."""

from __future__ import annotations

import json

import pytest

from rageval_core.adapters import adapt
from rageval_core.cli import main
from tests.core.adapters import apps
from tests.core.adapters.apps import need


def written(path) -> dict[str, str]:
    return {r["id"]: r["text"] for r in map(json.loads, path.read_text().splitlines())}


@pytest.mark.parametrize(
    ("framework", "loader", "build"),
    [
        ("llamaindex", "llamaindex_documents", apps.llamaindex_engine),
        ("langchain", "langchain_documents", apps.langchain_chain),
    ],
)
def test_chunk_offsets_index_the_written_documents(framework, loader, build, tmp_path, capsys):
    need(framework)
    out = tmp_path / "documents.jsonl"
    flag = f"--from-{framework}"
    assert (
        main(
            ["dataset", "documents", flag, f"tests.core.adapters.apps:{loader}", "--out", str(out)]
        )
        == 0
    )
    assert "3 documents" in capsys.readouterr().out
    docs = written(out)
    assert docs == apps.DOCUMENTS
    ask = adapt(build())
    for _, question, _ in apps.QUESTIONS:
        for c in ask(question)["retrieved"]:
            assert docs[c["doc_id"]][c["start"] : c["end"]] == c["text"]
    # an existing file is kept unless --force
    assert (
        main(
            ["dataset", "documents", flag, f"tests.core.adapters.apps:{loader}", "--out", str(out)]
        )
        == 2
    )
    assert "exists; pass --force" in capsys.readouterr().err


def random_ids():
    from llama_index.core import Document

    return [Document(text="a"), Document(text="b")]


def no_source():
    from langchain_core.documents import Document

    return [Document(page_content="a", metadata={})]


def repeated():
    from langchain_core.documents import Document

    return [Document(page_content=t, metadata={"source": "a.pdf"}) for t in ("p1", "p2")]


@pytest.mark.parametrize(
    ("framework", "loader", "message"),
    [
        ("llamaindex", "random_ids", "document 1 has a random id"),
        ("langchain", "no_source", "document 1 has no id; give each document metadata"),
        ("langchain", "repeated", "document 2 repeats the id 'a.pdf'"),
    ],
)
def test_documents_gold_could_not_name_are_refused_and_nothing_is_written(
    framework, loader, message, tmp_path, capsys
):
    need(framework)
    out = tmp_path / "documents.jsonl"
    name = f"tests.core.adapters.test_documents:{loader}"
    assert main(["dataset", "documents", f"--from-{framework}", name, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()
