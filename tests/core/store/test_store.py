"""ResultsStore: overview, derived cache (incremental, read-only), robustness per run."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from rageval_core.errors import ResultsError
from rageval_core.query import ResultsStore, question_detail, question_rows, runs_overview
from rageval_core.runs.atomic import atomic_write_json, write_parquet
from rageval_core.runs.rows import rows_to_table
from tests.core.query.conftest import row, write_run


def _three(results):
    write_run(
        results,
        "bm25-a",
        [row("q1"), row("q2")],
        created_at="2025-01-01T00:00:00Z",
        tags=("nightly",),
        dataset=("qa", "1", "a" * 64),
    )
    write_run(
        results,
        "dense-b",
        [row("q1"), row("q2", recall_at_5=0.0)],
        created_at="2025-01-02T00:00:00Z",
        tags=("nightly", "release"),
        dataset=("qa", "2", "b" * 64),
    )
    write_run(results, "bm25-c", [row("q1")], created_at="2025-01-03T00:00:00Z")


def test_overview_newest_first_and_filters(results):
    _three(results)
    store = ResultsStore(results)
    df = runs_overview(store)
    assert list(df["run_id"]) == ["bm25-c", "dense-b", "bm25-a"]
    assert list(df["n_questions"]) == [1, 2, 2]
    assert df.set_index("run_id").loc["dense-b", "recall_at_5"] == pytest.approx(0.5)
    assert list(runs_overview(store, tags="nightly")["run_id"]) == ["dense-b", "bm25-a"]
    assert list(runs_overview(store, tags=["nightly", "release"])["run_id"]) == ["dense-b"]
    assert list(runs_overview(store, config="bm25")["run_id"]) == ["bm25-c", "bm25-a"]
    assert list(runs_overview(store, dataset_version=2)["run_id"]) == ["dense-b"]
    assert json.loads(df.set_index("run_id").loc["bm25-a", "params"]) == {"top_k": 5}
    assert store.problems == []


def test_cache_is_incremental_and_swapped(results, monkeypatch):
    _three(results)
    store = ResultsStore(results)
    cache = results / ".rageval"
    assert (cache / "run_summary.parquet").exists()
    segs = sorted(p.name for p in (cache / "metrics").iterdir())
    assert len(segs) == 1
    # a second store reuses the cache: no run is summarised again
    from rageval_core.store import summarising

    calls = []
    real = summarising.Summariser.compute

    def counting(self, cur, add, *progress):
        calls.extend(info.run_id for info, _ in add)
        return real(self, cur, add, *progress)

    monkeypatch.setattr(summarising.Summariser, "compute", counting)
    ResultsStore(results)
    assert calls == []
    write_run(results, "hybrid-d", [row("q1")], created_at="2025-01-04T00:00:00Z")
    store.refresh()
    assert calls == ["hybrid-d"]
    assert runs_overview(store)["run_id"].iloc[0] == "hybrid-d"
    segs2 = sorted(p.name for p in (cache / "metrics").iterdir())
    assert set(segs) < set(segs2) and len(segs2) == 2
    # a deleted run leaves the overview and the narrow table
    import shutil

    shutil.rmtree(results / "bm25-a")
    store.refresh()
    assert "bm25-a" not in set(runs_overview(store)["run_id"])
    from rageval_core.query import question_history

    assert "bm25-a" not in set(question_history(store, "q1")["run_id"])
    assert not list(cache.glob("metrics/*.tmp"))


def test_segments_are_merged(results, monkeypatch):
    from rageval_core.store import segments

    monkeypatch.setattr(segments, "MAX_SEGMENTS", 2)
    store = ResultsStore(results)
    for i in range(4):
        write_run(results, f"r{i}", [row("q1")], created_at=f"2025-01-0{i + 1}T00:00:00Z")
        store.refresh()
    assert len(list((results / ".rageval" / "metrics").iterdir())) <= 2
    from rageval_core.query import question_history

    assert list(question_history(store, "q1")["run_id"]) == ["r0", "r1", "r2", "r3"]


def test_read_only_never_writes_into_results(results, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    _three(results)
    store = ResultsStore(results, read_only=True)
    assert len(runs_overview(store)) == 3
    assert not (results / ".rageval").exists()
    assert str(store.cache_dir).startswith(str(tmp_path / "xdg" / "rageval"))


def test_running_run_read_from_journal_with_torn_line(results):
    d = write_run(results, "live", [row("q1"), row("q2")], status="running")
    with open(d / "questions.jsonl", "a") as fh:
        fh.write('{"question_id": "q3", "answ')  # interrupted write
    store = ResultsStore(results)
    df = runs_overview(store)
    r = df.set_index("run_id").loc["live"]
    assert r["status"] == "running" and r["n_questions"] == 2
    assert any("truncated last line" in p.message for p in store.problems)
    # not cached: a new line shows at the next refresh
    with open(d / "questions.jsonl", "a") as fh:
        fh.write("\n" + json.dumps({**row("q4"), "run_id": "live"}) + "\n")
    store.refresh()
    assert runs_overview(store).set_index("run_id").loc["live", "n_questions"] == 3
    assert not (results / ".rageval" / "metrics").exists() or all(
        "live" not in p.name for p in (results / ".rageval" / "metrics").iterdir()
    )
    assert question_rows(store, "live").total == 3


def test_sharded_run_reads_every_shard(results):
    d = results / "sharded"
    write_run(results, "sharded", [], status="complete")
    (d / "questions.parquet").unlink()
    m = json.loads((d / "manifest.json").read_text())
    atomic_write_json(d / "manifest.json", {**m, "shards": 2})
    write_parquet(d / "questions-0.parquet", rows_to_table([{**row("q1"), "run_id": "sharded"}]))
    write_parquet(
        d / "questions-1.parquet",
        rows_to_table([{**row("q2"), "run_id": "sharded"}, {**row("q3"), "run_id": "sharded"}]),
    )
    for k in (0, 1):
        atomic_write_json(d / f"shard-{k}.json", {"status": "complete"})
    store = ResultsStore(results)
    r = runs_overview(store).set_index("run_id").loc["sharded"]
    assert r["status"] == "complete" and r["n_questions"] == 3
    assert question_rows(store, "sharded").total == 3


def test_broken_runs_are_problems_not_crashes(results):
    write_run(results, "good", [row("q1")])
    write_run(results, "corrupt", [row("q1")])
    full = (results / "corrupt" / "questions.parquet").read_bytes()
    (results / "corrupt" / "questions.parquet").write_bytes(full[: len(full) // 2])
    (results / "nomanifest").mkdir()
    write_parquet(results / "nomanifest" / "questions.parquet", rows_to_table([row("q1")]))
    (results / "badjson").mkdir()
    (results / "badjson" / "manifest.json").write_text("{not json")
    d = write_run(results, "future", [row("q1")])
    m = json.loads((d / "manifest.json").read_text())
    atomic_write_json(d / "manifest.json", {**m, "schema_version": 99})
    store = ResultsStore(results)
    by_run = {}
    for p in store.problems:
        by_run.setdefault(p.run_id, []).append(p.message)
    assert set(by_run) == {"corrupt", "nomanifest", "badjson", "future"}
    assert any("unreadable Parquet" in m for m in by_run["corrupt"])
    assert any("missing manifest" in m for m in by_run["nomanifest"])
    assert any("not valid JSON" in m for m in by_run["badjson"])
    assert any("newer" in m for m in by_run["future"])
    ids = set(runs_overview(store)["run_id"])
    assert "good" in ids and not ids & {"nomanifest", "badjson", "future"}
    # the corrupt run shows (with no rows) rather than vanishing silently
    assert runs_overview(store).set_index("run_id").loc["corrupt", "n_questions"] == 0
    assert question_rows(store, "good").total == 1


def test_corrupt_parquet_falls_back_to_journal(results):
    write_run(results, "r", [row("q1"), row("q2")], journal=True)
    (results / "r" / "questions.parquet").write_bytes(b"garbage")
    store = ResultsStore(results)
    page = question_rows(store, "r")
    assert page.total == 2 and any("unreadable Parquet" in p for p in page.problems)


def test_older_schema_missing_columns_are_null(results):
    write_run(results, "old", [])
    t = rows_to_table([{**row("q1", ttft_ms=5.0, faithfulness=0.5), "run_id": "old"}])
    keep = [
        c
        for c in t.column_names
        if c not in ("ttft_ms", "claims", "judge_cost_usd", "retrieved_scores", "total_ms")
    ]
    write_parquet(results / "old" / "questions.parquet", t.select(keep))
    write_run(results, "new", [row("q1", ttft_ms=7.0)])
    store = ResultsStore(results)
    df = runs_overview(store).set_index("run_id")
    assert df.loc["old", "n_questions"] == 1
    assert df.loc["old", "ttft_ms_p50"] != df.loc["old", "ttft_ms_p50"]  # NaN: NULL
    assert df.loc["new", "ttft_ms_p50"] == 7.0
    d = question_detail(store, "old", "q1")
    assert d.claims == () and d.timings["ttft_ms"] is None
    assert d.retrieved[0].score is None and d.metrics["faithfulness"] == 0.5


def test_unknown_or_invalid_run(results):
    store = ResultsStore(results)
    with pytest.raises(ResultsError, match="not found"):
        store.run_info("nope")  # what commands check first
    page = question_rows(store, "nope")  # a page over a run deleted since the listing
    assert page.total == 0 and page.problems == (f"{results}/nope: no such run",)
    for bad in ("x' OR 1=1 --", "../etc", "a/b", ""):
        with pytest.raises(ResultsError, match="invalid run id"):
            question_rows(store, bad)


def test_empty_location(results):
    store = ResultsStore(results / "missing")
    assert runs_overview(store).empty
    assert store.problems == []
    assert isinstance(store.runs(), list)
    assert pa is not None


def test_fingerprint_changes_only_with_the_runs(results):
    _three(results)
    store = ResultsStore(results)
    fp = store.fingerprint()
    store.refresh()
    assert store.fingerprint() == fp
    write_run(results, "new-run", [row("q1")])
    store.refresh()
    assert store.fingerprint() != fp


def test_refresh_with_nothing_new_reads_no_manifest(results, monkeypatch):
    import rageval_core.store.results as store_mod

    _three(results)
    store = ResultsStore(results)
    before = runs_overview(store)
    inspected = []
    real = store_mod.inspect_run
    monkeypatch.setattr(
        store_mod, "inspect_run", lambda loc, rid: inspected.append(rid) or real(loc, rid)
    )
    store.refresh()
    assert inspected == []
    assert runs_overview(store).equals(before)
    # only the folder that changed is looked at again, and the change shows
    d = write_run(results, "bm25-c", [row("q1"), row("q2")], created_at="2025-01-03T00:00:00Z")
    assert d.exists()
    store.refresh()
    assert inspected == ["bm25-c"]
    assert runs_overview(store).set_index("run_id").loc["bm25-c", "n_questions"] == 2
    # a cache rebuilt by another process (new segment files) is picked up
    import shutil

    from rageval_core.query import question_history

    shutil.rmtree(results / ".rageval")
    ResultsStore(results)
    store.refresh()
    assert len(question_history(store, "q1")) == 3


def test_batched_cache_build_equals_run_by_run(results, tmp_path, monkeypatch):
    from rageval_core.query import question_history
    from rageval_core.store import summarising

    for i in range(5):
        write_run(
            results,
            f"r{i}",
            [
                row(f"q{j}", faithfulness=(i * 7 + j) % 10 / 10, total_ms=100.0 + i * j)
                for j in range(6)
            ],
            created_at=f"2025-01-0{i + 1}T00:00:00Z",
        )
    write_run(results, "empty", [])
    write_run(results, "old", [])
    t = rows_to_table([{**row("q1", faithfulness=0.5), "run_id": "old"}])
    write_parquet(results / "old" / "questions.parquet", t.drop_columns(["ttft_ms", "claims"]))
    write_run(results, "fallback", [row("q1"), row("q2")], journal=True)
    (results / "fallback" / "questions.parquet").write_bytes(b"garbage")
    write_run(results, "sharded", [])
    (results / "sharded" / "questions.parquet").unlink()
    for k in (0, 1):
        write_parquet(
            results / "sharded" / f"questions-{k}.parquet",
            rows_to_table([{**row(f"q{k}"), "run_id": "sharded"}]),
        )
    monkeypatch.setattr(summarising, "BATCH_RUNS", 2)
    batched_runs = []
    real = summarising.Summariser._batch

    def counting(self, cur, key, batch):
        aggs, narrow = real(self, cur, key, batch)
        batched_runs.extend(aggs)
        return aggs, narrow

    monkeypatch.setattr(summarising.Summariser, "_batch", counting)
    batched = ResultsStore(results, cache_dir=tmp_path / "batched")
    # every run whose rows are exactly its Parquet files went through a batch
    assert sorted(batched_runs) == ["old", "r0", "r1", "r2", "r3", "r4", "sharded"]
    monkeypatch.setattr(summarising.Summariser, "_parquet_only_schema", lambda self, info: None)
    single = ResultsStore(results, cache_dir=tmp_path / "single")
    a, b = runs_overview(batched), runs_overview(single)
    assert len(a) == 9
    assert a.equals(b)
    for q in ("q0", "q1", "q5"):
        assert question_history(batched, q).equals(question_history(single, q))
    assert sorted(map(str, batched.problems)) == sorted(map(str, single.problems))


def test_cross_run_views_survive_a_cache_rewritten_under_them(results, tmp_path):
    # Two stores on one cache (two dashboard processes, or a refresh on another thread):
    # one rewrites the cache and removes the segment the other's state still names.
    from rageval_core.query import failure_counts, question_history

    write_run(results, "r0", [row("q1")], created_at="2025-01-01T00:00:00Z")
    write_run(results, "r1", [row("q1")], created_at="2025-01-02T00:00:00Z")
    a = ResultsStore(results, cache_dir=tmp_path / "c")
    write_run(results, "r0", [row("q1", answer_correctness=0.25)])  # r0 changed on disk
    ResultsStore(results, cache_dir=tmp_path / "c")  # its refresh drops r0's old segment
    hist = question_history(a, "q1")
    assert sorted(hist["run_id"]) == ["r0", "r1"]
    assert hist.set_index("run_id").loc["r0", "answer_correctness"] == 0.25
    assert set(runs_overview(a)["run_id"]) == {"r0", "r1"}
    assert set(failure_counts(a)["run_id"]) == {"r0", "r1"}
