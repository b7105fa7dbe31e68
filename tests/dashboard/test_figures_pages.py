"""Pages whose figures must say what they show: Compare with nothing to pair, the bottom
tenth on Tails, correctness on answerable questions on Runs."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from rageval_core.catalogue import BUILTIN
from rageval_core.runs.layout import MANIFEST, SUMMARY
from tests.dashboard.apptest import open_page, texts, tiles

from .conftest import LATEST


def _copy_run(results: Path, source: str, run_id: str, rows) -> None:
    """A new complete run `run_id` (created after every demo run) whose Parquet is `rows`
    applied to `source`'s table."""
    folder = results / run_id
    shutil.copytree(results / source, folder)
    (folder / SUMMARY).unlink(missing_ok=True)
    table = rows(pq.read_table(folder / "questions.parquet"))
    table = table.set_column(
        table.schema.get_field_index("run_id"), "run_id", pa.array([run_id] * len(table))
    )
    pq.write_table(table, folder / "questions.parquet")
    m = json.loads((folder / MANIFEST).read_text())
    m.update(run_id=run_id, created_at="2026-12-01T00:00:00Z")
    (folder / MANIFEST).write_text(json.dumps(m))


def _renamed(t: pa.Table) -> pa.Table:
    ids = pc.binary_join_element_wise("other-", t["question_id"], "")
    return t.set_column(t.schema.get_field_index("question_id"), "question_id", ids)


@pytest.mark.parametrize(
    ("rows", "note"),
    [
        (_renamed, "no questions in common"),
        (lambda t: t.slice(0, 0), "has no questions"),
    ],
    ids=["disjoint", "empty"],
)
def test_compare_with_nothing_to_pair_says_why(app, results, rows, note):
    run_id = "20261201-000000-odd"
    _copy_run(results, LATEST, run_id, rows)
    at = open_page(app(results, runs=[LATEST, run_id], baseline=LATEST), "compare")
    assert any(note in w for w in texts(at.warning)), texts(at.warning)
    metrics = next(d.value for d in at.dataframe if "note" in d.value.columns)
    cand = metrics[metrics["run_id"] == run_id]
    assert len(cand) and cand["delta"].isna().all()
    assert all(note in n for n in cand["note"]), list(cand["note"])
    assert any(note in i for i in texts(at.info)), texts(at.info)  # instead of an empty chart


def _scored(demo_results: Path, metric: str) -> pa.Array:
    """The run-level values of `metric` in the latest run: correctness on answerable only."""
    t = pq.read_table(demo_results / LATEST / "questions.parquet")
    if metric == "answer_correctness":
        t = t.filter(t["answerable"])
    return t[metric].drop_null()


@pytest.mark.parametrize("metric", ["recall_at_5", "faithfulness", "answer_correctness"])
def test_tails_shows_a_tenth_and_says_so(app, demo_results, metric):
    n = len(_scored(demo_results, metric))
    shown = math.ceil(n / 10)
    at = open_page(app(demo_results, run=LATEST, metric=metric), "tails")
    table = at.dataframe(key="tails_bottom").value
    assert len(table) == shown  # not every question tied at the cut
    caption = next(c for c in texts(at.caption) if "bottom 10%" in c)
    assert f"bottom 10%: {shown} of {n} questions, {BUILTIN.label(metric)} ≤ " in caption, caption


def test_runs_page_shows_correctness_on_answerable_questions(app, demo_results):
    t = pq.read_table(demo_results / LATEST / "questions.parquet")
    answerable = pc.mean(_scored(demo_results, "answer_correctness")).as_py()
    mixed = pc.mean(t["answer_correctness"]).as_py()  # what the page showed before
    assert f"{answerable:.3f}" != f"{mixed:.3f}"
    at = app(demo_results).run()
    assert not at.exception
    shown = tiles(at)
    assert shown["correctness (answerable)"] == f"{answerable:.3f}"
    assert "missed refusals" in shown and "false refusals" in shown
