"""`rageval labels to-gold`: gold from the chunks people marked relevant, on id and span
datasets and on the bundled example, with the cases that must not become gold."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core import cli
from rageval_core.dataset import load_dataset
from rageval_core.errors import ConfigError
from rageval_core.labels import LabelStore
from rageval_core.labels.gold import chunks_from_runs, next_version, plan_gold, write_gold
from tests.core.labels.helpers import EXAMPLE, chunk_label, write_jsonl
from tests.core.query.conftest import row, write_run

REPO = Path(__file__).resolve().parents[3]
EXAMPLE_LABELS = REPO / "labels"

A1 = "Cold rooms hold goods between two and eight degrees at all times."
A2 = "Freezers hold goods at minus twenty-five degrees or colder always."
P1 = "Returns are accepted within five calendar days of the delivery date."
P2 = "Returns are accepted within seven calendar days of the delivery date."


QUESTIONS = [
    {
        "id": "q1",
        "question": "Cold room range?",
        "reference_answer": "2 to 8",
        "gold_chunk_ids": ["a#1"],
    },
    {"id": "q2", "question": "Freezer?", "reference_answer": "-25", "gold_chunk_ids": ["a#2"]},
    {"id": "q3", "question": "CEO shoe size?", "reference_answer": None, "gold_chunk_ids": []},
    {"id": "q4", "question": "Return window?", "reference_answer": "7 days"},
]
CHUNKS = [
    {"id": "a#1", "doc_id": "a", "text": A1},
    {"id": "a#2", "doc_id": "a", "text": A2},
    {"id": "p@v1#1", "doc_id": "p", "text": P1, "version": "v1"},
    {"id": "p@v2#1", "doc_id": "p", "text": P2, "version": "v2"},
]


def id_dataset(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    write_jsonl(root / "corpus.jsonl", CHUNKS)
    doc = {"name": "qa", "version": "1", "corpus": "corpus.jsonl", "questions": QUESTIONS}
    (root / "dataset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return root / "dataset.yaml"


def span_dataset(root: Path) -> Path:
    """Documents `a`, `p@v1`, `p@v2`, and one corpus chunk (`x#1`) found in none of them."""
    root.mkdir(parents=True, exist_ok=True)
    stray = {"id": "x#1", "doc_id": "x", "text": "This sentence appears in no document at all."}
    write_jsonl(root / "corpus.jsonl", [*CHUNKS, stray])
    write_jsonl(
        root / "documents.jsonl",
        [
            {"id": "a", "text": f"{A1}\n\n{A2}"},
            {"id": "p@v1", "text": P1, "version": "v1"},
            {"id": "p@v2", "text": P2, "version": "v2"},
        ],
    )
    qs = [
        {
            "id": "q1",
            "question": "Cold?",
            "reference_answer": "2 to 8",
            "gold_spans": [{"doc_id": "a", "start": 0, "end": len(A1)}],
        },
        {"id": "q4", "question": "Return window?", "reference_answer": "7 days"},
    ]
    doc = {
        "name": "qa",
        "version": "1",
        "corpus": "corpus.jsonl",
        "documents": "documents.jsonl",
        "questions": qs,
    }
    (root / "dataset.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return root / "dataset.yaml"


def by_id(plan) -> dict:
    return {c.question_id: c for c in plan.changes}


def gold(plan) -> dict:
    return {q.id: q for q in plan.questions}


def test_id_dataset_extends_labelled_questions_only(tmp_path):
    ds = load_dataset(id_dataset(tmp_path / "ds"))
    labels = [
        chunk_label("q1", "a#2", True),
        chunk_label("q1", "a#1", True),
        chunk_label("q4", "p@v2#1", True),
        chunk_label("q4", "p@v1#1", True),  # superseded by v2
        chunk_label("q4", "gone#9", True),  # not in this version's corpus
        chunk_label("q1", "a#2", True, dataset="other"),  # another dataset: never read
        chunk_label("q9", "a#1", True),  # a question this version does not have
    ]
    plan = plan_gold(ds, labels)
    g, ch = gold(plan), by_id(plan)
    assert g["q1"].gold_chunk_ids == ("a#1", "a#2")
    assert ch["q1"].added == ("a#2",) and ch["q1"].kept == ("a#1",)
    assert g["q2"] == ds.questions[1]  # no labels: untouched
    assert "q2" not in ch
    # a question with a reference and no gold key gets its first retrieval gold
    assert g["q4"].gold_chunk_ids == ("p@v2#1",) and g["q4"].answerability == "answerable"
    why = {s.chunk_id: s.why for s in ch["q4"].skipped}
    assert why["p@v1#1"].startswith("superseded") and "not in this dataset" in why["gone#9"]
    assert plan.unknown_questions == ("q9",)
    assert plan.version == "2" and plan.sha256 != ds.sha256


def test_unanswerable_stays_unanswerable(tmp_path):
    ds = load_dataset(id_dataset(tmp_path / "ds"))
    plan = plan_gold(ds, [chunk_label("q3", "a#1", True), chunk_label("q3", "a#2", False)])
    assert gold(plan)["q3"].answerability == "unanswerable"
    assert gold(plan)["q3"].gold_chunk_ids == ()
    assert [s.chunk_id for s in by_id(plan)["q3"].skipped] == [
        "a#1"
    ]  # the irrelevant one is not news


def test_replace_drops_unlabelled_gold_and_extend_reports_irrelevant_gold(tmp_path):
    ds = load_dataset(id_dataset(tmp_path / "ds"))
    labels = [chunk_label("q1", "a#1", False), chunk_label("q1", "a#2", True)]
    extended = plan_gold(ds, labels)
    assert gold(extended)["q1"].gold_chunk_ids == ("a#1", "a#2")
    assert "--replace" in by_id(extended)["q1"].skipped[0].why
    replaced = plan_gold(ds, labels, replace_gold=True)
    assert gold(replaced)["q1"].gold_chunk_ids == ("a#2",)
    assert by_id(replaced)["q1"].removed == ("a#1",) and replaced.replace_gold
    # replacing never empties gold: no chunk marked relevant leaves it as it was
    none = plan_gold(ds, [chunk_label("q1", "a#1", False)], replace_gold=True)
    assert gold(none)["q1"].gold_chunk_ids == ("a#1",)


def test_disagreement_is_reported_not_applied_and_newest_label_wins(tmp_path):
    ds = load_dataset(id_dataset(tmp_path / "ds"))
    labels = [
        chunk_label("q1", "a#2", True, reviewer="ann"),
        chunk_label("q1", "a#2", False, reviewer="bob"),
        # bob's earlier mind, then his newest (on another dataset version): relevant
        chunk_label("q2", "a#1", False, reviewer="bob", at="2026-01-01T00:00:00Z"),
        chunk_label("q2", "a#1", True, reviewer="bob", sha="c" * 64, at="2026-03-01T00:00:00Z"),
    ]
    plan = plan_gold(ds, labels, replace_gold=True)
    q1 = by_id(plan)["q1"]
    assert gold(plan)["q1"].gold_chunk_ids == ("a#1",) and not q1.changed
    assert q1.skipped[0].why == "reviewers disagree (ann: relevant, bob: irrelevant)"
    assert gold(plan)["q2"].gold_chunk_ids == ("a#1",)  # replaced by bob's newest label


def test_span_dataset_places_chunks_and_reports_unplaceable(tmp_path):
    ds = load_dataset(span_dataset(tmp_path / "ds"))
    labels = [
        chunk_label("q1", "a#2", True),
        chunk_label("q1", "a#1", True),
        chunk_label("q1", "x#1", True),
        chunk_label("q4", "p@v2#1", True),
    ]
    plan = plan_gold(ds, labels)
    start = len(A1) + 2
    assert [(s.doc_id, s.start, s.end) for s in gold(plan)["q1"].gold_spans] == [
        ("a", 0, len(A1)),
        ("a", start, start + len(A2)),
    ]
    assert gold(plan)["q1"].gold_chunk_ids == ()  # the question gave spans only
    ch = by_id(plan)
    assert ch["q1"].added == (f"a:{start}-{start + len(A2)}",)
    assert [(s.chunk_id, "cannot be placed" in s.why) for s in ch["q1"].skipped] == [("x#1", True)]
    assert gold(plan)["q4"].gold_spans[0].doc_id == "p@v2"
    written = load_dataset(write_gold(plan, tmp_path / "v2"))
    assert written.sha256 == plan.sha256 and len(written.documents) == 3


def test_span_dataset_takes_a_chunk_outside_the_corpus_from_its_run(tmp_path):
    """A pipeline with its own chunking: the labelled id is in no corpus, its text in the
    run the label names, and the span comes from placing that text."""
    ds = load_dataset(span_dataset(tmp_path / "ds"))
    own = "Freezers hold goods at minus twenty-five"  # a piece of A2
    retrieved = ["mine-7", "mine-8"]
    r = row("q4", retrieved=retrieved, gold=["mine-7"])
    r["retrieved_texts"] = [own, "short"]
    write_run(tmp_path / "results", "20260101-000000-own", [r])
    labels = [
        chunk_label("q4", "mine-7", True, run_id="20260101-000000-own"),
        chunk_label("q4", "mine-8", True, run_id="20260101-000000-own"),  # too short to place
        chunk_label("q4", "mine-9", True, run_id="20260101-000000-own"),  # not in the run
        chunk_label("q4", "mine-5", True, run_id="20260101-000000-gone"),
        chunk_label("q4", "mine-6", True),  # no run named
    ]
    found = chunks_from_runs(str(tmp_path / "results"), labels, ds)
    plan = plan_gold(ds, labels, retrieved=found)
    start = len(A1) + 2
    assert [(s.doc_id, s.start, s.end) for s in gold(plan)["q4"].gold_spans] == [
        ("a", start, start + len(own))
    ]
    why = {s.chunk_id: s.why for s in by_id(plan)["q4"].skipped}
    assert "cannot be placed" in why["mine-8"]
    assert "nor among what run 20260101-000000-own retrieved" in why["mine-9"]
    assert "20260101-000000-gone is not in" in why["mine-5"]
    assert "names no run" in why["mine-6"]


def test_bundled_labels_on_the_bundled_dataset(tmp_path):
    ds = load_dataset(EXAMPLE)
    found = LabelStore(str(EXAMPLE_LABELS)).load(ds.name)
    assert not found.problems
    plan = plan_gold(ds, found.labels)
    g, ch = gold(plan), by_id(plan)
    for before, after in zip(ds.questions, plan.questions, strict=True):
        new_ids = set(after.gold_chunk_ids) - set(before.gold_chunk_ids)
        new_spans = set(after.gold_spans) - set(before.gold_spans)
        assert not any("@v1#" in c for c in new_ids), before.id  # superseded chunks
        assert not any(s.doc_id.endswith("@v1") for s in new_spans), before.id
    assert any(s.why.startswith("superseded") for s in ch["q041"].skipped)
    for qid in ("q084", "q087", "q090"):
        assert g[qid].answerability == "unanswerable" and not g[qid].has_retrieval_gold
        assert ch[qid].skipped and all("unanswerable" in s.why for s in ch[qid].skipped)
    written = load_dataset(write_gold(plan, tmp_path / "v4"))
    assert written.sha256 == plan.sha256 != ds.sha256 and written.version == "4"


def test_refuses_to_overwrite(tmp_path):
    src = id_dataset(tmp_path / "ds")
    plan = plan_gold(load_dataset(src), [chunk_label("q1", "a#2", True)])
    with pytest.raises(ConfigError, match="never over the input"):
        write_gold(plan, src.parent)
    write_gold(plan, tmp_path / "v2")
    with pytest.raises(ConfigError, match="already exists"):
        write_gold(plan, tmp_path / "v2")
    assert load_dataset(src).sha256 != plan.sha256  # the input is as it was


@pytest.mark.parametrize(
    ("old", "new"), [("3", "4"), ("2.9", "2.10"), ("v7", "v8"), ("beta", "beta-gold")]
)
def test_next_version(old, new):
    assert next_version(old) == new


CHUNK_IDS = ("a#1", "a#2", "p@v1#1", "p@v2#1", "gone#1")
LABELS = st.lists(
    st.tuples(
        st.sampled_from(("q1", "q2", "q3", "q4")),
        st.sampled_from(CHUNK_IDS),
        st.booleans(),
        st.sampled_from(("ann", "bob")),
    ),
    max_size=12,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=LABELS, replace_gold=st.booleans(), spans=st.booleans())
def test_twice_is_once_and_unlabelled_questions_are_untouched(tmp_path, raw, replace_gold, spans):
    root = tmp_path / ("spans" if spans else "ids")
    path = root / "dataset.yaml"
    if not path.exists():
        (span_dataset if spans else id_dataset)(root)
    ds = load_dataset(path)
    labels = [chunk_label(q, c, r, reviewer=who) for q, c, r, who in raw]
    once = plan_gold(ds, labels, replace_gold=replace_gold)
    twice = plan_gold(replace(ds, questions=once.questions), labels, replace_gold=replace_gold)
    assert twice.questions == once.questions
    assert not any(c.changed for c in twice.changes)
    labelled = {q for q, *_ in raw}
    for before, after in zip(ds.questions, once.questions, strict=True):
        if before.id not in labelled:
            assert after == before
        if before.answerability == "unanswerable":
            assert after == before


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_writes_a_version_that_validates(tmp_path, capsys):
    src = id_dataset(tmp_path / "ds")
    store = LabelStore(str(tmp_path / "labels"))
    hostile = "x\x1b[2J\nq2: +forged"  # label text printed: one line, no escape codes
    store.save(
        [
            chunk_label("q1", "a#2", True),
            chunk_label("q4", "p@v1#1", True),
            chunk_label("q4", hostile, True),
            chunk_label("q\x1b[31m", "a#1", True),
        ]
    )
    out_dir = tmp_path / "v2"
    code, out, err = run_cli(
        capsys,
        "labels",
        "to-gold",
        "--dataset",
        str(src),
        "--out",
        str(out_dir),
        "--labels",
        str(tmp_path / "labels"),
    )
    assert code == 0, err
    assert "q1: +a#2" in out
    assert "skipped p@v1#1: superseded: p has a newer version (v2)" in out
    assert "\x1b" not in out and "\nq2: +forged" not in out
    new = load_dataset(out_dir / "dataset.yaml")
    assert f"sha256 {new.sha256}" in out and "version 2 (from 1)" in out and "extended" in out
    assert run_cli(capsys, "validate", str(out_dir / "dataset.yaml"))[0] == 0
    # the same again into the same folder, or into the input's folder: refused, exit 2
    for target in (out_dir, src.parent):
        code, _, err = run_cli(
            capsys,
            "labels",
            "to-gold",
            "--dataset",
            str(src),
            "--out",
            str(target),
            "--labels",
            str(tmp_path / "labels"),
        )
        assert code == 2 and "error:" in err


def test_cli_bad_inputs_exit_2_naming_the_file(tmp_path, capsys):
    src = id_dataset(tmp_path / "ds")
    labels = tmp_path / "labels"
    LabelStore(str(labels)).save([chunk_label("q1", "a#2", True)])
    bad = labels / "qa" / "ann" / "20260301T000000.000000Z-bad.jsonl"
    bad.write_text('{"dataset": "qa"}\n')
    args = ["labels", "to-gold", "--dataset", str(src), "--out", str(tmp_path / "o")]
    code, _, err = run_cli(capsys, *args, "--labels", str(labels))
    assert code == 2 and f"{bad}:1" in err
    code, _, err = run_cli(capsys, *args, "--labels", str(tmp_path / "nothing"))
    assert code == 2 and "no chunk labels of dataset qa" in err
    broken = tmp_path / "broken.yaml"
    shutil.copy(src, broken)
    broken.write_text(broken.read_text() + "  - id: q1\n    question: dup\n")
    code, _, err = run_cli(
        capsys,
        "labels",
        "to-gold",
        "--dataset",
        str(broken),
        "--out",
        str(tmp_path / "o2"),
        "--labels",
        str(labels),
    )
    assert code == 2 and "broken.yaml" in err
    assert not (tmp_path / "o").exists() and not (tmp_path / "o2").exists()
