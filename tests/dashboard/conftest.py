"""Fixture results directories (real demo runs) and an AppTest factory for the dashboard."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from streamlit.testing.v1 import AppTest

from rageval_core.demo import DEMO_RUNS, demo_run_id, write_demo
from rageval_core.labels import LABELS_ENV, READ_ONLY_ENV
from rageval_core.query import ResultsStore
from rageval_core.runs.journal import Journal
from rageval_core.runs.layout import MANIFEST, RESULTS_ENV, SUMMARY
from tests.core.query.conftest import row, write_run

ENTRY = Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py"
RUN_IDS = [demo_run_id(d) for d in DEMO_RUNS]  # oldest first
LATEST, PREVIOUS = RUN_IDS[-1], RUN_IDS[-2]


# Not tmp_path: pytest keeps only the newest three session folders of a user, so parallel
# sessions on a shared machine delete each other's folders mid-run.
@pytest.fixture(scope="session")
def demo_results() -> Iterator[Path]:
    """The demo runs, written once per session; copy before changing anything in it."""
    with tempfile.TemporaryDirectory(prefix="rageval-dashboard-demo-") as d:
        write_demo(d, progress=False)
        yield Path(d)


@pytest.fixture
def scratch() -> Iterator[Path]:
    """An empty folder of this test's own."""
    with tempfile.TemporaryDirectory(prefix="rageval-dashboard-") as d:
        yield Path(d)


@pytest.fixture
def results(demo_results, scratch) -> Path:
    """A private copy of the demo runs that a test may damage."""
    out = scratch / "results"
    shutil.copytree(demo_results, out, ignore=shutil.ignore_patterns(".rageval"))  # own cache
    return out


@pytest.fixture
def labels(scratch, monkeypatch) -> Path:
    """An empty labels folder of this test's own, which the app is pointed at."""
    out = scratch / "labels"
    monkeypatch.setenv(LABELS_ENV, str(out))
    monkeypatch.delenv(READ_ONLY_ENV, raising=False)
    return out


@pytest.fixture
def app(monkeypatch) -> Callable[..., AppTest]:
    """`app(results_dir, **query_params)`: an AppTest of the dashboard on that directory."""

    def make(location: Path, **params: str | list[str]) -> AppTest:
        # Caches are keyed by location and every mutating test has its own directory,
        # so they need no clearing: the demo directory's store is shared, as in a server.
        monkeypatch.setenv(RESULTS_ENV, str(location))
        at = AppTest.from_file(str(ENTRY), default_timeout=30)
        for k, v in params.items():
            at.query_params[k] = v
        return at

    return make


def make_running(results: Path, run_id: str, keep: int = 40) -> None:
    """Turn a finished run into one still in progress: journal of `keep` rows, no Parquet."""
    folder = results / run_id
    rows = pq.read_table(folder / "questions.parquet").to_pylist()[:keep]
    (folder / "questions.parquet").unlink()
    (folder / SUMMARY).unlink()
    with Journal(folder / "questions.jsonl") as journal:
        for row in rows:
            journal.append(row)
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest.update(status="running", finished_at=None)
    (folder / MANIFEST).write_text(json.dumps(manifest))


def make_corrupt(results: Path, run_id: str = "20261201-000000-broken") -> str:
    """A run folder whose manifest is not JSON (as after a disk-full write)."""
    (results / run_id).mkdir()
    (results / run_id / MANIFEST).write_text('{"run_id": "20261201-000000-bro')
    return run_id


@pytest.fixture
def execs(monkeypatch) -> list[tuple]:
    """`rageval dashboard`'s os.execve calls, recorded and not run (no server starts)."""
    calls: list[tuple] = []
    monkeypatch.setattr(os, "execve", lambda *a: calls.append(a))
    return calls


DECLARED = {
    "groundedness": {"label": "groundedness", "direction": "higher"},
    "toxicity": {"label": "toxicity", "direction": "lower"},
}


@pytest.fixture
def declared_results(scratch):
    root = scratch / "results"
    write_run(root, "plain", [row(f"q{i}") for i in range(10)], created_at="2025-01-01T00:00Z")
    for n, (run_id, scale) in enumerate((("decl-a", 10), ("decl-b", 20)), start=2):
        write_run(
            root,
            run_id,
            [
                row(f"q{i}", groundedness=i / scale, toxicity=0.1 + i / (10 * scale))
                for i in range(10)
            ],
            created_at=f"2025-01-0{n}T00:00Z",
            metrics=DECLARED,
        )
    write_run(
        root,
        "hostile",
        [row("q1")],
        created_at="2024-12-01T00:00Z",
        metrics={'x"; DROP TABLE --': {}},
    )
    return root


@pytest.fixture(scope="module")
def store(demo_results):
    with ResultsStore(str(demo_results), read_only=True) as s:
        yield s
