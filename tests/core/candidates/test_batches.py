"""Candidate batches as the dashboard finds them: in the results location's `candidates/`
(which the run listing passes over) or where $RAGEVAL_CANDIDATES points, one batch or a
folder of them; a damaged batch is an error naming its file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rageval_core.candidates.batches import candidates_location, list_batches, read_batch
from rageval_core.cli import main
from rageval_core.errors import DatasetError
from rageval_core.runs.layout import CANDIDATES_ENV
from rageval_core.runs.listing import scan_folders

EXAMPLE_DOCUMENTS = Path(__file__).parents[3] / "rageval_core" / "example" / "documents.jsonl"


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("batch") / "b1"
    assert main(["dataset", "generate", "--documents", str(EXAMPLE_DOCUMENTS), "--out", str(out),
                 "--n", "6"]) == 0  # fmt: skip
    return out


def test_the_default_location_is_candidates_in_the_results(monkeypatch):
    monkeypatch.delenv(CANDIDATES_ENV, raising=False)
    assert candidates_location("/x/results/") == "/x/results/candidates"
    assert candidates_location("s3://b/results") == "s3://b/results/candidates"
    monkeypatch.setenv(CANDIDATES_ENV, "/elsewhere")
    assert candidates_location("/x/results") == "/elsewhere"
    assert candidates_location("/x/results", "/given") == "/given"


def test_batches_are_the_subfolders_holding_candidates(generated, tmp_path):
    root = tmp_path / "candidates"
    for name in ("b2", "a1", "bad name", ".hidden"):
        shutil.copytree(generated, root / name)
    (root / "empty").mkdir()
    (root / "notes.txt").write_text("not a batch")
    assert list(list_batches(str(root))) == ["a1", "b2"]
    assert list_batches(str(generated)) == {"b1": generated}  # a batch itself
    assert list_batches(str(tmp_path / "nowhere")) == {}
    assert list_batches("s3://bucket/candidates") == {}


def test_the_run_listing_passes_over_the_candidates_folder(generated, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(generated, results / "candidates" / "b1")
    (results / "20261205-100000-x").mkdir()
    runs, ignored = scan_folders(str(results))
    assert [name for name, _ in runs] == ["20261205-100000-x"] and ignored == []


def test_a_batch_reads_its_candidates_and_the_documents_they_quote(generated):
    batch = read_batch("b1", generated)
    assert len(batch.candidates) == 6
    for c in batch.candidates:
        for q in c.quotes:
            assert batch.documents[q.doc_id][q.start : q.end] == q.text


def test_a_damaged_batch_names_its_file_and_line(generated, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(generated, broken)
    lines = (broken / "candidates.jsonl").read_text().splitlines()
    lines[2] = '{"id": 3}'
    (broken / "candidates.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=r"candidates\.jsonl:3: not a candidate"):
        read_batch("broken", broken)
    shutil.copy(generated / "candidates.jsonl", broken / "candidates.jsonl")
    (broken / "documents.jsonl").unlink()
    with pytest.raises(DatasetError, match=r"documents\.jsonl: missing"):
        read_batch("broken", broken)
