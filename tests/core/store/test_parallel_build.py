"""A large build in worker processes: the cache it gives is the one a build in this process
gives, and a part that fails (an exception, a worker killed) is reported naming its run
while the other runs are summarised."""

from __future__ import annotations

import os
import sys
import types

import pytest

from rageval_core.query import ResultsStore, question_history, runs_overview
from rageval_core.store import segments, summarising, update
from rageval_core.store.schemas import empty_summary
from rageval_core.store.summarising import summarise_part
from rageval_core.store.workers import NICENESS, in_workers
from tests.core.query.conftest import row, write_run

BAD = "r03"


def _runs(results, n: int) -> list[str]:
    ids = [f"r{i:02d}" for i in range(n)]
    for i, rid in enumerate(ids):
        rows = [row(f"q{j}", answer_correctness=(i + j) / 10) for j in range(3)]
        write_run(results, rid, rows, created_at=f"2025-01-{i + 1:02d}T00:00:00Z")
    return ids


def _parts_of(monkeypatch) -> None:
    """Every build in workers (this process decides), 2 runs a part."""
    monkeypatch.setattr(update, "PARALLEL_RUNS", 1)
    monkeypatch.setattr(summarising, "BATCH_RUNS", 2)


def test_a_build_in_workers_gives_the_cache_of_a_build_here(results, tmp_path, monkeypatch):
    ids = _runs(results, 7)
    (results / "r05" / "questions.parquet").write_bytes(b"PAR1 not really")
    here = ResultsStore(results, cache_dir=tmp_path / "here", read_only=True)
    _parts_of(monkeypatch)
    seen: list[tuple[int, int]] = []
    workers = ResultsStore(results, cache_dir=tmp_path / "workers", read_only=True, refresh=False)
    workers.refresh(lambda what, done, total: seen.append((done, total)))
    assert workers.fingerprint() == here.fingerprint()
    got, want = runs_overview(workers), runs_overview(here)
    assert list(got["run_id"]) == list(want["run_id"]) and set(got["run_id"]) == set(ids)
    assert got.equals(want)
    for q in ("q0", "q2"):
        assert question_history(workers, q).equals(question_history(here, q))
    assert sorted(workers.problems, key=str) == sorted(here.problems, key=str)
    assert any(p.run_id == "r05" for p in workers.problems)
    summarising = [s for s in seen if s[1] == 7]
    assert summarising[-1] == (7, 7)  # the page's bar reaches the end
    assert [d for d, _ in summarising] == sorted(d for d, _ in summarising)
    # the workers' part files are gone once their rows are in a segment
    assert not list((tmp_path / "workers" / "metrics").glob(".part-*"))


def failing(location: str, cache_dir: str, part: list) -> tuple:
    """`summarise_part`, except that a part holding BAD raises as a bug would."""
    if any(info.run_id == BAD for info, _ in part):
        raise ValueError(f"cannot summarise {BAD}")
    return summarise_part(location, cache_dir, part)


def test_a_worker_failing_on_one_run_names_it_and_the_rest_are_built(
    results, tmp_path, monkeypatch
):
    ids = _runs(results, 6)
    _parts_of(monkeypatch)
    store = ResultsStore(results, cache_dir=tmp_path / "c", read_only=True, refresh=False)
    finished = {i.run_id: (i, store.run_fingerprint(i)) for i in store.listed_runs()}
    with store.cursor() as cur:
        summary = store.cache.update(cur, empty_summary(), finished, work=failing)
    rows = {r["run_id"]: r for r in summary.to_pylist()}
    assert set(rows) == set(ids)
    assert rows[BAD]["n_questions"] == 0 and rows[BAD]["faithfulness"] is None
    [problem] = rows[BAD]["problems"]
    assert BAD in problem and "ValueError: cannot summarise r03" in problem
    # r02 shared BAD's part: tried again alone, and summarised
    for rid in set(ids) - {BAD}:
        assert rows[rid]["n_questions"] == 3 and rows[rid]["problems"] == []
    store.refresh()  # the state read from that cache: the run listed, its problem shown
    assert [p.run_id for p in store.problems] == [BAD]
    assert set(question_history(store, "q1")["run_id"]) == set(ids) - {BAD}


def _square_unless_bad(part: list[int]) -> list[int]:
    if 3 in part:
        raise ValueError("three")
    if 5 in part:
        os._exit(1)  # the worker dies: its pool breaks, every part in flight with it
    return [x * x for x in part]


def test_in_workers_goes_on_past_an_exception_and_a_dead_worker():
    done: dict[int, int] = {}
    failed: dict[int, str] = {}

    def on_done(part, result):
        done.update(zip(part, result, strict=True))

    in_workers(
        [[0, 1], [2, 3], [4, 5], [6, 7]],
        _square_unless_bad,
        on_done,
        lambda item, exc: failed.setdefault(item, type(exc).__name__),
        workers=2,
    )
    assert done == {x: x * x for x in (0, 1, 2, 4, 6, 7)}
    assert failed == {3: "ValueError", 5: "BrokenProcessPool"}


def _niceness(part: list[int]) -> list[int]:
    return [os.nice(0) for _ in part]


def test_workers_run_below_the_servers_priority():
    """A first start's build must not keep the server's first page waiting for a core."""
    got: list[int] = []
    in_workers([[1], [2]], _niceness, lambda _, r: got.extend(r), pytest.fail, 2)
    assert got == [min(os.nice(0) + NICENESS, 19)] * 2


def test_workers_never_run_the_main_script_again(tmp_path, monkeypatch):
    """In the server `__main__` is the app's script (Streamlit sets it): a worker that ran
    it would start the app, and its own build, in every worker."""
    marker = tmp_path / "ran"
    script = tmp_path / "app.py"
    script.write_text(f"open({str(marker)!r}, 'a').write('ran')\n")
    main = types.ModuleType("__main__")
    main.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", main)
    done: list[int] = []
    in_workers([[1], [2]], _square_unless_bad, lambda _, r: done.extend(r), pytest.fail, 2)
    assert sorted(done) == [1, 4]
    assert not marker.exists()
    assert sys.modules["__main__"] is main  # put back


def test_an_update_sweeps_the_part_files_of_a_build_killed_midway(results, tmp_path):
    """A killed build's part files go at the next update; one younger than STALE_PART_S
    (another process's build under way on this cache folder) stays."""
    _runs(results, 2)
    store = ResultsStore(results, cache_dir=tmp_path / "c", read_only=True)
    metrics = tmp_path / "c" / "metrics"
    killed, live = metrics / ".part-killed.arrow", metrics / ".part-live.arrow"
    for f in (killed, live):
        f.write_bytes(b"ARROW1 half")
    old = os.path.getmtime(killed) - segments.STALE_PART_S - 60
    os.utime(killed, (old, old))
    write_run(results, "r09", [row("q0", answer_correctness=0.5)])
    store.refresh()
    assert not killed.exists() and live.exists()
    assert len(store.runs()) == 3


def test_only_a_build_beside_pages_goes_to_workers_below_parallel_runs(
    results, tmp_path, monkeypatch
):
    """A build someone waits for stays in its process below PARALLEL_RUNS (DuckDB's threads
    already use the cores); the server's build on its own thread never holds its GIL."""
    _runs(results, 3)
    monkeypatch.setattr(summarising, "BATCH_RUNS", 2)
    calls: list[int] = []

    def spy(parts, *args, **kwargs):
        calls.append(sum(len(p) for p in parts))
        return in_workers(parts, *args, **kwargs)

    monkeypatch.setattr(update, "in_workers", spy)
    waited = ResultsStore(results, cache_dir=tmp_path / "waited", read_only=True)
    assert calls == []
    beside = ResultsStore(results, cache_dir=tmp_path / "beside", read_only=True, refresh=False)
    beside.refresh(beside_pages=True)
    assert calls == [3]
    assert runs_overview(beside).equals(runs_overview(waited))
