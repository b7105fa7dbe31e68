"""`rageval validate` and `rageval import squad` through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rageval_core.cli import main
from rageval_core.dataset import load_dataset


def test_validate_prints_a_one_line_summary(valid_dataset: Path, capsys) -> None:
    sha = load_dataset(valid_dataset).sha256
    assert main(["validate", str(valid_dataset)]) == 0
    out, err = capsys.readouterr()
    assert out == (
        f"ok: handbook-qa version 4: 3 questions (1 unanswerable), 3 chunks, sha256 {sha[:12]}\n"
    )
    assert err == ""


def test_validate_counts_reference_free_questions_apart(capsys) -> None:
    """Sampled questions with no gold and no reference are neither answerable nor
    unanswerable: the summary says how many there are."""
    example = Path(__file__).parents[3] / "rageval_core" / "example" / "questions.yaml"
    ds = load_dataset(example)
    assert main(["validate", str(example)]) == 0
    out = capsys.readouterr().out
    assert "24 questions (0 unanswerable, 18 reference-free)" in out
    assert ds.sha256[:12] in out


def test_validate_lists_every_problem_one_per_line(valid_dataset: Path, capsys) -> None:
    text = valid_dataset.read_text()
    valid_dataset.write_text(text.replace("faq#0", "faq#9").replace("id: q002", "id: q001"))
    assert main(["validate", str(valid_dataset)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"{valid_dataset}:11: question q001: duplicate question id (first at line 6)",
        f"{valid_dataset}:19: question 003: gold chunk 'faq#9' is not in the corpus "
        f"({valid_dataset.parent / 'corpus.jsonl'})",
        f"rageval validate: error: {valid_dataset}: invalid golden dataset (2 problem(s))",
    ]


def test_validate_missing_file_is_one_line_not_a_traceback(tmp_path: Path, capsys) -> None:
    assert main(["validate", str(tmp_path / "none.yaml")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.splitlines()[0] == f"{tmp_path / 'none.yaml'}: cannot read dataset: no such file"


def test_import_squad_then_validate(tmp_path: Path, capsys) -> None:
    squad = tmp_path / "s.json"
    para = {
        "context": "Paris is in France.",
        "qas": [
            {"id": "a", "question": "Where is Paris?", "answers": [{"text": "France"}]},
            {"id": "b", "question": "Where is Atlantis?", "answers": [], "is_impossible": True},
        ],
    }
    squad.write_text(json.dumps({"data": [{"title": "Paris", "paragraphs": [para]}]}))
    out = tmp_path / "ds"
    assert main(["import", "squad", str(squad), "--out", str(out), "--name", "geo"]) == 0
    assert capsys.readouterr().out == (
        f"wrote {out / 'dataset.yaml'}: 2 questions (1 unanswerable), 1 chunks; "
        "answers at their answer_start: 0\n"
        "  1 not at their answer_start, placed at the nearest whole-word match: a\n"
    )
    assert main(["validate", str(out / "dataset.yaml")]) == 0
    assert capsys.readouterr().out.startswith("ok: geo version 1: 2 questions (1 unanswerable)")
    assert main(["import", "squad", str(squad), "--out", str(out)]) == 2
    assert "already exists; use --force" in capsys.readouterr().err
    assert main(["import", "squad", str(squad), "--out", str(out), "--force"]) == 0


def test_import_squad_bad_file_exits_2_naming_it(tmp_path: Path, capsys) -> None:
    squad = tmp_path / "s.json"
    squad.write_text("[]")
    assert main(["import", "squad", str(squad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rageval import: error: {squad}: cannot import SQuAD")
    assert "Traceback" not in err


def test_import_needs_a_format(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["import"])
    assert info.value.code == 2
    assert "FORMAT" in capsys.readouterr().err
