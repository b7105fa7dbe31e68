"""`rageval demo`: deterministic runs that match the committed `results/`, stories that hold."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from rageval_core.cli import main
from rageval_core.demo import DEMO_RUNS, demo_run_id
from rageval_core.runs.reading import inspect_run
from rageval_core.runs.rows import QUESTION_SCHEMA

COMMITTED = Path(__file__).resolve().parents[3] / "results"
REFRESH = "regenerate: rm -r results/2026* && rageval demo --results results"
RUN_IDS = [demo_run_id(d) for d in DEMO_RUNS]


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    assert main(["demo", "--results", str(out), "--no-progress"]) == 0
    return out


def manifest(folder: Path) -> dict:
    m = json.loads((folder / "manifest.json").read_text())
    m["dataset"].pop("path")  # where the bundled dataset sits on this machine
    return m


def test_at_least_six_complete_runs_dated_as_history(demo_dir):
    assert len(RUN_IDS) >= 6 and RUN_IDS == sorted(RUN_IDS)
    for run_id in RUN_IDS:
        info = inspect_run(str(demo_dir), run_id)
        assert info.status == "complete" and info.ok, info.problems
        m = info.manifest
        assert m.git_commit is None and m.created_at.startswith("2026-11-")
        assert run_id.startswith(m.created_at[:10].replace("-", ""))


@pytest.mark.parametrize("run_id", RUN_IDS)
def test_matches_the_committed_run(demo_dir, run_id):
    assert (COMMITTED / run_id).is_dir(), REFRESH
    assert manifest(demo_dir / run_id) == manifest(COMMITTED / run_id), REFRESH
    new = pq.read_table(demo_dir / run_id / "questions.parquet").to_pylist()
    old = pq.read_table(COMMITTED / run_id / "questions.parquet").to_pylist()
    assert new == old, REFRESH


def test_duckdb_reads_one_row_per_question_per_run(demo_dir):
    pattern = str(demo_dir / "*" / "questions*.parquet")
    con = duckdb.connect()
    n_runs, n_rows, n_pairs = con.execute(
        "SELECT count(DISTINCT run_id), count(*), count(DISTINCT (run_id, question_id)) "
        "FROM read_parquet(?)",
        [pattern],
    ).fetchone()
    assert n_runs == len(RUN_IDS) and n_rows == n_pairs == 99 * len(RUN_IDS)
    columns = [
        r[0] for r in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [pattern]).fetchall()
    ]
    assert set(QUESTION_SCHEMA.names) <= set(columns)


def _means(demo_dir: Path) -> dict[str, dict]:
    sql = """
        SELECT run_id, avg(recall_at_5) r5, avg(recall_at_20) r20, avg(faithfulness) faith,
               avg(answer_correctness) corr, avg(cost_usd) cost, quantile_cont(total_ms, 0.95) p95,
               count(*) FILTER (WHERE failure_type = 'missed_refusal') missed,
               count(*) FILTER (WHERE NOT answerable) unanswerable
        FROM read_parquet(?) GROUP BY run_id
    """
    cur = duckdb.connect().execute(sql, [str(demo_dir / "*" / "questions*.parquet")])
    names = [d[0] for d in cur.description]
    return {r[0].split("-", 2)[2]: dict(zip(names, r, strict=True)) for r in cur.fetchall()}


def test_the_stories_are_true(demo_dir):
    m = _means(demo_dir)
    top5, top20 = m["bm25-top5"], m["bm25-top20"]
    # A larger top_k buys recall with cost and latency.
    assert top20["r20"] > top5["r20"] + 0.05
    assert top20["cost"] > 2 * top5["cost"] and top20["p95"] > top5["p95"]
    # A reranker closes the recall@5 vs recall@20 gap.
    rerank = m["bm25-rerank-top20"]
    assert rerank["r20"] == top20["r20"]
    assert (rerank["r20"] - rerank["r5"]) < (top20["r20"] - top20["r5"]) / 2
    # Memorising: correct, not faithful.
    mem, best = m["memorising"], m["bm25-rerank-top5"]
    assert mem["corr"] > best["corr"] + 0.2 and mem["faith"] < best["faith"] - 0.15
    # Never refusing misses every unanswerable question.
    assert m["never-refuse"]["missed"] == m["never-refuse"]["unanswerable"] > 0
    # Verbose invents details: unfaithful.
    assert m["verbose"]["faith"] < 0.8 <= best["faith"]


def test_existing_runs_are_left_alone(demo_dir, capsys):
    before = (demo_dir / RUN_IDS[0] / "manifest.json").stat().st_mtime_ns
    assert main(["demo", "--results", str(demo_dir), "--no-progress"]) == 0
    assert "already exists (complete), skipped" in capsys.readouterr().err
    assert (demo_dir / RUN_IDS[0] / "manifest.json").stat().st_mtime_ns == before
