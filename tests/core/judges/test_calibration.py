"""Calibration: Cohen's kappa by hand, label loading, matching, and the CLI on a real run."""

from __future__ import annotations

import pytest

from rageval_core import cli
from rageval_core.errors import DatasetError
from rageval_core.labels import cohen_kappa
from rageval_core.labels.older_yaml import Label, load_labels
from rageval_core.models import DatasetRef, JudgeRef, RunManifest
from rageval_core.runs.atomic import atomic_write_json, write_parquet
from rageval_core.runs.manifest import manifest_to_dict
from rageval_core.runs.rows import rows_to_table


def test_kappa_two_categories_textbook_example():
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 → p_o 0.7, p_e 0.5, κ 0.4.
    pairs = [("y", "y")] * 20 + [("y", "n")] * 5 + [("n", "y")] * 10 + [("n", "n")] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)


def test_kappa_three_categories_hand_computed():
    human = "S S S S S U U U C C".split()
    judge = "S S S S U U U S C U".split()
    # p_o = 7/10; p_e = (5·5 + 3·4 + 2·1) / 100 = 0.39; κ = 0.31 / 0.61.
    assert cohen_kappa(list(zip(human, judge, strict=True))) == pytest.approx(0.31 / 0.61)


def test_kappa_edge_cases():
    assert cohen_kappa([]) is None
    assert cohen_kappa([("a", "a")] * 5) is None  # one shared category: chance explains all
    assert cohen_kappa([("a", "a"), ("b", "b")]) == 1.0
    assert cohen_kappa([("a", "b"), ("b", "a")]) == pytest.approx(-1.0)


def test_load_labels_lists_every_problem(tmp_path):
    path = tmp_path / "labels.yaml"
    path.write_text(
        "labels:\n"
        "  - {question_id: q1, claim: 'A.', verdict: supported}\n"
        "  - {question_id: q1, claim: 'a', verdict: unsupported}\n"
        "  - {question_id: q2, claim: 'B', verdict: maybe}\n"
        "  - {question_id: q3, faithful: 'yes'}\n"
        "  - {claim: 'C', verdict: supported}\n"
    )
    with pytest.raises(DatasetError) as err:
        load_labels(path)
    assert len(err.value.problems) == 4
    text = str(err.value)
    assert "labels[1] (q1): duplicate label" in text
    assert "labels[2] (q2): verdict must be one of" in text
    assert "labels[3] (q3): needs claim + verdict, chunk_id + relevant, answer + " in text
    assert "labels[4]: needs a question_id" in text


ROWS = [
    {
        "question_id": "q1",
        "faithfulness": 0.5,
        "judge_error": None,
        "claims": [
            {"text": "The museum opened in 1998.", "verdict": "supported", "reason": "found"},
            {"text": "It has four floors.", "verdict": "supported", "reason": "67% found"},
        ],
    },
    {"question_id": "q2", "faithfulness": None, "judge_error": None, "claims": []},
    {"question_id": "q3", "faithfulness": 1.0, "judge_error": None, "claims": []},
]


def written_run(tmp_path):
    run_id = "20260101-000000-test"
    run_dir = tmp_path / "results" / run_id
    manifest = RunManifest(
        run_id=run_id,
        status="complete",
        created_at="2026-01-01T00:00:00Z",
        config={},
        dataset=DatasetRef("d", "1", "0" * 64, 3),
        judge=JudgeRef("offline"),
    )
    atomic_write_json(run_dir / "manifest.json", manifest_to_dict(manifest))
    rows = [{**r, "run_id": run_id} for r in ROWS]
    write_parquet(run_dir / "questions.parquet", rows_to_table(rows))
    return run_id


def test_calibrate_matches_normalised_text_and_reports_the_rest(tmp_path, capsys):
    run_id = written_run(tmp_path)
    labels = tmp_path / "labels.yaml"
    labels.write_text(
        "labels:\n"
        "  - {question_id: q1, claim: 'the museum opened in 1998', verdict: supported}\n"
        "  - {question_id: q1, claim: 'It has four floors', verdict: contradicted}\n"
        "  - {question_id: q1, claim: 'It has a garden.', verdict: unsupported}\n"
        "  - {question_id: q9, claim: 'Anything.', verdict: supported}\n"
        "  - {question_id: q1, faithful: false}\n"
        "  - {question_id: q2, faithful: true}\n"
        "  - {question_id: q3, faithful: true}\n"
    )
    code = cli.main(
        ["calibrate", str(labels), "--run", run_id, "--results", str(tmp_path / "results")]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "Claims: 4 labelled, 2 matched, 2 unmatched" in out
    assert "n 2   agreement 0.500   Cohen's kappa 0.000" in out
    assert f'q1 "It has four floors": human contradicted, judge supported (run {run_id}' in out
    assert 'q1 "It has a garden.": no run of this judge has it' in out
    assert 'q9 "Anything.": no run of this judge has it' in out
    # q2 has no faithfulness (no claims): its label pairs with nothing
    assert "Questions (faithful): 3 labelled, 2 matched, 1 unmatched" in out
    assert "    q2: no run of this judge has it" in out


def test_calibrate_command_unknown_run_is_one_clear_error(tmp_path, capsys):
    labels = tmp_path / "labels.yaml"
    labels.write_text("labels: [{question_id: q1, faithful: true}]\n")
    code = cli.main(["calibrate", str(labels), "--run", "nope", "--results", str(tmp_path)])
    assert code == 2
    assert "no such run" in capsys.readouterr().err


def test_numeric_looking_ids_and_claims_keep_their_text(tmp_path):
    # The golden dataset keeps `id: 001` as the text "001" (dataset.py); a label must match
    # it, not become "1" and be reported as "question not in the run".
    path = tmp_path / "labels.yaml"
    path.write_text(
        "labels:\n"
        "  - {question_id: 001, claim: 1998, verdict: supported}\n"
        "  - {question_id: 1.10, faithful: true}\n"
    )
    assert load_labels(path) == [
        Label("001", "supported", "1998"),
        Label("1.10", "faithful"),
    ]
