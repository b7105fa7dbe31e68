"""`judge_drift` over the derived cache (the Judge page) agrees with the rule applied by
hand: consecutive runs of one config and judge that both record what served them, a run
that says nothing passed over, another config or judge model never paired (issue 32
item 5)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.query import ResultsStore, judge_drift

from .conftest import row, write_run

SERVED = st.sampled_from([None, "judge-a", "judge-b"])
RUNS = st.lists(
    st.tuples(st.sampled_from(["nightly", "weekly"]), st.sampled_from(["m1", "m2"]), SERVED),
    min_size=1,
    max_size=6,
)


def _write(root: Path, i: int, config: str, model: str, served: str | None) -> str:
    run_id = f"2025010{i}-000000-{config}"
    rows = [row(f"q{n}", judge_served_model=served) for n in range(2)]
    d = write_run(root, run_id, rows, created_at=f"2025-01-0{i}T00:00:00Z", config={"name": config})
    manifest = json.loads((d / "manifest.json").read_text())
    manifest["judge"] = {**manifest["judge"], "kind": "openai", "model": model}
    (d / "manifest.json").write_text(json.dumps(manifest))
    return run_id


def _by_hand(runs: list[tuple[str, str, str | None, str]]) -> list[tuple[str, str, str, str]]:
    """(before, after, was, now) of each change between consecutive known runs of one
    config and judge model, newest first."""
    last: dict[tuple[str, str], tuple[str, str]] = {}
    out = []
    for config, model, served, run_id in runs:
        if served is None:
            continue
        before = last.get((config, model))
        if before is not None and before[1] != served:
            out.append((before[0], run_id, before[1], served))
        last[(config, model)] = (run_id, served)
    return out[::-1]


@settings(max_examples=25, deadline=None)
@given(RUNS)
def test_judge_drift_is_the_rule_over_consecutive_runs(runs):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        written = [(c, m, s, _write(root, i, c, m, s)) for i, (c, m, s) in enumerate(runs, 1)]
        found = judge_drift(ResultsStore(root))
    got = [(x.before.run_id, x.after.run_id, *x.was, *x.now) for x in found]
    assert got == _by_hand(written)
