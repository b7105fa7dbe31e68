"""`rageval calibrate` over the labels location (the Judge page's figures), `rageval labels
export` (CSV, and YAML that the older loader reads back), and the bundled example labels."""

from __future__ import annotations

import csv
import io
import shutil
from collections import Counter
from pathlib import Path

from rageval_core.labels import LabelSet, LabelStore
from rageval_core.labels.example import EXAMPLE_RUN, example_labels, write_example_labels
from rageval_core.labels.older_yaml import Label, load_labels
from rageval_core.query import judge_reports, relevance_agreement
from rageval_core.store.results import ResultsStore
from tests.core.labels.helpers import R1, R3, TOWERS_WHY, judged_row, label, run_cli, write_run

REPO = Path(__file__).resolve().parents[3]
NEVER_REFUSE = "20261119-090000-never-refuse"


def test_calibrate_prints_the_judge_figures_of_every_run_of_the_judge(project):
    code, out, _ = run_cli("calibrate", "--run", R1, "--results", str(project / "results"))
    assert code == 0
    with ResultsStore(project / "results") as store:
        labels = LabelStore(str(project / "labels")).load()
        offline = next(r for r in judge_reports(store, labels) if r.judge.kind == "offline")
    k = offline.claims
    assert f"Cohen's kappa {k.kappa:.3f} (95% CI {k.kappa_low:.3f} to {k.kappa_high:.3f})" in out
    assert f"n {k.n}   agreement {k.raw:.3f}" in out
    assert "(2 run(s): " in out and R3 not in out  # the LLM judge's run is another judge
    assert "Claims: 5 labelled, 5 matched, 0 unmatched" in out  # Bergen: only in R2
    # the disagreement on the towers, with the judge's reason read from its run
    towers = out.split('q1 "It has 3 towers.": human supported, judge unsupported')[1]
    assert towers.splitlines()[1].strip() == f"judge's reason: {TOWERS_WHY}"
    assert "Questions (faithful): 1 labelled, 1 matched" in out


def test_calibrate_merges_an_older_yaml_with_an_explicit_location(project):
    yaml_file = project / "old.yaml"
    yaml_file.write_text("labels:\n  - {question_id: q2, claim: 'Rome.', verdict: contradicted}\n")
    code, out, _ = run_cli(
        "calibrate",
        str(yaml_file),
        "--run",
        R1,
        "--results",
        str(project / "results"),
        "--labels",
        str(project / "labels"),
    )
    assert code == 0 and "Claims: 6 labelled" in out
    assert 'q2 "Rome.": human contradicted, judge supported' in out
    # the YAML alone: that run only, the location is not read
    code, out, _ = run_cli(
        "calibrate", str(yaml_file), "--run", R1, "--results", str(project / "results")
    )
    assert "Claims: 1 labelled, 1 matched" in out and "(1 run(s): " in out


def test_calibrate_warns_about_bad_label_lines_on_stderr(project):
    bad = project / "labels" / "qa" / "ann" / "broken.jsonl"
    bad.write_text("{oops\n")
    code, out, err = run_cli("calibrate", "--run", R1, "--results", str(project / "results"))
    assert code == 0 and f"{bad}:1: not JSON" in err and "broken" not in out


def test_export_csv_has_every_field_and_neutralises_formulas(project):
    out_file = project / "labels.csv"
    code, _, _ = run_cli(
        "labels", "export", "--results", str(project / "results"), "--out", str(out_file)
    )
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out_file.read_text())))
    assert len(rows) == 6
    towers = [r for r in rows if r["claim"] == "It has 3 towers." and r["reviewer"] == "ann"]
    assert towers[0]["note"] == "'=HYPERLINK(1)"


def test_export_yaml_loads_with_the_older_loader(project, tmp_path):
    code, out, _ = run_cli(
        "labels",
        "export",
        "--format",
        "yaml",
        "--reviewer",
        "ann",
        "--labels",
        str(project / "labels"),
    )
    assert code == 0
    path = tmp_path / "exported.yaml"
    path.write_text(out)
    assert set(load_labels(path)) == {
        Label("q1", "supported", "Paris is big."),
        Label("q1", "supported", "It has 3 towers."),
        Label("q3", "unsupported", "Oslo."),
        Label("q3", "unsupported", "Bergen."),
        Label("q2", "faithful"),
    }


def test_export_yaml_refuses_two_reviewers_of_one_claim(project):
    code, out, err = run_cli(
        "labels", "export", "--format", "yaml", "--labels", str(project / "labels")
    )
    assert code == 2 and out == "" and "--reviewer" in err


def test_bundled_labels_are_the_example_labels_of_the_bundled_results(tmp_path):
    bundled = sorted((REPO / "labels").rglob("*.jsonl"))
    assert len(bundled) == 1
    want = "".join(lab.to_line() + "\n" for lab in example_labels(REPO / "results"))
    assert bundled[0].read_text() == want
    # claims and questions, chunks, answers of the memorising run; answers, chunks of never-refuse
    assert len(want.splitlines()) == 98 + 285 + 86 + 98 + 271


def test_each_example_file_labels_its_own_run_and_no_file_repeats_another():
    labels = example_labels(REPO / "results")
    runs = Counter((lab.run_id, lab.kind) for lab in labels)
    assert runs == {
        (EXAMPLE_RUN, "claim"): 92,
        (EXAMPLE_RUN, "question"): 6,
        (EXAMPLE_RUN, "chunk"): 285,
        (EXAMPLE_RUN, "answer"): 86,
        (NEVER_REFUSE, "answer"): 98,
        (NEVER_REFUSE, "chunk"): 271,
    }
    # the location keeps the newest label per key: a repeated key would drop one silently
    assert len({lab.key() for lab in labels}) == len(labels)


def test_example_answer_labels_have_both_classes_so_kappa_is_defined(tmp_path):
    results = tmp_path / "results"
    for run in (EXAMPLE_RUN, NEVER_REFUSE):
        shutil.copytree(REPO / "results" / run, results / run)
    labels = LabelSet(example_labels(results))
    answers = Counter(lab.value for lab in labels.labels if lab.kind == "answer")
    assert answers == {"relevant": 86 + 71, "irrelevant": 27}
    with ResultsStore(str(results)) as store:
        got = relevance_agreement(store, labels, [EXAMPLE_RUN, NEVER_REFUSE], n_boot=200)
    a = got["answer relevancy"]
    assert a.n == 184 and a.kappa is not None and a.kappa > 0 and a.kappa_low is not None


def test_an_example_file_whose_run_is_absent_gives_no_labels(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(REPO / "results" / NEVER_REFUSE, results / NEVER_REFUSE)
    labels = example_labels(results)
    assert len(labels) == 98 + 271
    assert {lab.run_id for lab in labels} == {NEVER_REFUSE}


def test_demo_writes_the_example_labels_only_when_absent(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(REPO / "results" / EXAMPLE_RUN, results / EXAMPLE_RUN)
    path = write_example_labels(results)
    assert path is not None and path.is_relative_to(tmp_path / "labels")
    path.write_text("kept\n")
    assert write_example_labels(results) is None and path.read_text() == "kept\n"


def test_calibrate_prints_no_terminal_escapes_from_claims_or_notes(tmp_path):
    evil = "Evil \x1b[2J\x1b]0;pwned\x07 claim."
    rows = [judged_row("q1", [(evil, "supported", "because \x1b[31mred\x1b[0m")])]
    write_run(tmp_path / "results", R1, rows)
    LabelStore(str(tmp_path / "labels")).save(
        [label("q1", "Evil \x1b[2J\x1b]0;pwned\x07 claim.", "unsupported")]
    )
    code, out, _ = run_cli("calibrate", "--run", R1, "--results", str(tmp_path / "results"))
    assert code == 0 and "human unsupported, judge supported" in out
    assert "judge's reason: because [31mred [0m" in out  # the escape byte is gone
    assert "\x1b" not in out and "\x07" not in out
