"""The derived cache at scale: built in chunks with progress, updated run by run, a damaged
run in a chunk reported and skipped, and a restart that reuses the runs index."""

from __future__ import annotations

import shutil

import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rageval_core.store.results as store_mod
from rageval_core.query import ResultsStore, question_history, runs_overview
from rageval_core.store import segments, summarising
from tests.core.query.conftest import row, write_run


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 2 runs, batches of 1: five runs exercise every path of a 10,000-run build."""
    monkeypatch.setattr(segments, "CHUNK_RUNS", 2)
    monkeypatch.setattr(summarising, "BATCH_RUNS", 1)


def _runs(results, n: int, start: int = 0) -> list[str]:
    ids = []
    for i in range(start, start + n):
        rid = f"r{i:02d}"
        write_run(
            results,
            rid,
            [row("q1", answer_correctness=i / 10), row("q2")],
            created_at=f"2025-01-{i + 1:02d}T00:00:00Z",
        )
        ids.append(rid)
    return ids


def _segments(results) -> dict[str, list[str]]:
    """Segment file -> the run ids it holds (read from the files themselves)."""
    out = {}
    for p in sorted((results / ".rageval" / "metrics").glob("seg-*.parquet")):
        ids = pq.read_table(p, columns=["run_id"]).column("run_id").to_pylist()
        out[p.name] = sorted(set(ids))
    return out


def test_first_build_is_chunked_with_progress_and_one_new_run_adds_one_segment(
    results, small_chunks
):
    ids = _runs(results, 5)
    seen: list[tuple[str, int, int]] = []
    store = ResultsStore(results, refresh=False)
    store.refresh(lambda what, done, total: seen.append((what, done, total)))
    built = [(d, t) for w, d, t in seen if w == summarising.SUMMARISING]
    # one call per batch of one run, counted over the whole build, never backwards
    assert built == [(i, 5) for i in range(5)]
    segs = _segments(results)
    assert sorted(map(tuple, segs.values())) == [("r00", "r01"), ("r02", "r03"), ("r04",)]
    assert sorted(runs_overview(store)["run_id"]) == ids
    assert list(question_history(store, "q1")["answer_correctness"]) == [0.0, 0.1, 0.2, 0.3, 0.4]

    computed = []
    real = summarising.Summariser.compute

    def counting(self, cur, add, *progress):
        computed.append(sorted(info.run_id for info, _ in add))
        return real(self, cur, add, *progress)

    summarising.Summariser.compute = counting
    try:
        _runs(results, 1, start=5)
        store.refresh()
    finally:
        summarising.Summariser.compute = real
    assert computed == [["r05"]]  # only the new run is read
    after = _segments(results)
    full = {k for k, v in segs.items() if len(v) == 2}
    assert full <= set(after)  # full segments are never rewritten
    assert sorted(map(tuple, after.values())) == [
        ("r00", "r01"),
        ("r02", "r03"),
        ("r04",),
        ("r05",),
    ]
    assert question_history(store, "q1")["run_id"].iloc[-1] == "r05"


def test_a_changed_run_rewrites_only_its_segment(results, small_chunks):
    _runs(results, 4)
    store = ResultsStore(results)
    before = _segments(results)
    write_run(results, "r03", [row("q1", answer_correctness=0.95)])  # r03 changed
    store.refresh()
    after = _segments(results)
    untouched = next(k for k, v in before.items() if v == ["r00", "r01"])
    assert untouched in after
    assert sorted(map(tuple, after.values())) == [("r00", "r01"), ("r02",), ("r03",)]
    hist = question_history(store, "q1").set_index("run_id")
    assert hist.loc["r03", "answer_correctness"] == 0.95
    shutil.rmtree(results / "r02")
    store.refresh()
    assert sorted(map(tuple, _segments(results).values())) == [("r00", "r01"), ("r03",)]


def test_a_damaged_run_in_a_chunk_is_reported_and_skipped(results, small_chunks):
    _runs(results, 4)
    (results / "r01" / "questions.parquet").write_bytes(b"PAR1 not really")
    store = ResultsStore(results)
    msgs = [p.message for p in store.problems if p.run_id == "r01"]
    assert msgs and all("questions.parquet" in m for m in msgs)
    assert "unreadable Parquet" in msgs[0]
    # the chunk's other run and every other run are cached and queryable
    assert sorted(question_history(store, "q1")["run_id"]) == ["r00", "r02", "r03"]
    overview = runs_overview(store).set_index("run_id")
    assert overview.loc["r00", "n_questions"] == 2 and overview.loc["r01", "n_questions"] == 0
    assert {p.run_id for p in store.problems} == {"r01"}


def test_small_segments_are_merged_full_ones_never(results, monkeypatch):
    monkeypatch.setattr(segments, "CHUNK_RUNS", 3)
    monkeypatch.setattr(segments, "MAX_SEGMENTS", 2)
    _runs(results, 3)
    store = ResultsStore(results)
    [full] = _segments(results)
    for i in range(3, 7):
        _runs(results, 1, start=i)
        store.refresh()
        segs = _segments(results)
        assert full in segs
        assert sum(len(v) < 3 for v in segs.values()) <= 2
    assert sorted(question_history(store, "q1")["run_id"]) == [f"r{i:02d}" for i in range(7)]


@given(st.lists(st.integers(1, 40), max_size=30))
def test_merge_picks_small_segments_that_fit_one_chunk(sizes):
    of_rows = [name for i, n in enumerate(sizes) for name in [f"s{i}"] * n]
    chunk, most = 16, 4
    old = (segments.CHUNK_RUNS, segments.MAX_SEGMENTS)
    segments.CHUNK_RUNS, segments.MAX_SEGMENTS = chunk, most
    try:
        picked = segments._to_merge(of_rows)
    finally:
        segments.CHUNK_RUNS, segments.MAX_SEGMENTS = old
    small = [n for n in sizes if n < chunk]
    assert all(sizes[int(s[1:])] < chunk for s in picked)  # a full segment is never merged
    assert sum(sizes[int(s[1:])] for s in picked) <= chunk
    assert picked == [] or len(picked) >= 2
    if len(small) > most and sum(sorted(small)[:2]) <= chunk:
        assert picked  # too many small ones that can merge: they are merged


def test_a_restart_reuses_the_runs_index_and_opens_no_manifest(results, monkeypatch):
    _runs(results, 3)
    write_run(results, "live", [row("q1")], status="running", journal=True)
    first = ResultsStore(results)
    inspected = []
    real = store_mod.inspect_run
    monkeypatch.setattr(
        store_mod, "inspect_run", lambda loc, rid: inspected.append(rid) or real(loc, rid)
    )
    restarted = ResultsStore(results)
    assert inspected == ["live"]  # a running run is not cached: looked at every time
    assert restarted.runs() == first.runs()  # the same RunInfos, manifests included
    assert runs_overview(restarted).equals(runs_overview(first))
    # a run changed while the server was down is inspected again
    write_run(results, "r01", [row("q1"), row("q2"), row("q3")])
    inspected.clear()
    again = ResultsStore(results)
    assert sorted(inspected) == ["live", "r01"]
    assert runs_overview(again).set_index("run_id").loc["r01", "n_questions"] == 3


def test_a_damaged_runs_index_costs_time_not_correctness(results, monkeypatch):
    _runs(results, 2)
    first = ResultsStore(results)
    (results / ".rageval" / "runs_index.parquet").write_bytes(b"garbage")
    inspected = []
    real = store_mod.inspect_run
    monkeypatch.setattr(
        store_mod, "inspect_run", lambda loc, rid: inspected.append(rid) or real(loc, rid)
    )
    restarted = ResultsStore(results)
    assert sorted(inspected) == ["r00", "r01"]
    assert restarted.runs() == first.runs()
    assert restarted.problems == []


def test_a_restart_keeps_declared_metrics_and_the_problems_of_bad_ones(results, monkeypatch):
    declared = {"groundedness": {"label": "groundedness", "direction": "higher"}}
    write_run(results, "decl", [row("q1", groundedness=0.5)], metrics=declared)
    write_run(results, "hostile", [row("q1")], metrics={'x"; DROP TABLE --': {"direction": 1}})
    first = ResultsStore(results)
    assert any(p.run_id == "hostile" for p in first.problems)
    inspected = []
    real = store_mod.inspect_run
    monkeypatch.setattr(
        store_mod, "inspect_run", lambda loc, rid: inspected.append(rid) or real(loc, rid)
    )
    restarted = ResultsStore(results)
    assert inspected == []
    assert restarted.runs() == first.runs()
    assert restarted.problems == first.problems
    assert restarted.catalogue().declared_names == ("groundedness",)
    assert runs_overview(restarted).equals(runs_overview(first))
