"""The derived cache damaged or swapped under a running dashboard: files of the cache folder
truncated, overwritten with another cache file's bytes, or filled with noise, between two
reruns of one session and before a fresh session. The pages must keep drawing the figures
the runs' own files give, never crash and never show the damaged cache's numbers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from rageval_core.query import ResultsStore
from tests.dashboard.apptest import no_exception, open_page


def _cache_files(results: Path) -> list[Path]:
    folder = ResultsStore(str(results), read_only=True, refresh=False).cache_dir
    return sorted(p for p in Path(folder).rglob("*") if p.is_file())


def _damage(files: list[Path], how: str) -> None:
    for i, f in enumerate(files):
        data = f.read_bytes()
        if how == "truncate":
            f.write_bytes(data[: len(data) // 2])
        elif how == "noise":
            f.write_bytes(b"\x00not a cache file\xff" * 64)
        else:  # swap: each file gets the bytes of the next one
            f.write_bytes(files[(i + 1) % len(files)].read_bytes() if len(files) > 1 else b"")


def _runs_table(at: AppTest) -> str:
    frames = [d.value for d in at.dataframe]
    assert frames, "the Runs page drew no table"
    return frames[0].to_json(orient="records", default_handler=str)


@pytest.mark.parametrize("how", ["truncate", "noise", "swap"])
def test_a_damaged_cache_is_rebuilt_not_shown(app, results, how):
    at = open_page(app(results), "runs")
    before = _runs_table(at)
    files = _cache_files(results)
    assert files, "the dashboard built no derived cache to damage"
    _damage(files, how)
    # the same session reruns (a widget click), then a new session after a restart
    assert _runs_table(no_exception(at.run())) == before
    st.cache_data.clear()
    st.cache_resource.clear()
    fresh = open_page(app(results), "runs")
    assert _runs_table(fresh) == before
    for page in ("diagnose", "tails", "question"):
        open_page(app(results), page)
    # what the fresh server read was rebuilt, not kept damaged
    summary = [f for f in _cache_files(results) if f.name == "run_summary.parquet"]
    assert summary and pq.read_table(summary[0]).num_rows == len(ResultsStore(str(results)).runs())


def test_a_removed_cache_folder_is_rebuilt(app, results):
    before = _runs_table(open_page(app(results), "runs"))
    shutil.rmtree(_cache_files(results)[0].parent)
    st.cache_data.clear()
    st.cache_resource.clear()
    assert _runs_table(open_page(app(results), "runs")) == before
