"""A restart rebuilds each manifest from the runs index without validating it again: the
same manifest for every field a run can carry, and a row that is not a manifest's fields
makes its folder be read instead."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from rageval_core.query import ResultsStore
from rageval_core.runs.atomic import atomic_write_json
from tests.core.query.conftest import row, write_run


def test_every_manifest_field_survives_a_restart(results, inspected_runs):
    d = write_run(results, "full", [row("q1")], tags=("nightly", "a b"))
    raw = json.loads((d / "manifest.json").read_text())
    raw.update(
        finished_at="2025-01-01T00:03:00Z",
        git_commit="abc1234",
        totals={"cost_usd": 0.5, "questions": 1},
        source_run="older",
        judge={"kind": "openai", "model": "gpt-x", "version": "2", "prompt_hash": "h"},
        config={"name": "full", "nested": {"list": [1, 2.5, None, "x"]}},
    )
    atomic_write_json(d / "manifest.json", raw)
    write_run(results, "plain", [row("q1")])
    first = ResultsStore(results)
    seen = inspected_runs
    seen.clear()  # counted from the restart on
    restarted = ResultsStore(results)
    assert seen == []  # both rebuilt from the index
    assert restarted.runs() == first.runs()
    m = restarted.run("full").manifest
    assert m.tags == ("nightly", "a b") and m.source_run == "older"
    assert m.judge.model == "gpt-x" and m.config["nested"]["list"] == [1, 2.5, None, "x"]


def test_an_index_row_that_is_no_manifest_is_read_from_its_folder(results, inspected_runs):
    write_run(results, "r1", [row("q1")])
    write_run(results, "r2", [row("q1")])
    first = ResultsStore(results)
    index = results / ".rageval" / "runs_index.parquet"
    t = pq.read_table(index)
    texts = t.column("manifest").to_pylist()
    bad = {**json.loads(texts[0]), "not_a_field": 1}
    texts[0] = json.dumps(bad)
    t = t.set_column(t.schema.get_field_index("manifest"), "manifest", pa.array(texts))
    pq.write_table(t, index)
    seen = inspected_runs
    seen.clear()  # counted from the restart on
    restarted = ResultsStore(results)
    assert seen == [t.column("run_id")[0].as_py()]
    assert restarted.runs() == first.runs()
