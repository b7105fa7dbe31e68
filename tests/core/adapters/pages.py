"""Every dashboard page opened under AppTest on a results folder, pointing at one run."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from rageval_core.runs.layout import RESULTS_ENV

ENTRY = Path(__file__).resolve().parents[3] / "dashboard" / "streamlit_app.py"
PAGES = sorted(p.name for p in (ENTRY.parent / "app_pages").glob("*.py"))


def open_every_page(monkeypatch, results: Path, run: str, baseline: str) -> None:
    """Each page draws without an exception or an error box for `run` (vs `baseline`)."""
    monkeypatch.setenv(RESULTS_ENV, str(results))
    at = AppTest.from_file(str(ENTRY), default_timeout=60)
    at.query_params.update(run=run, baseline=baseline, question="q1")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    for page in PAGES:
        at.switch_page(f"app_pages/{page}").run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert not at.error, (page, [e.value for e in at.error])
