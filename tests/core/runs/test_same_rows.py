"""Rescore (`read_run_rows`) and the dashboard (the query layer's `open_run`) read the same
rows from a damaged run: both take the files and columns `usable_files` chooses."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.models import DatasetRef, JudgeRef, RunManifest
from rageval_core.query import ResultsStore
from rageval_core.runs.atomic import atomic_write_json
from rageval_core.runs.layout import MANIFEST, parquet_name, shard_status_name
from rageval_core.runs.manifest import manifest_to_dict
from rageval_core.runs.reading import inspect_run, read_run_rows
from rageval_core.runs.rows import rows_to_table
from rageval_core.runs.source import bind

RUN = "sharded"
COMPARED = ("question_id", "answer", "faithfulness", "recall_at_5", "cost_usd", "tags", "error")
WRONG = {  # a column of the wrong type, as a hand edit or another tool might leave it
    "faithfulness": pa.array(["high", "low"]),
    "answer": pa.array([1.5, 2.5]),
    "recall_at_5": pa.array([["a"], ["b"]]),
    "tags": pa.array(["x", "y"]),
}


def _rows(shard: int) -> list[dict]:
    return [
        {
            "run_id": RUN,
            "question_id": f"q{shard}{i}",
            "answer": f"answer {shard}{i}",
            "faithfulness": 0.5 + i / 4,
            "recall_at_5": 1.0 - i / 2,
            "cost_usd": 0.001 * (i + 1),
            "tags": [f"t{shard}"],
            "error": None,
        }
        for i in range(2)
    ]


def write_sharded_run(root: Path, damaged: dict[int, str]) -> None:
    """A complete run of two shards; `damaged` maps a shard to the column it holds with
    the wrong type."""
    folder = root / RUN
    folder.mkdir(parents=True)
    for k in range(2):
        table = rows_to_table(_rows(k))
        if k in damaged:
            col = damaged[k]
            table = table.set_column(table.schema.get_field_index(col), col, WRONG[col])
        pq.write_table(table, folder / parquet_name(k))
        atomic_write_json(folder / shard_status_name(k), {"status": "complete", "totals": {}})
    manifest = RunManifest(
        run_id=RUN,
        status="running",
        created_at="2025-01-01T00:00:00Z",
        config={"name": "sharded"},
        dataset=DatasetRef("qa", "1", "a" * 64, 4),
        judge=JudgeRef("offline"),
        shards=2,
    )
    atomic_write_json(folder / MANIFEST, manifest_to_dict(replace(manifest)))


def rescore_reads(root: Path) -> tuple[list[dict], list[str]]:
    table, problems = read_run_rows(inspect_run(str(root), RUN))
    rows = table.select(list(COMPARED)).to_pylist()
    return sorted(rows, key=lambda r: r["question_id"]), problems


def dashboard_reads(root: Path) -> tuple[list[dict], list[str]]:
    with ResultsStore(root, read_only=True) as store, store.cursor() as cur:
        with store.run_source(cur, RUN) as src:
            cols = ", ".join(f'"{c}"' for c in COMPARED)
            sql = f"SELECT {cols} FROM {src.sql} ORDER BY question_id"
            rows = cur.sql(sql, params=bind(sql, src.params)).to_arrow_table().to_pylist()
            return rows, src.problems


def test_one_badly_typed_shard_reads_the_same_in_rescore_and_the_dashboard(tmp_path):
    write_sharded_run(tmp_path, {1: "faithfulness"})
    rescored, rescore_problems = rescore_reads(tmp_path)
    shown, dashboard_problems = dashboard_reads(tmp_path)
    assert rescored == shown
    assert len(shown) == 4
    # a column of the wrong type in one shard is NULL in all: the shards are one union
    assert [r["faithfulness"] for r in shown] == [None] * 4
    assert [r["answer"] for r in shown] == ["answer 00", "answer 01", "answer 10", "answer 11"]
    problem = "faithfulness is string, expected double: values ignored"
    assert any(problem in p for p in rescore_problems)
    assert any(problem in p for p in dashboard_problems)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(damaged=st.dictionaries(st.sampled_from([0, 1]), st.sampled_from(sorted(WRONG))))
def test_any_badly_typed_shards_read_the_same_in_both(tmp_path_factory, damaged):
    root = tmp_path_factory.mktemp("runs")
    write_sharded_run(root, damaged)
    rescored, _ = rescore_reads(root)
    shown, _ = dashboard_reads(root)
    assert rescored == shown
    for col in set(damaged.values()):
        assert {r[col] for r in shown if not isinstance(r[col], list)} <= {None}
