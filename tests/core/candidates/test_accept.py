"""`rageval dataset accept`: reviewers' decisions (or every passing candidate) written as
the dataset's next version with a minimal diff — only added lines — that validates and
scores in `rageval run`; a quote that does not stand once refuses the whole accept,
naming the candidate; ids never clash and accepting again adds nothing."""

from __future__ import annotations

import difflib
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.candidates import ACCEPTED, read_candidates
from rageval_core.candidates.accepting import accept
from rageval_core.candidates.decisions import Decision, DecisionStore, batch_name
from rageval_core.candidates.model import Quote
from rageval_core.cli import main
from rageval_core.dataset import load_dataset
from rageval_core.dataset.hashing import document_sha256
from rageval_core.errors import DatasetError
from tests.core.dataset.handbook import scored_rows

EXAMPLE = Path(__file__).parents[3] / "rageval_core" / "example"


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """Twelve templated candidates from the example documents (eleven pass their checks)."""
    out = tmp_path_factory.mktemp("gen") / "week-49"
    docs = str(EXAMPLE / "documents.jsonl")
    assert main(["dataset", "generate", "--documents", docs, "--out", str(out), "--n", "12"]) == 0
    return out


@pytest.fixture
def handbook(tmp_path) -> Path:
    """A copy of the example dataset: a file written by hand, comments, quotes, `version: 3`."""
    folder = tmp_path / "handbook"
    folder.mkdir()
    for name in ("dataset.yaml", "corpus.jsonl", "documents.jsonl"):
        shutil.copy(EXAMPLE / name, folder / name)
    return folder / "dataset.yaml"


def _accept_cli(*args: str) -> int:
    return main(["dataset", "accept", *args])


def _only_added(before: Path, after: Path) -> list[str]:
    """The lines `after` adds to `before`; fails when it removes or changes any but the
    version line."""
    diff = list(difflib.ndiff(before.read_text().splitlines(), after.read_text().splitlines()))
    removed = [line for line in diff if line.startswith("- ")]
    assert removed == ["- version: 3"]
    return [line[2:] for line in diff if line.startswith("+ ")]


def test_reviewers_decisions_are_written_as_added_lines_only(generated, handbook, tmp_path, capsys):
    labels = tmp_path / "labels"
    store = DecisionStore(str(labels), batch_name(generated))
    first, second, third, *_ = read_candidates(generated / "candidates.jsonl")
    store.save(Decision(first.id, "accept", "ann"))
    store.save(Decision(third.id, "reject", "bob"))
    quote = first.quotes[0].text.split(". ")[0][:40]  # a shorter passage of the same text
    edit = Decision(second.id, "edit", "bob", question="Which portal books a dock slot?")
    store.save(replace(edit, quotes=(Quote(first.quotes[0].doc_id, quote),)))
    out = tmp_path / "v4"
    args = [str(generated), "--dataset", str(handbook), "--out", str(out), "--labels", str(labels)]
    assert _accept_cli(*args) == 0
    printed = capsys.readouterr().out
    assert f"added {first.id}\nadded {second.id}\n" in printed
    assert f"wrote {out / 'dataset.yaml'} (version 4): 2 question(s) added" in printed
    added = _only_added(handbook, out / "dataset.yaml")
    assert "version: 4" in added
    assert "    question: Which portal books a dock slot?" in added
    assert third.question not in "\n".join(added)
    written = load_dataset(out / "dataset.yaml")
    edited = next(q for q in written.questions if q.id == second.id)
    doc = written.document_map()[first.quotes[0].doc_id]
    assert [doc.text[s.start : s.end] for s in edited.gold_spans] == [quote]
    # the documents they quote are recorded at the version the dataset holds
    assert written.warnings == ()
    raw = (out / "dataset.yaml").read_text()
    assert f"{doc.id}: {document_sha256(doc)}" in raw
    # the team's comments and quoting survive
    assert "# ---------------------------------------------------------------- single-hop" in raw
    assert '    question: "In which year was Northwind Cold Chain founded?"' in raw
    # and it scores: the example pipeline over the version's corpus, the new questions too
    config = tmp_path / "run.yaml"
    config.write_text(
        f"name: v4\ndataset: {out / 'dataset.yaml'}\n"
        "pipeline: {factory: 'rageval_core.example.pipeline:build'}\njudge: {kind: offline}\n"
    )
    results = tmp_path / "results"
    assert main(["run", str(config), "--results", str(results), "--run-id", "r"]) == 0
    rows = {
        r["question_id"]: r for r in pq.read_table(results / "r" / "questions.parquet").to_pylist()
    }
    assert rows[second.id]["error"] is None and rows[second.id]["span_recall_at_5"] is not None


def test_an_edited_quote_found_twice_is_refused_naming_the_candidate(
    generated, handbook, tmp_path, capsys
):
    labels = tmp_path / "labels"
    c = read_candidates(generated / "candidates.jsonl")[0]
    twice = Quote("company-overview", "Northwind")
    DecisionStore(str(labels), batch_name(generated)).save(
        Decision(c.id, "edit", "ann", quotes=(twice,))
    )
    out = tmp_path / "v4"
    args = [str(generated), "--dataset", str(handbook), "--out", str(out), "--labels", str(labels)]
    assert _accept_cli(*args) == 2
    err = capsys.readouterr().err
    assert f"candidate {c.id}: the quote 'Northwind' stands more than once in document" in err
    assert err.count("\n") == 1
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["handbook", "labels"]


def test_a_quote_missing_from_the_datasets_version_of_a_document_is_refused(generated, tmp_path):
    c = read_candidates(generated / "candidates.jsonl")[0]
    gone = {c.id: Decision(c.id, "edit", "ann", quotes=(Quote(c.quotes[0].doc_id, "Zzyzx"),))}
    with pytest.raises(DatasetError, match=f"candidate {c.id}: the quote 'Zzyzx' is not in"):
        accept(generated, gone, None, tmp_path / "new")
    assert not (tmp_path / "new").exists()


def test_all_passing_without_a_dataset_writes_a_new_one_that_scores_in_a_run(
    generated, tmp_path, capsys
):
    out = tmp_path / "new"
    assert _accept_cli(str(generated), "--out", str(out), "--all-passing") == 0
    written = load_dataset(out / "dataset.yaml")
    passing = [
        c.id for c in read_candidates(generated / "candidates.jsonl") if c.status == ACCEPTED
    ]
    assert [q.id for q in written.questions] == passing
    assert written.name == "week-49" and written.version == "1" and written.warnings == ()
    rows = list(scored_rows(out / "dataset.yaml", tmp_path).values())
    assert sorted(r["question_id"] for r in rows) == sorted(passing)
    assert all(r["error"] is None and r["recall_at_5"] is not None for r in rows)


def test_a_document_the_dataset_lacks_is_appended_to_its_documents_file(generated, tmp_path):
    folder = tmp_path / "small"
    folder.mkdir()
    c = read_candidates(generated / "candidates.jsonl")[0]
    lines = (EXAMPLE / "documents.jsonl").read_text().splitlines(keepends=True)
    kept = [line for line in lines if json.loads(line)["id"] != c.quotes[0].doc_id]
    (folder / "documents.jsonl").write_text("".join(kept))
    (folder / "dataset.yaml").write_text(
        "name: small  # by hand\nversion: '1'\ndocuments: documents.jsonl\nquestions:\n"
        "  - id: q1\n    question: 'Who?'\n    reference_answer: nobody\n    answerable: false\n"
    )
    done = accept(
        generated, {c.id: Decision(c.id, "accept", "ann")}, folder / "dataset.yaml", tmp_path / "v2"
    )
    assert done.documents == (c.quotes[0].doc_id,) and done.version == "2"
    after = (tmp_path / "v2" / "documents.jsonl").read_text()
    assert after.startswith("".join(kept)) and after.count("\n") == len(kept) + 1
    assert (
        (tmp_path / "v2" / "dataset.yaml")
        .read_text()
        .startswith("name: small  # by hand\nversion: '2'\ndocuments: documents.jsonl\n")
    )


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(picked=st.sets(st.integers(0, 10), min_size=1), clash=st.booleans())
def test_ids_never_clash_and_accepting_again_adds_nothing(
    generated, tmp_path_factory, picked, clash
):
    tmp = tmp_path_factory.mktemp("prop")
    candidates = read_candidates(generated / "candidates.jsonl")
    chosen = [candidates[i] for i in sorted(picked)]
    taken = chosen[0].id if clash else "q1"  # a hand-written question holding a candidate's id
    (tmp / "dataset.yaml").write_text(
        f"name: d\nversion: 1\ndocuments: {EXAMPLE / 'documents.jsonl'}\nquestions:\n"
        f"  - id: {taken}\n    question: 'Other?'\n    reference_answer: x\n    answerable: false\n"
    )
    decisions = {c.id: Decision(c.id, "accept", "ann") for c in chosen}
    once = accept(generated, decisions, tmp / "dataset.yaml", tmp / "v2")
    ids = [q.id for q in load_dataset(tmp / "v2" / "dataset.yaml").questions]
    assert len(ids) == len(set(ids)) == len(chosen) + 1
    assert [cid for cid, _ in once.added] == [c.id for c in chosen]
    again = accept(generated, decisions, tmp / "v2" / "dataset.yaml", tmp / "v3")
    assert again.path is None and again.added == () and len(again.already) == len(chosen)
    assert not (tmp / "v3").exists()


def test_nothing_to_accept_exits_1_and_writes_nothing(generated, tmp_path, capsys):
    out = tmp_path / "v"
    assert _accept_cli(str(generated), "--out", str(out), "--labels", str(tmp_path / "l")) == 1
    assert "nothing to add: nothing written" in capsys.readouterr().out
    assert not out.exists()
