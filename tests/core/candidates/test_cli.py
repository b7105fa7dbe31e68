"""`rageval dataset generate` through the real entry point: a folder of real text in, a
folder that validates out; mistakes are one line; a failed generation leaves `--out`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rageval_core.candidates import ACCEPTED, REJECTED, files, read_candidates
from rageval_core.cli import main
from rageval_core.errors import DatasetError

EXAMPLE_DOCUMENTS = Path(__file__).parents[3] / "rageval_core" / "example" / "documents.jsonl"


@pytest.fixture
def text_folder(tmp_path, squad_documents) -> Path:
    """The SQuAD articles as a folder of text files, one of them Markdown with headings."""
    folder = tmp_path / "docs"
    (folder / "history").mkdir(parents=True)
    normans, complexity = squad_documents
    (folder / "history" / "normans.txt").write_text(normans.text, encoding="utf-8")
    paragraphs = complexity.text.split("\n\n")
    markdown = "\n\n".join(f"## Part {i}\n\n{p}" for i, p in enumerate(paragraphs))
    (folder / "complexity.md").write_text(f"# Complexity\n\n{markdown}", encoding="utf-8")
    (folder / "notes.bin").write_bytes(b"\x00\xff")  # not a text file: skipped
    return folder


def generate(*args: str) -> int:
    return main(["dataset", "generate", *args])


def test_a_folder_of_text_gives_a_folder_that_validates(text_folder, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert generate("--documents", str(text_folder), "--out", str(out), "--n", "60") == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"wrote {out}: 60 candidates (")
    assert "coverage: 2 of 2 documents" in printed
    assert sorted(p.name for p in out.iterdir()) == sorted(files.OUTPUTS)
    assert main(["validate", str(out / "accepted.yaml")]) == 0
    rows = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    assert {r["quotes"][0]["doc_id"] for r in rows} == {"history/normans.txt", "complexity.md"}
    report = json.loads((out / "report.json").read_text())
    assert report["coverage"]["sections"] == 39 + 48 + 1  # paragraphs; one heading section each
    assert report["candidates"] == 60


def test_an_earlier_generation_is_kept_unless_forced(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert generate("--documents", str(EXAMPLE_DOCUMENTS), "--out", str(out), "--n", "5") == 0
    before = (out / "candidates.jsonl").read_bytes()
    assert generate("--documents", str(EXAMPLE_DOCUMENTS), "--out", str(out), "--n", "9") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "candidates.jsonl already exists; use --force" in err
    assert (out / "candidates.jsonl").read_bytes() == before
    assert generate("--documents", str(EXAMPLE_DOCUMENTS), "--out", str(out), "--n", "9",
                    "--force") == 0  # fmt: skip
    assert len((out / "candidates.jsonl").read_text().splitlines()) == 9


def test_candidates_of_the_existing_dataset_are_duplicates(tmp_path, capsys) -> None:
    """Generated twice over the same documents, with the first result as the dataset:
    every candidate is rejected as the same question, and no accepted.yaml remains."""
    first, second = tmp_path / "a", tmp_path / "b"
    assert generate("--documents", str(EXAMPLE_DOCUMENTS), "--out", str(first), "--n", "8") == 0
    (second / "accepted.yaml").parent.mkdir()
    (second / "accepted.yaml").write_text("left over")
    capsys.readouterr()
    code = generate("--documents", str(EXAMPLE_DOCUMENTS), "--out", str(second), "--n", "8",
                    "--dataset", str(first / "accepted.yaml"), "--force")  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "0 accepted by checks" in printed and "no accepted.yaml written" in printed
    assert not (second / "accepted.yaml").exists()
    earlier = read_candidates(first / "candidates.jsonl")
    again = read_candidates(second / "candidates.jsonl")
    assert [c.id for c in again] == [c.id for c in earlier]
    assert all(c.status == REJECTED for c in again)
    accepted = [c for c in earlier if c.status == ACCEPTED]
    assert accepted
    for c in accepted:
        dup = {ch.name: ch for ch in again[earlier.index(c)].checks}["duplicate"]
        assert dup.detail == f"the same question as {c.id}"


@pytest.mark.parametrize("n", ["0", "abc", "10001", "-3"])
def test_a_bad_count_is_a_usage_error(tmp_path, n, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        generate("--documents", str(EXAMPLE_DOCUMENTS), "--out", str(tmp_path), "--n", n)
    assert exit_.value.code == 2
    assert "must be a whole number from 1 to 10000" in capsys.readouterr().err


def test_documents_that_cannot_be_read_are_one_line(tmp_path, capsys) -> None:
    bad = tmp_path / "docs.jsonl"
    bad.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\nnot json\n')
    assert generate("--documents", str(bad), "--out", str(tmp_path / "o")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bad}: cannot read the documents" in err
    assert generate("--documents", str(tmp_path / "none"), "--out", str(tmp_path / "o")) == 2
    assert "no such file" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert generate("--documents", str(empty), "--out", str(tmp_path / "o")) == 2
    assert "holds no text files" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_documents_with_no_sentence_to_ask_about_say_so(tmp_path, capsys) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "short. lines. only"}\n')
    assert generate("--documents", str(docs), "--out", str(tmp_path / "o")) == 2
    assert "no sentence fits a template" in capsys.readouterr().err


def test_a_failure_while_writing_leaves_the_folder_as_it_was(tmp_path, monkeypatch, capsys) -> None:
    out = tmp_path / "out"
    assert generate("--documents", str(EXAMPLE_DOCUMENTS), "--out", str(out), "--n", "5") == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def refuses(path):
        raise DatasetError(f"{path}: invalid golden dataset")

    monkeypatch.setattr(files, "load_dataset", refuses)
    code = generate("--documents", str(EXAMPLE_DOCUMENTS), "--out", str(out), "--n", "9", "--force")
    assert code == 2
    assert "invalid golden dataset" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no staging folder left


@pytest.mark.parametrize(
    "line, why",
    [
        ("not json", "candidates.jsonl:2: not valid JSON"),
        ('{"id": "x"}', "candidates.jsonl:2: not a candidate"),
        ('{"id": "x", "kind": "name", "question": "q", "reference_answer": "r", "generator": "g",'
         ' "sources": [], "quotes": [{"doc_id": "d", "text": "t", "start": -1, "end": 3}]}',
         "an offset must be a whole number"),
    ],
)  # fmt: skip
def test_a_bad_candidates_line_is_named(tmp_path, line, why) -> None:
    out = tmp_path / "out"
    assert generate("--documents", str(EXAMPLE_DOCUMENTS), "--out", str(out), "--n", "1") == 0
    path = out / "candidates.jsonl"
    path.write_text(path.read_text() + line + "\n")
    with pytest.raises(DatasetError) as err:
        read_candidates(path)
    assert why in err.value.message and str(path) in err.value.message


def test_the_accepted_candidates_score_in_a_run(tmp_path, capsys) -> None:
    """accepted.yaml is a dataset `rageval run` scores: the example pipeline, indexing the
    example corpus, retrieves the gold quotes of questions written from its documents."""
    out = tmp_path / "out"
    assert generate("--documents", str(EXAMPLE_DOCUMENTS), "--out", str(out), "--n", "20") == 0
    n = sum(c.status == ACCEPTED for c in read_candidates(out / "candidates.jsonl"))
    config = tmp_path / "run.yaml"
    config.write_text(
        json.dumps(
            {
                "name": "generated",
                "dataset": str(out / "accepted.yaml"),
                "pipeline": {
                    "factory": "rageval_core.example.pipeline:build",
                    "params": {
                        "top_k": 5,
                        "dataset": str(EXAMPLE_DOCUMENTS.with_name("dataset.yaml")),
                    },
                },
                "judge": {"kind": "offline"},
            }
        )
    )
    capsys.readouterr()
    assert main(["run", str(config), "--results", str(tmp_path / "results")]) == 0
    printed = capsys.readouterr().out
    assert f"{n} questions, 0 errors" in printed
    assert re.search(r"recall@5 +(0\.[89]\d\d|1\.000)", printed), printed
