"""One number style on the bundled results: what `rageval runs`, `check`, `compare` and the
report print has no e-notation and one missing mark (docs/metrics.md, "How numbers are
written")."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from rageval_core.cli import main
from rageval_core.query._headline import Figure

ROOT = Path(__file__).resolve().parents[2]
E_NOTATION = re.compile(r"\d\.?\d*e[-+]\d", re.IGNORECASE)
NEWEST, OLDER = "20261123-150000-verbose", "20261112-160000-bm25-rerank-top5"


@pytest.fixture(scope="module")
def bundled(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundled") / "results"
    shutil.copytree(ROOT / "results", out)
    return out


def test_runs_check_and_compare_print_no_e_notation(bundled, capsys) -> None:
    r = ["--results", str(bundled)]
    assert main(["runs", *r]) == 0
    runs = capsys.readouterr().out
    assert re.search(r"\$0\.00\d\d\b", runs) and re.search(r"\d,\d{3} ms", runs), runs
    assert re.search(r"\b\d+\.\d%", runs), runs
    main(["check", NEWEST, "--baseline", OLDER, *r])
    main(["compare", OLDER, NEWEST, *r])
    for text in (runs, capsys.readouterr().out):
        assert not E_NOTATION.search(text), E_NOTATION.search(text)
        assert "—" not in text.split("Regressed")[0]  # the one missing mark is "–"


def test_the_report_prints_no_e_notation(bundled, tmp_path) -> None:
    out = tmp_path / "r.html"
    assert (
        main(["report", NEWEST, "--baseline", OLDER, "--out", str(out), "--results", str(bundled)])
        == 0
    )
    html = out.read_text()
    # the text of the page: not plotly.js, the figures' JSON nor the divs' uuid ids
    body = re.sub(r"<[^>]*>", " ", re.sub(r"<script.*?</script>", "", html, flags=re.DOTALL))
    assert not E_NOTATION.search(body), E_NOTATION.search(body)
    assert re.search(r"\$0\.00\d\d\b", body)  # cost per question, no longer rounded to 0.000


def test_the_headline_calls_a_change_worse_only_beyond_its_noise() -> None:
    def fig(interval, noise=None, name="recall_at_5", now=0.80, was=0.85) -> str:
        return Figure(name, name, now, was, interval, noise).delta_text()

    assert fig((-0.09, -0.01)) == "−0.050 ▼ worse"
    assert fig((-0.09, 0.01)) == "−0.050 ~ within noise"
    assert fig(None, 8.0, "total_ms_p95", 22.0, 16.0) == "+6.0 ms ~ within noise"
    assert fig(None, 2.0, "total_ms_p95", 22.0, 16.0) == "+6.0 ms ▼ worse"
    assert fig(None, None, "total_ms_p95", 16.0, 16.0) == "= same"
