"""The split control end to end (issue 32, item 1): two real runs of one config, the same
retrieved window as 1 chunk or as 4 contiguous pieces (placed by their text in the
dataset's document), identical answers — identical generation figures, and
`rageval check --baseline latest` passes."""

from __future__ import annotations

import json

import yaml

from rageval_core.cli import main
from rageval_core.runs.reading import inspect_run, read_run_rows

MANUAL = (
    "git-rebase - Reapply commits on top of another base tip. "
    "If a conflict stops the rebase, git prints the paths that need attention. "
    "Edit each file until the conflict markers are gone. "
    "Then stage the result with git add and run git rebase --continue. "
    "To give up, run git rebase --abort and the branch returns to where it was. "
    "The option --skip drops the commit that caused the conflict. "
    "Interactive mode opens an editor with one line for each commit to replay. "
    "Autosquash moves fixup commits next to the commits they amend."
)
QUESTIONS = {
    "q1": (
        "How do I continue a rebase after fixing a conflict?",
        "Stage the result with git add and run git rebase --continue.",
    ),
    "q2": (
        "How do I give up on a rebase?",
        "Run git rebase --abort and the branch returns to where it was.",
    ),
    "q3": ("What does the --skip option do?", "It drops the commit that caused the conflict."),
}
APP = """
MANUAL = {manual!r}
ANSWERS = {answers!r}


def build(pieces):
    start, end = MANUAL.index("If a conflict"), MANUAL.index("Autosquash")
    window = MANUAL[start:end]
    # cuts inside sentences: "... git add | and run git rebase --continue."
    cuts = [0, window.index("and run"), window.index("returns to"), window.index("caused"),
            len(window)][:: 1 if pieces == 4 else 4]

    def pipeline(question):
        return {{
            "answer": ANSWERS[question],
            "retrieved": [
                {{"id": f"man#{{a}}", "text": window[a:b]}} for a, b in zip(cuts, cuts[1:])
            ],
        }}

    return pipeline
"""
ANSWERS = {
    QUESTIONS["q1"][0]: "Edit each file until the conflict markers are gone. Then stage the "
    "result with git add and run git rebase --continue.",
    QUESTIONS["q2"][0]: "To give up, run git rebase --abort and the branch returns to where "
    "it was.",
    QUESTIONS["q3"][0]: "The option --skip drops the commit that caused the conflict.",
}
FIGURES = ("faithfulness", "answer_correctness", "context_recall")


def project(tmp_path):
    (tmp_path / "documents.jsonl").write_text(json.dumps({"id": "git-rebase", "text": MANUAL}))
    questions = [
        {
            "id": qid,
            "question": q,
            "reference_answer": ref,
            "gold_spans": [{"doc_id": "git-rebase", "text": ref.split(" ", 1)[1][:30]}],
        }
        for qid, (q, ref) in QUESTIONS.items()
    ]
    questions[2]["gold_spans"] = [{"doc_id": "git-rebase", "text": "drops the commit"}]
    (tmp_path / "dataset.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "manual",
                "version": "1",
                "documents": "documents.jsonl",
                "questions": questions,
            }
        )
    )
    (tmp_path / "split_control_app.py").write_text(APP.format(manual=MANUAL, answers=ANSWERS))
    configs = []
    for pieces in (1, 4):
        path = tmp_path / f"pieces{pieces}.yaml"
        path.write_text(
            yaml.safe_dump(
                {
                    "name": "manual-app",
                    "dataset": "dataset.yaml",
                    "pipeline": {
                        "factory": "split_control_app:build",
                        "params": {"pieces": pieces},
                    },
                }
            )
        )
        configs.append(path)
    return configs


def figures(results, run_id):
    rows = read_run_rows(inspect_run(str(results), run_id))[0].to_pylist()
    return {r["question_id"]: tuple(r[f] for f in FIGURES) for r in rows}, rows


def test_one_chunk_or_four_pieces_give_the_same_figures_and_check_passes(tmp_path, capsys):
    results = tmp_path / "results"
    common = ["--results", str(results), "--no-progress"]
    one, four = project(tmp_path)
    assert main(["run", str(one), "--run-id", "a-whole", *common]) == 0
    assert main(["run", str(four), "--run-id", "b-pieces", *common]) == 0
    capsys.readouterr()
    whole, _ = figures(results, "a-whole")
    split, rows = figures(results, "b-pieces")
    assert all(len(r["retrieved_texts"]) == 4 and r["n_unplaced"] == 0 for r in rows)
    assert whole == split
    assert whole["q1"] == (1.0, 1.0, 1.0)  # the quote across "git add | and run" holds
    limits = tmp_path / "limits.yaml"
    limits.write_text("".join(f"{f}: {{max_drop: 0.0}}\n" for f in FIGURES))
    code = main(
        [
            "check",
            "b-pieces",
            "--baseline",
            "latest",
            "--thresholds",
            str(limits),
            "--results",
            str(results),
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    assert "baseline: a-whole" in out.out


def test_a_rescore_reads_the_places_the_run_recorded(tmp_path, capsys):
    """`rageval rescore` judges the pieces again from the row's texts: the places the run
    recorded keep them one passage."""
    results = tmp_path / "results"
    common = ["--results", str(results), "--no-progress"]
    one, four = project(tmp_path)
    assert main(["run", str(one), "--run-id", "a-whole", *common]) == 0
    assert main(["run", str(four), "--run-id", "b-pieces", *common]) == 0
    judge = tmp_path / "judge.yaml"
    judge.write_text("kind: offline\n")
    args = ["rescore", "b-pieces", "--judge", str(judge), "--run-id", "c-again", *common]
    assert main(args) == 0, capsys.readouterr().err
    assert figures(results, "c-again")[0] == figures(results, "a-whole")[0]
