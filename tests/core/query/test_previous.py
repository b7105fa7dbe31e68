"""`previous.previous_runs` against its definition written out the slow way, and the
store's listing it reads before any refresh."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rageval_core.models import DatasetRef, JudgeRef, RunManifest
from rageval_core.query import ResultsStore, previous_runs
from rageval_core.runs.reading import RunInfo
from rageval_core.store import results as store_mod
from tests.core.query.conftest import row, write_run

_RUN = st.tuples(
    st.sampled_from(["a", "b", None]),  # config name (None: a config without one)
    st.sampled_from([("qa", "1"), ("qa", "2"), ("other", "1")]),  # dataset, version
    st.sampled_from(["complete", "failed", "running"]),
    st.integers(1, 6),  # day: ties are broken by run id
    st.booleans(),  # rows to read
)


def _info(i: int, spec: tuple) -> RunInfo:
    config, (dataset, version), status, day, readable = spec
    rid = f"run{i:02d}"
    manifest = RunManifest(
        run_id=rid,
        status=status,
        created_at=f"2025-01-{day:02d}T00:00:00Z",
        config={"name": config} if config else {},
        dataset=DatasetRef(dataset, version, "a" * 64, 1),
        judge=JudgeRef("offline"),
    )
    files = [f"/r/{rid}/questions.parquet"] if readable else []
    return RunInfo(rid, f"/r/{rid}", status, manifest, files, [], None, [])


@given(st.lists(_RUN, max_size=12))
def test_previous_run_is_the_newest_complete_earlier_run_of_the_same_series(specs):
    infos = [_info(i, s) for i, s in enumerate(specs)]
    got = {k: v.run_id for k, v in previous_runs(reversed(infos)).items()}

    def key(r: RunInfo) -> tuple[str, str]:
        return (r.manifest.created_at, r.run_id)

    def series(r: RunInfo) -> tuple:
        m = r.manifest
        return (m.config.get("name") or "", m.dataset.name, m.dataset.version)

    want = {}
    for r in infos:
        earlier = [
            o
            for o in infos
            if o.status == "complete" and o.readable and series(o) == series(r) and key(o) < key(r)
        ]
        if earlier:
            want[r.run_id] = max(earlier, key=key).run_id
    assert got == want


def test_a_run_without_a_manifest_is_in_no_series():
    done = _info(0, ("a", ("qa", "1"), "complete", 1, True))
    broken = RunInfo("run99", "/r/run99", "corrupt", None, [], [], None, ["bad manifest"])
    assert previous_runs([done, broken]) == {}


def test_listed_runs_before_a_refresh_read_only_the_manifests_the_index_lacks(
    results, tmp_path, monkeypatch
):
    for i in range(3):
        write_run(results, f"old{i}", [row("q1")], created_at=f"2025-01-0{i + 1}T00:00:00Z")
    cache = tmp_path / "cache"
    ResultsStore(results, read_only=True, cache_dir=cache).close()  # builds the runs index
    write_run(results, "new", [row("q1")], status="running", created_at="2025-01-09T00:00:00Z")
    looked_at = []
    inspect = store_mod.inspect_run
    monkeypatch.setattr(
        store_mod, "inspect_run", lambda loc, rid: looked_at.append(rid) or inspect(loc, rid)
    )
    store = ResultsStore(results, read_only=True, cache_dir=cache, refresh=False)
    listed = [(r.run_id, r.status) for r in store.listed_runs()]
    assert looked_at == ["new"] and not store.refreshed_at  # nothing summarised or kept
    assert listed == [
        ("new", "running"),
        ("old0", "complete"),
        ("old1", "complete"),
        ("old2", "complete"),
    ]
    store.refresh()
    assert [(r.run_id, r.status) for r in store.listed_runs()] == listed
