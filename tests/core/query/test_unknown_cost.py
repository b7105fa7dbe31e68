"""Unknown is "–", never $0 (issue 37, item 3): a pipeline that reports no token counts has
no cost, and every figure, command and the report say so; a cost known for some questions
says how many it covers. Real runs through `rageval run`, read back from their files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.charts import pareto
from rageval_core.cli import main
from rageval_core.query import ResultsStore, cost_quality
from rageval_core.runs.layout import MANIFEST, SUMMARY
from rageval_core.runs.reading import inspect_run
from rageval_core.runs.summary import summarize_run

from .conftest import row, write_run

N = 6
PIPELINE = """
def build(tokens_for=()):
    def pipe(question):
        n = int(question.rstrip("?").split()[-1])
        out = {
            "answer": f"Fact {n} is {n * 7}.",
            "retrieved": [{"id": f"f{n}", "text": f"Fact {n} is {n * 7}."}],
            "total_ms": 10.0 + n,
        }
        if n in tokens_for:
            out.update(input_tokens=1000, output_tokens=100)
        return out
    return pipe
"""


def project(root: Path, name: str, tokens_for: list[int]) -> Path:
    """A dataset of N fact questions, the pipeline module, and a config `name`."""
    (root / "cost_pipe.py").write_text(PIPELINE)
    corpus = [
        {"id": f"f{i}", "doc_id": "facts", "text": f"Fact {i} is {i * 7}."} for i in range(1, N + 1)
    ]
    (root / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    questions = [
        {
            "id": f"q{i}",
            "question": f"What is fact {i}?",
            "reference_answer": str(i * 7),
            "gold_chunk_ids": [f"f{i}"],
        }
        for i in range(1, N + 1)
    ]
    data = {"name": "facts", "version": "1", "corpus": "corpus.jsonl", "questions": questions}
    (root / "dataset.yaml").write_text(yaml.safe_dump(data))
    config = {
        "name": name,
        "dataset": "dataset.yaml",
        "pipeline": {"factory": "cost_pipe:build", "params": {"tokens_for": tokens_for}},
        "prices": {"input_per_1k_tokens": 0.002, "output_per_1k_tokens": 0.01},
        "concurrency": 1,
    }
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def runs(tmp_path, monkeypatch, capsys):
    """`runs(name, tokens_for)`: a complete run made by `rageval run`; (run id, its output)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))

    def make(name: str, tokens_for: list[int]) -> tuple[str, str]:
        config = project(tmp_path, name, tokens_for)
        assert main(["run", str(config), "--results", "results", "--no-progress"]) == 0
        out = capsys.readouterr().out
        run_id = re.search(r"complete: (\S+) —", out).group(1)
        return run_id, out

    return make


def manifest(results: Path, run_id: str) -> dict:
    return json.loads((results / run_id / MANIFEST).read_text())


def test_a_run_without_token_counts_has_no_cost(runs, tmp_path):
    run_id, out = runs("nocost", [])
    summary = json.loads((tmp_path / "results" / run_id / SUMMARY).read_text())
    for key in ("cost_usd_per_question", "cost_usd_total", "total_cost_per_question"):
        assert summary[key] is None, key
    assert summary["n_cost_usd"] == 0 and summary["n_questions"] == N
    assert manifest(tmp_path / "results", run_id)["totals"]["cost_usd"] is None
    # the end-of-run line and its headline
    assert "cost – (+ judge $0.00)" in out
    assert re.search(r"cost / question \(\$\)\s+–", out), out
    assert "$0.00 " not in out.replace("judge $0.00", "")


def test_tokens_without_prices_are_an_unknown_cost(tmp_path, monkeypatch, capsys):
    """A config with no `prices:` priced nothing: its cost is unknown, not $0.00."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = project(tmp_path, "unpriced", list(range(1, N + 1)))
    data = yaml.safe_load(config.read_text())
    del data["prices"]
    config.write_text(yaml.safe_dump(data))
    assert main(["run", str(config), "--results", "results", "--no-progress"]) == 0
    out = capsys.readouterr().out
    run_id = re.search(r"complete: (\S+) —", out).group(1)
    m = manifest(tmp_path / "results", run_id)
    assert m["totals"]["cost_usd"] is None and "prices" not in m["config"]
    assert re.search(r"cost / question \(\$\)\s+–", out), out
    summary = json.loads((tmp_path / "results" / run_id / SUMMARY).read_text())
    assert summary["cost_usd_per_question"] is None


def test_a_sharded_run_without_token_counts_has_no_cost(tmp_path, monkeypatch, capsys):
    """Shards' totals are merged: a cost no shard knows stays unknown (it was summed to 0)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = project(tmp_path, "sharded", [])
    for shard in ("1/2", "2/2"):
        args = ["run", str(config), "--results", "results", "--run-id", "sh", "--shard", shard]
        assert main([*args, "--no-progress"]) == 0
    totals = manifest(tmp_path / "results", "sh")["totals"]
    assert totals["cost_usd"] is None and totals["n_cost_usd"] == 0
    assert totals["judge_cost_usd"] == 0.0  # the offline judge is free: known, 0


def test_rageval_runs_and_the_report_show_a_dash(runs, tmp_path, capsys):
    run_id, _ = runs("nocost", [])
    assert main(["runs", "--results", "results"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(run_id))
    assert line.rstrip().endswith("–") and "$0" not in line
    assert main(["runs", "--results", "results", "--format", "json"]) == 0
    (figures,) = [r["figures"] for r in json.loads(capsys.readouterr().out)]
    assert figures["total_cost_per_question"] is None

    assert main(["report", run_id, "--out", "r.html", "--results", "results"]) == 0
    html = (tmp_path / "r.html").read_text()
    row = re.search(r"cost / question \(\$\)</abbr></td><td>([^<]*)</td>", html)
    assert row is not None and row.group(1) == "–"
    assert "$0.000000" not in html and "<td>$0</td>" not in html


def test_a_partly_known_cost_says_how_many_questions_it_covers(runs, tmp_path, capsys):
    run_id, out = runs("partcost", [1, 2])
    summary = json.loads((tmp_path / "results" / run_id / SUMMARY).read_text())
    assert summary["n_cost_usd"] == 2
    # the mean of the known costs: 1000 × 0.002/1k + 100 × 0.01/1k = $0.003
    assert summary["cost_usd_per_question"] == pytest.approx(0.003)
    assert summary["cost_usd_total"] == pytest.approx(0.006)
    assert "cost $0.0060 (2 of 6 questions)" in out
    assert re.search(r"cost / question \(\$\)\s+\$0\.0030 \(2 of 6 questions\)", out), out
    assert main(["runs", "--results", "results"]) == 0
    assert "$0.0030 (2 of 6 questions)" in capsys.readouterr().out
    assert main(["report", run_id, "--out", "r.html", "--results", "results"]) == 0
    assert "$0.0030 (2 of 6 questions)" in (tmp_path / "r.html").read_text()


def test_an_unknown_cost_is_left_off_the_cost_frontier(runs, tmp_path):
    cheap, _ = runs("priced", [1, 2, 3, 4, 5, 6])
    unknown, _ = runs("nocost", [])
    with ResultsStore(tmp_path / "results", read_only=True) as store:
        df = cost_quality(store, quality="recall_at_5").set_index("run_id")
    # both runs answer alike: once at "$0", the unknown run dominated the priced one
    assert bool(df.loc[cheap, "dominated_cost"]) is False
    assert pd.isna(df.loc[unknown, "dominated_cost"]) and pd.isna(df.loc[unknown, "dominated"])
    fig = pareto(
        df.reset_index(),
        "cost_per_question",
        "dominated_cost",
        "recall_at_5",
        "total_cost_per_question",
    )
    drawn = [c for trace in fig.data for c in trace.customdata]
    assert any(cheap in c for c in drawn) and not any(unknown in c for c in drawn)
    assert "1 run left off: cost / question ($) unknown" in fig.layout.title.text


def test_check_does_not_pass_an_unknown_cost_under_a_limit(runs, tmp_path, capsys):
    run_id, _ = runs("nocost", [])
    limits = tmp_path / "limits.yaml"
    limits.write_text(yaml.safe_dump({"total_cost_per_question": {"max": 0.01}}))
    code = main(["check", run_id, "--results", "results", "--thresholds", str(limits)])
    out = capsys.readouterr().out
    assert code != 0 and "no value" in out and "$0" not in out


def test_check_says_how_many_questions_a_cost_covers(runs, tmp_path, capsys):
    run_id, _ = runs("partcost", [1, 2])
    limits = tmp_path / "limits.yaml"
    limits.write_text(yaml.safe_dump({"total_cost_per_question": {"max": 0.01}}))
    code = main(["check", run_id, "--results", "results", "--thresholds", str(limits)])
    out = capsys.readouterr().out
    assert code == 0 and "covers 2 of 6 questions" in out, out


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(costs=st.lists(st.none() | st.floats(0, 1, allow_nan=False), min_size=1, max_size=12))
def test_cost_figures_cover_exactly_the_known_costs(tmp_path_factory, costs):
    """Any mix of known and unknown costs: the mean and total are over the known ones, the
    count says how many, and no known cost means NULL, never 0."""
    root = tmp_path_factory.mktemp("costs")
    rows = [row(f"q{i}", cost_usd=c, judge_cost_usd=0.0) for i, c in enumerate(costs)]
    write_run(root, "20250101-000000-costs", rows)
    s = summarize_run(inspect_run(str(root), "20250101-000000-costs"))
    known = [c for c in costs if c is not None]
    assert s["n_cost_usd"] == len(known) == s["n_total_cost"]
    if known:
        assert s["cost_usd_per_question"] == pytest.approx(sum(known) / len(known))
        assert s["cost_usd_total"] == pytest.approx(sum(known))
        assert s["total_cost_per_question"] == pytest.approx(sum(known) / len(known))
    else:
        assert s["cost_usd_per_question"] is None and s["cost_usd_total"] is None
        assert s["total_cost_per_question"] is None


def test_compare_shows_an_unknown_cost_as_a_dash(runs, capsys):
    """Compare pairs questions with a value in both runs: none, so no delta and no $0."""
    priced, _ = runs("priced", [1, 2, 3, 4, 5, 6])
    unknown, _ = runs("nocost", [])
    assert main(["compare", priced, unknown, "--results", "results", "--metrics", "cost_usd"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("cost_usd"))
    assert line.split()[1:4] == ["$0.0030", "–", "–"], line


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    runs_=st.lists(
        st.tuples(st.sampled_from([0.0, 0.5, 1.0]), st.none() | st.sampled_from([1e-4, 2e-4])),
        min_size=1,
        max_size=5,
    )
)
def test_the_cost_frontier_is_over_the_runs_with_a_cost(tmp_path_factory, runs_):
    """Any runs, any of them without a cost: those are on no cost frontier (NA), and the
    others' flags are what they would be without them."""
    root = tmp_path_factory.mktemp("front")
    for i, (recall, cost) in enumerate(runs_):
        rows = [row("q1", recall_at_5=recall, cost_usd=cost, judge_cost_usd=0.0)]
        write_run(root, f"2025010{i + 1}-000000-r", rows, created_at=f"2025-01-0{i + 1}T00:00:00Z")
    with ResultsStore(root, read_only=True) as store:
        df = cost_quality(store, quality="recall_at_5").set_index("run_id")
    known = {f"2025010{i + 1}-000000-r": (q, c) for i, (q, c) in enumerate(runs_) if c is not None}
    for run_id, flag in df["dominated_cost"].items():
        if run_id not in known:
            assert pd.isna(flag)
            continue
        q, c = known[run_id]
        beaten = any(q2 >= q and c2 <= c and (q2 > q or c2 < c) for q2, c2 in known.values())
        assert bool(flag) is beaten, (run_id, runs_)
