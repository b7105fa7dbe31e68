"""Fixtures for the security pass: demo runs, a poisoned copy, an AppTest factory."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from rageval_core import query
from rageval_core.runs.atomic import write_parquet
from rageval_core.runs.layout import RESULTS_ENV
from rageval_core.runs.rows import rows_to_table

ENTRY = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
PAGES = ("runs", "diagnose", "tails", "retrieval", "cost", "compare", "question")
# HTML, script, event handlers, a javascript: link and markdown that would fetch a URL
# (also after a lone carriage return, which ends a CommonMark line).
XSS = (
    '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'
    '<svg onload="window.__xss=3"><b id="xss-bold">bold</b>"\' '
    '<a href="javascript:alert(1)">x</a> ![track](http://127.0.0.1:9/t.png) '
    "[click](javascript:alert(1))\r![cr](http://127.0.0.1:9/cr.png)"
)
RAW_MARKERS = ("<img", "<script", "<svg", "<b id=", '<a href="javascript')


@pytest.fixture(scope="session")
def demo_results(tmp_path_factory) -> Path:
    """A copy of the demo runs committed under results/ (what `rageval demo` writes)."""
    committed = Path(__file__).resolve().parents[2] / "results"
    out = tmp_path_factory.mktemp("demo") / "results"
    shutil.copytree(committed, out, ignore=shutil.ignore_patterns(".rageval"))
    return out


@pytest.fixture(scope="module")
def store(demo_results, tmp_path_factory):
    """A read-only store over the demo runs, with its cache in a folder of its own."""
    with query.ResultsStore(
        str(demo_results), read_only=True, cache_dir=tmp_path_factory.mktemp("c")
    ) as s:
        yield s


def run_ids(results: Path) -> list[str]:
    return sorted(p.name for p in results.iterdir() if not p.name.startswith("."))


def rewrite_rows(run_dir: Path, change: Callable[[dict], None]) -> None:
    path = run_dir / "questions.parquet"
    rows = pq.read_table(path).to_pylist()
    for r in rows:
        change(r)
    write_parquet(path, rows_to_table(rows))


def poison(r: dict) -> None:
    r["question"] = f"{XSS} {r['question']}"
    r["answer"] = f"{XSS} {r['answer']}"
    r["reference_answer"] = XSS
    r["unsupported_claims"] = [XSS, *(r["unsupported_claims"] or [])]
    r["claims"] = [
        {
            "text": XSS,
            "verdict": "unsupported",
            "evidence_chunk_id": XSS,
            "evidence": XSS,
            "reason": XSS,
        },
        *(r["claims"] or []),
    ]
    r["retrieved_texts"] = [XSS + t for t in r["retrieved_texts"] or []]
    r["tags"] = [*(r["tags"] or []), XSS]
    r["error"] = XSS
    r["judge_error"] = XSS


@pytest.fixture(scope="session")
def poisoned(demo_results, tmp_path_factory) -> Path:
    """Demo runs with the payload in every model-written or user-visible text field."""
    out = tmp_path_factory.mktemp("poisoned") / "results"
    shutil.copytree(demo_results, out, ignore=shutil.ignore_patterns(".rageval"))
    for run_id in run_ids(out):
        rewrite_rows(out / run_id, poison)
    return out


@pytest.fixture
def app(monkeypatch, tmp_path) -> Callable[..., AppTest]:
    """`app(results, **query_params)`: an AppTest of the real dashboard (not yet run)."""

    def make(location: Path, **params) -> AppTest:
        monkeypatch.setenv(RESULTS_ENV, str(location))
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        st.cache_data.clear()
        st.cache_resource.clear()
        at = AppTest.from_file(ENTRY, default_timeout=60)
        for k, v in params.items():
            at.query_params[k] = v
        return at

    return make


def page_strings(at: AppTest) -> list[tuple[str, bool, str]]:
    """(element kind, renders HTML?, text) for every text element of the last run."""
    out = []
    for kind in (
        "markdown",
        "caption",
        "title",
        "header",
        "subheader",
        "error",
        "warning",
        "info",
        "success",
        "code",
        "text",
        "latex",
    ):
        for e in at.get(kind):
            allow = bool(getattr(e.proto, "allow_html", False))
            out.append((kind, allow, str(getattr(e, "value", "") or getattr(e, "body", ""))))
    return out


@pytest.fixture(scope="session")
def helpers():
    import types

    return types.SimpleNamespace(
        run_ids=run_ids,
        rewrite_rows=rewrite_rows,
        page_strings=page_strings,
        XSS=XSS,
        RAW_MARKERS=RAW_MARKERS,
        PAGES=PAGES,
        ENTRY=ENTRY,
    )
