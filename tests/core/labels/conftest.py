"""Fixtures of the labels tests."""

from __future__ import annotations

import pytest

from rageval_core.labels import LabelStore
from tests.core.labels.helpers import LLM, R1, R2, R3, TOWERS_WHY, judged_row, label, write_run


@pytest.fixture
def project(tmp_path):
    rows = [
        judged_row(
            "q1",
            [("Paris is big.", "supported"), ("It has 3 towers.", "unsupported", TOWERS_WHY)],
        ),
        judged_row("q2", [("Rome.", "supported")]),
        judged_row("q3", [("Oslo.", "unsupported")]),
    ]
    write_run(tmp_path / "results", R1, rows)
    write_run(tmp_path / "results", R2, rows[:2] + [judged_row("q3", [("Bergen.", "supported")])])
    write_run(tmp_path / "results", R3, rows, judge=LLM)
    store = LabelStore(str(tmp_path / "labels"))
    store.save(
        [
            label("q1", "Paris is big.", "supported"),
            label("q1", "It has 3 towers.", "supported", note="=HYPERLINK(1)"),
            label("q3", "Oslo.", "unsupported"),
            label("q3", "Bergen.", "unsupported"),
            label("q2", None, "pass", run_id=R1),
        ]
    )
    store.save([label("q1", "It has 3 towers.", "unsupported", reviewer="bob")])
    return tmp_path
