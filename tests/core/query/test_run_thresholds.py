"""One home for the failure thresholds (issue 37, item 5): a run's `failure_thresholds` (its
manifest's config) decide its failure types, the summary's shares below threshold (in
`summary.json` and in the derived cache), the review queue's "correct answer" and the help
text, and nothing keeps a default of its own."""

from __future__ import annotations

import json
import re
from dataclasses import asdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.catalogue import BUILTIN
from rageval_core.labels import LabelSet
from rageval_core.query import ResultsStore, review_queue, runs_overview
from rageval_core.runs.reading import inspect_run
from rageval_core.runs.summary import summarize_run
from rageval_core.thresholds import DEFAULT_THRESHOLDS, FailureThresholds

from .conftest import row, write_run

CORRECTNESS = [1.0, 0.97, 0.9, 0.6, 0.3, None]  # 0.9 and 0.6: below 0.95, not below 0.5
FAITHFULNESS = [1.0, 0.9, 0.85, 0.7, 1.0, 0.5]
UNSUPPORTED = {
    "text": "a claim",
    "verdict": "unsupported",
    "evidence_chunk_id": None,
    "evidence": None,
    "reason": "not in the chunks",
}


def config(name: str, **thresholds: float) -> dict:
    out = {"name": name, "pipeline": {"params": {}}}
    if thresholds:
        out["failure_thresholds"] = thresholds
    return out


def write(results, run_id, cfg) -> None:
    rows = [
        row(f"q{i}", answer_correctness=c, faithfulness=f, claims=[UNSUPPORTED])
        for i, (c, f) in enumerate(zip(CORRECTNESS, FAITHFULNESS, strict=True))
    ]
    write_run(results, run_id, rows, config=cfg)


def test_a_runs_thresholds_decide_its_shares_below_threshold(results):
    write(
        results,
        "20250101-000000-strict",
        config("strict", correctness_min=0.95, faithfulness_min=0.9),
    )
    write(results, "20250102-000000-plain", config("plain"))
    strict = summarize_run(inspect_run(str(results), "20250101-000000-strict"))
    plain = summarize_run(inspect_run(str(results), "20250102-000000-plain"))
    # 0.9, 0.6, 0.3 of the 5 scored answers are below 0.95 (the 0.5 share is 1 of 5)
    assert strict["answer_correctness_below_threshold"] == pytest.approx(3 / 5)
    assert plain["answer_correctness_below_threshold"] == pytest.approx(1 / 5)
    assert strict["faithfulness_below_threshold"] == pytest.approx(3 / 6)  # 0.85, 0.7, 0.5
    assert plain["faithfulness_below_threshold"] == pytest.approx(2 / 6)
    # the derived cache (Runs page, `rageval runs`, compare's overview) agrees with each run
    with ResultsStore(results, read_only=True) as store:
        cached = runs_overview(store).set_index("run_id")
        for run_id, s in (("20250101-000000-strict", strict), ("20250102-000000-plain", plain)):
            for key in ("answer_correctness_below_threshold", "faithfulness_below_threshold"):
                assert cached.loc[run_id, key] == pytest.approx(s[key]), (run_id, key)
        # the review queue's "correct answer" is the run's own correctness_min
        flagged = {
            run_id: {
                q.question_id
                for q in review_queue(store, run_id, LabelSet(), 6)
                if q.reason == "unsupported on a correct answer"
            }
            for run_id in ("20250101-000000-strict", "20250102-000000-plain")
        }
    assert flagged["20250101-000000-strict"] <= {"q0", "q1"}
    assert "q2" not in flagged["20250101-000000-strict"]
    assert "q2" in flagged["20250102-000000-plain"] or len(flagged["20250102-000000-plain"]) == 2


def test_summary_json_of_a_run_with_thresholds(tmp_path, monkeypatch, capsys):
    """Through `rageval run`: the summary it writes counts against the config's threshold,
    and the questions below it are the ones classified `incorrect`."""
    import yaml

    from rageval_core.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "half_pipe.py").write_text(
        "def build():\n"
        "    def pipe(q):\n"
        "        n = int(q.split()[-1].rstrip('?'))\n"
        "        words = ['alpha', 'bravo', 'charlie', 'delta'][: 1 + n % 4]\n"
        "        return {'answer': ' '.join(words), 'retrieved': [{'id': 'c', 'text': "
        "'alpha bravo charlie delta'}]}\n"
        "    return pipe\n"
    )
    chunk = {"id": "c", "doc_id": "d", "text": "alpha bravo charlie delta"}
    (tmp_path / "corpus.jsonl").write_text(json.dumps(chunk) + "\n")
    qs = [
        {
            "id": f"q{i}",
            "question": f"Which words {i}?",
            "reference_answer": "alpha bravo charlie delta",
            "gold_chunk_ids": ["c"],
        }
        for i in range(8)
    ]
    (tmp_path / "d.yaml").write_text(
        yaml.safe_dump({"name": "w", "version": "1", "corpus": "corpus.jsonl", "questions": qs})
    )
    (tmp_path / "strict.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "strict",
                "dataset": "d.yaml",
                "pipeline": {"factory": "half_pipe:build"},
                "failure_thresholds": {"correctness_min": 0.95},
            }
        )
    )
    assert main(["run", "strict.yaml", "--results", "results", "--no-progress"]) == 0
    (run_dir,) = (tmp_path / "results").iterdir()
    import pyarrow.parquet as pq

    rows = pq.read_table(run_dir / "questions.parquet").to_pylist()
    scored = [r["answer_correctness"] for r in rows if r["answer_correctness"] is not None]
    below = sum(c < 0.95 for c in scored) / len(scored)
    assert 0 < below < 1 and below != sum(c < 0.5 for c in scored) / len(scored)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["answer_correctness_below_threshold"] == pytest.approx(below)
    for r in rows:
        if r["failure_type"] == "ok":
            assert r["answer_correctness"] is None or r["answer_correctness"] >= 0.95


def test_the_help_text_and_the_docs_name_the_one_default():
    text = BUILTIN.entry("answer_correctness_below_threshold").definition
    assert f"{DEFAULT_THRESHOLDS.correctness_min:g}" in text and "failure_thresholds" in text
    text = BUILTIN.entry("faithfulness_below_threshold").definition
    assert f"{DEFAULT_THRESHOLDS.faithfulness_min:g}" in text
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[3] / "docs" / "metrics.md").read_text()
    line = next(ln for ln in docs.splitlines() if ln.startswith("| `<metric>_below_threshold`"))
    assert "failure_thresholds" in line and "0.5" not in line and "0.8" not in line
    # the defaults are written once in the docs, and are the code's
    written = dict(re.findall(r"`(\w+_(?:k|min)): ([\d.]+)`", docs))
    assert {k: float(v) for k, v in written.items()} == {
        k: float(v) for k, v in asdict(DEFAULT_THRESHOLDS).items()
    }


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    scores=st.lists(st.none() | st.floats(0, 1), min_size=1, max_size=10),
    cut=st.floats(0, 1),
)
def test_the_share_below_is_the_share_the_run_classifies(tmp_path_factory, scores, cut):
    """Any scores and any `correctness_min`: the summary's share below threshold is the
    share of scored answerable questions whose correctness is below it."""
    root = tmp_path_factory.mktemp("cut")
    rows = [row(f"q{i}", answer_correctness=s) for i, s in enumerate(scores)]
    write_run(root, "20250101-000000-cut", rows, config=config("cut", correctness_min=cut))
    s = summarize_run(inspect_run(str(root), "20250101-000000-cut"))
    scored = [x for x in scores if x is not None]
    want = sum(x < cut for x in scored) / len(scored) if scored else None
    assert s["answer_correctness_below_threshold"] == pytest.approx(want)


def test_recorded_thresholds_read_back_as_the_one_type():
    assert FailureThresholds.recorded({"failure_thresholds": {"correctness_min": 0.95}}) == (
        FailureThresholds(correctness_min=0.95)
    )
    assert FailureThresholds.recorded({}) == DEFAULT_THRESHOLDS


def test_invalid_recorded_thresholds_are_a_problem_of_the_run(results):
    """A hand-edited manifest: its run says why, and its shares use the defaults."""
    write(results, "20250101-000000-odd", config("odd", correctness_min=2))
    s = summarize_run(inspect_run(str(results), "20250101-000000-odd"))
    assert any("correctness_min must be a number between 0 and 1" in p for p in s["problems"])
    assert s["answer_correctness_below_threshold"] == pytest.approx(1 / 5)
    with ResultsStore(results, read_only=True) as store:
        (row_,) = runs_overview(store).to_dict("records")
    assert any("correctness_min" in p for p in row_["problems"])
