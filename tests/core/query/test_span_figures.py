"""Span figures in the default `check` set and the report: shown where a run has them (a
dataset with documents), left out where no run can have them."""

from __future__ import annotations

import shutil
from pathlib import Path

from rageval_core.query import ResultsStore, check_run
from rageval_core.report import build_report

from .conftest import row, write_run

BUNDLED = Path(__file__).resolve().parents[3] / "results"
SPAN_RUN = "20261113-100000-chunks-40"


def _bundled(tmp_path: Path) -> ResultsStore:
    root = tmp_path / "results"
    shutil.copytree(BUNDLED / SPAN_RUN, root / SPAN_RUN)
    return ResultsStore(root)


def test_a_span_run_is_checked_and_reported_on_its_span_figures(tmp_path):
    store = _bundled(tmp_path)
    names = [r.metric for r in check_run(store, SPAN_RUN).rows]
    assert {"span_recall_at_5", "span_iou_at_5"} <= set(names)
    html = build_report(store, SPAN_RUN)
    assert "span recall@5" in html and "span IoU@5" in html


def test_a_run_without_documents_shows_no_empty_span_rows(results):
    write_run(results, "plain", [row(f"q{i}", recall_at_5=i / 4) for i in range(4)])
    store = ResultsStore(results)
    names = [r.metric for r in check_run(store, "plain").rows]
    assert "recall_at_5" in names
    assert not [n for n in names if n.startswith("span_")]
    assert "span recall@5" not in build_report(store, "plain")
