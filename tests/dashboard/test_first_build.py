"""A first start over a large location: the pages open on the runs' manifests while the
derived cache builds on a thread, say how far it is, and show the figures once built."""

from __future__ import annotations

import threading

import pytest

from dashboard import data
from rageval_core.query import ResultsStore
from tests.dashboard.apptest import no_exception, open_page, seen
from tests.dashboard.conftest import LATEST, RUN_IDS


@pytest.fixture
def held_build(monkeypatch) -> threading.Event:
    """Every location counts as large, and the first build waits for the event."""
    monkeypatch.setattr(data, "BACKGROUND_BUILD_RUNS", 1)
    release = threading.Event()
    real = ResultsStore.refresh

    def refresh(self, progress=None, **how):
        if threading.current_thread() is not threading.main_thread() and self.pending:
            assert how == {"beside_pages": True}  # in workers: the pages keep the GIL
            assert release.wait(30), "the test never released the build"
        real(self, progress, **how)

    monkeypatch.setattr(ResultsStore, "refresh", refresh)
    return release


def _progress_text(at) -> list[str]:
    return [p.proto.text for p in at.get("progress")]


def _runs_figures(at):
    frame = at.dataframe[0].value
    return frame.set_index("run_id")[["faithfulness", "recall@5"]]


def _rerun_of_latest(results) -> str:
    """A copy of the latest run made a day later, under a new id: the latest's next run."""
    import json
    import shutil

    again = f"{LATEST}-again"
    shutil.copytree(results / LATEST, results / again)
    manifest = results / again / "manifest.json"
    fields = json.loads(manifest.read_text())
    fields.update(run_id=again, created_at="2099-01-01T00:00:00Z")
    manifest.write_text(json.dumps(fields))
    return again


def test_pages_open_on_the_manifests_then_show_the_figures(app, results, held_build, monkeypatch):
    again = _rerun_of_latest(results)  # the latest run gets a previous run: tiles with a Δ
    compared: list[list[str]] = []  # the tiles' paired intervals: none without a Δ
    real_compare = data.compare_runs
    monkeypatch.setattr(
        data, "compare_runs", lambda runs, **kw: compared.append(runs) or real_compare(runs, **kw)
    )
    at = no_exception(app(results).run())
    assert compared == []
    assert [t.value for t in at.title] == ["Runs"]
    shown = _progress_text(at)
    assert len(shown) == 1 and f"Summarising {len(RUN_IDS) + 1} runs into the cache" in shown[0]
    table = at.dataframe[0].value
    assert set(table["run_id"]) == {*RUN_IDS, again}  # every run listed, from its manifest
    assert _runs_figures(at).isna().all().all()  # figures not summarised yet
    assert at.get("plotly_chart") == []  # nothing to chart: drawn with the figures
    # the other pages say they open once it is built
    diagnose = open_page(app(results, run=LATEST), "diagnose")
    assert _progress_text(diagnose) and "opens when the figures" in diagnose.info[0].value
    held_build.set()
    for _ in range(300):
        if data.build_progress() is None:
            break
        threading.Event().wait(0.1)
    assert data.build_progress() is None, "the build did not finish"
    at = no_exception(at.run())
    assert _progress_text(at) == []
    figures = _runs_figures(at)
    assert figures.notna().all().all()
    assert compared == [[LATEST, again]]  # the latest run's tiles, once built
    assert len(at.get("plotly_chart")) == 2  # the trend and the failure shares
    # the same figures as a store that summarised the runs before its first page
    built = ResultsStore(str(results), read_only=True)
    from rageval_core import query

    expected = query.runs_overview(built).set_index("run_id")["faithfulness"]
    assert figures["faithfulness"].to_dict() == pytest.approx(expected.to_dict())


def test_the_command_leaves_a_large_first_build_to_the_app(results, scratch, monkeypatch, capsys):
    import os

    from rageval_core.cli import main
    from rageval_core.commands import dashboard

    execs: list[tuple] = []
    monkeypatch.setattr(os, "execve", lambda *a: execs.append(a))
    monkeypatch.setenv("XDG_CACHE_HOME", str(scratch / "xdg"))
    monkeypatch.setattr(dashboard, "BACKGROUND_BUILD_RUNS", len(RUN_IDS))
    assert main(["dashboard", "--results", str(results)]) == 0
    assert len(execs) == 1 and "summarised in the background" in capsys.readouterr().err
    store = ResultsStore(str(results), read_only=True, refresh=False)
    assert not store.cache.segments.summary_file().exists()  # nothing built before the server
    store.refresh()  # the app's build, then a restart: the command brings it up to date
    assert main(["dashboard", "--results", str(results)]) == 0
    assert f"{len(RUN_IDS):,} runs ready" in capsys.readouterr().err


def test_the_command_reads_no_manifest_and_no_query_layer_on_a_first_start(results, scratch):
    """A large first start hands over to Streamlit having imported neither the query layer
    nor pandas, and opened no manifest: the server reads them (a fresh process, so the
    modules are the command's own)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    probe = f"""
import builtins, io, os, sys
from rageval_core.commands import dashboard
dashboard.BACKGROUND_BUILD_RUNS = {len(RUN_IDS)}
opened = []
real_open = io.open
def spy(file, *a, **k):
    opened.append(str(file))
    return real_open(file, *a, **k)
builtins.open = io.open = spy
def execve(*a):
    heavy = sorted(m for m in ("pandas", "pyarrow", "duckdb", "rageval_core.query",
                               "rageval_core.labels") if m in sys.modules)
    manifests = [f for f in opened if f.endswith("manifest.json")]
    print(heavy, manifests, a[1][3].endswith("streamlit_app.py"))
    os._exit(0)
os.execve = execve
from rageval_core.cli import main
main(["dashboard", "--results", {str(results)!r}])
"""
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "XDG_CACHE_HOME": str(scratch / "xdg"), "PYTHONPATH": root}
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "[] [] True", out.stderr
    assert "summarised in the background" in out.stderr


def test_open_listed_then_refresh_gives_the_serial_build(results, scratch):
    """The figures after a first look on the manifests are those of a build without one."""
    from rageval_core import query

    first = ResultsStore(str(results), cache_dir=scratch / "a", read_only=True, refresh=False)
    assert first.open_listed() == len(RUN_IDS) and first.pending == len(RUN_IDS)
    assert first.open_listed() is None  # once
    assert query.runs_overview(first)["n_questions"].isna().all()
    before = first.fingerprint()
    first.refresh()
    assert first.pending == 0 and first.fingerprint() != before
    serial = ResultsStore(str(results), cache_dir=scratch / "b", read_only=True)
    assert first.fingerprint() == serial.fingerprint()
    got, want = query.runs_overview(first), query.runs_overview(serial)
    assert got.equals(want)


def test_a_failed_first_build_keeps_the_manifests_says_why_and_is_tried_again(
    app, results, monkeypatch
):
    """A build that raises on its thread (a full disk, a damaged cache folder) must not
    leave pages drawing figures that were never summarised: they stay on the manifests,
    name the failure, and the build starts again until it succeeds."""
    monkeypatch.setattr(data, "BACKGROUND_BUILD_RUNS", 1)
    monkeypatch.setattr(data, "REFRESH_S", 3600.0)  # no retry until the test allows it
    real = ResultsStore.refresh
    tries: list[str] = []

    def refresh(self, progress=None, **how):
        if threading.current_thread() is not threading.main_thread() and self.pending:
            tries.append("build")
            if len(tries) == 1:
                raise OSError("No space left on device: <b>cache</b>")
        real(self, progress, **how)

    monkeypatch.setattr(ResultsStore, "refresh", refresh)
    at = no_exception(app(results).run())
    for _ in range(100):
        if (data.build_progress() or data.BuildProgress(0)).failed:
            break
        threading.Event().wait(0.1)
    at = no_exception(at.run())
    assert tries == ["build"]
    failure = [e.value for e in at.error]  # the markdown source: the tags shown as text
    assert not any("<b>" in m for m in failure), failure
    assert any("No space left on device: <b>cache</b>" in seen(m) for m in failure), failure
    assert _runs_figures(at).isna().all().all()  # the manifests, not figures never made
    assert at.get("plotly_chart") == []
    monkeypatch.setattr(data, "REFRESH_S", 0.0)
    for _ in range(300):
        if data.build_progress() is None:
            break
        data.start_build()  # what the page's bar does each second
        threading.Event().wait(0.1)
    assert data.build_progress() is None and tries == ["build", "build"]
    at = no_exception(at.run())
    assert not any("could not be summarised" in e.value for e in at.error)
    assert _runs_figures(at).notna().all().all()
    assert len(at.get("plotly_chart")) == 2
