"""`rageval dashboard` brings a local location's derived cache up to date before the
server starts, in the folder the app's read-only store then uses."""

from __future__ import annotations

from rageval_core.cli import main
from rageval_core.query import ResultsStore


def test_the_cache_is_built_before_streamlit_starts(
    execs, demo_results, scratch, monkeypatch, capsys
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(scratch))
    assert main(["dashboard", "--results", str(demo_results)]) == 0
    assert len(execs) == 1
    n = sum(1 for p in demo_results.iterdir() if not p.name.startswith("."))
    assert f"rageval dashboard: {n:,} runs ready" in capsys.readouterr().err
    # the app's store (read-only, same cache folder) finds every run summarised
    store = ResultsStore(str(demo_results), read_only=True, refresh=False)
    assert (store.cache_dir / "run_summary.parquet").exists()
    assert str(store.cache_dir).startswith(str(scratch))
    computed = []
    from rageval_core.store.summarising import Summariser

    real = Summariser.compute
    monkeypatch.setattr(
        Summariser,
        "compute",
        lambda self, cur, add, *p: computed.extend(add) or real(self, cur, add, *p),
    )
    store.refresh()
    assert computed == [] and len(store.runs()) == n
    assert not (demo_results / ".rageval").exists()  # nothing written into the results


def test_a_bucket_or_a_missing_folder_is_left_to_the_app(execs, scratch, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(scratch))
    assert main(["dashboard", "--results", str(scratch / "nowhere")]) == 0
    assert main(["dashboard", "--results", "s3://bucket/results"]) == 0
    assert len(execs) == 2
    assert not any(scratch.iterdir())  # no cache folder made for either
