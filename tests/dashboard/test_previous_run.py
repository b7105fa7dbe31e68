"""One rule for "the run before", asked everywhere: runs of two configs on two dataset
versions, created at interleaved times (run ids in another order), failed and running
runs among them. The headline, `check --baseline latest`, the Runs page's Δ and the
Compare page's default baseline all pick the same previous run."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rageval_core.cli import main
from rageval_core.query import ResultsStore, previous_runs, run_headline
from tests.core.query.conftest import row, write_run
from tests.dashboard.apptest import no_exception, open_page

# (run id, config, dataset version, status, recall@5), oldest first; ids out of order
RUNS = [
    ("r5", "alpha", "1", "complete", 0.50),
    ("r2", "beta", "1", "complete", 0.60),
    ("r7", "alpha", "1", "complete", 0.70),  # the previous run of r4
    ("r1", "alpha", "2", "complete", 0.10),  # same config, another dataset version
    ("r3", "alpha", "1", "failed", 0.20),  # same series, not complete
    ("r8", "beta", "1", "complete", 0.90),  # another config
    ("r6", "alpha", "1", "running", 0.30),  # same series, still running
    ("r4", "alpha", "1", "complete", 0.80),  # the newest complete run
    ("r9", "beta", "2", "failed", 0.40),  # the newest run
]
FOCUS, PREVIOUS = "r4", "r7"
EXPECTED = {"r7": "r5", "r3": "r7", "r8": "r2", "r6": "r7", "r4": "r7"}


@pytest.fixture
def interleaved(scratch: Path) -> Path:
    root = scratch / "results"
    for day, (rid, config, version, status, recall) in enumerate(RUNS, start=1):
        write_run(
            root,
            rid,
            [row(f"q{i}", recall_at_5=recall) for i in range(4)],
            created_at=f"2025-01-{day:02d}T00:00:00Z",
            status=status,
            config={"name": config, "pipeline": {"params": {"top_k": 5}}},
            dataset=("qa", version, str(version) * 64),
        )
    return root


def test_every_place_picks_the_same_previous_run(interleaved, app, capsys):
    with ResultsStore(interleaved, read_only=True, refresh=False) as store:  # as `rageval run`
        assert run_headline(store, FOCUS).previous == PREVIOUS
        assert {k: v.run_id for k, v in previous_runs(store.listed_runs()).items()} == EXPECTED

    assert main(["check", FOCUS, "--baseline", "latest", "--results", str(interleaved)]) == 0
    out = capsys.readouterr().out
    assert f"baseline: {PREVIOUS} (previous complete run of config alpha on dataset qa v1)" in out
    assert "(was 0.700)" in out
    # the old meaning on request: the newest complete run of any config (r8, beta)
    assert main(["check", FOCUS, "--baseline", "latest-any", "--results", str(interleaved)]) == 0
    assert "baseline: r8 (newest complete run of any config)" in capsys.readouterr().out

    at = no_exception(app(interleaved).run())
    table = at.dataframe[0].value.set_index("run_id")
    recall = dict((rid, r) for rid, *_, r in RUNS)
    for rid, prev in EXPECTED.items():
        assert table.loc[rid, "Δ recall@5"] == pytest.approx(recall[rid] - recall[prev]), rid
    assert all(math.isnan(table.loc[r, "Δ recall@5"]) for r in ("r5", "r2", "r1", "r9"))
    # the trend: one line per config, the dataset version change marked on each
    data = at.get("plotly_chart")[0].proto.spec
    assert '"alpha: dataset version changed"' in data and '"beta: dataset version changed"' in data

    at = open_page(app(interleaved), "compare")
    assert at.multiselect(key="compare_runs").value == [PREVIOUS, FOCUS]
    assert at.selectbox(key="compare_baseline").value == PREVIOUS


def test_check_without_thresholds_says_nothing_was_gated(interleaved, capsys):
    args = ["check", FOCUS, "--baseline", "latest", "--results", str(interleaved)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("no thresholds: nothing gated") and "PASSED" not in out
    assert main([*args, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "**no thresholds: nothing gated**" in md and "**passed**" not in md
    assert f"baseline: {PREVIOUS} (previous complete run" in md
    assert main([*args, "--require-thresholds"]) == 2
    captured = capsys.readouterr()
    assert "--require-thresholds: no thresholds for r4" in captured.err
    # with a limit it gates, and says so
    limits = interleaved.parent / "t.yaml"
    limits.write_text("recall_at_5: {max_drop: 0.2}\n")
    assert main([*args, "--thresholds", str(limits), "--require-thresholds"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("PASSED")
