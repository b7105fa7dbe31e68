"""`compare` and `check` say when two runs cut their text differently and lead with the
figures a chunking does not move (issue 32 item 2): the split control, the same retrieved
window as one chunk or as four contiguous pieces."""

from __future__ import annotations

from pathlib import Path

import pytest

from rageval_core.cli import main
from rageval_core.query import (
    ResultsStore,
    check_run,
    compare_runs,
    format_check,
    format_comparison,
    parse_thresholds,
)
from rageval_core.query._chunking import CUT_SHARE, counts_chunks, cut_differently

from .conftest import row, write_run

WINDOW = "Rebase replays your commits on top of another branch. " * 8
OTHER = "Worktrees let one repository have several checkouts at once. " * 7
QUESTIONS = [f"q{i}" for i in range(6)]


def _pieces(text: str, n: int) -> list[str]:
    step = len(text) // n
    return [text[i * step : (i + 1) * step if i < n - 1 else len(text)] for i in range(n)]


def _run(results: Path, run_id: str, pieces: int, created_at: str) -> None:
    """The window in `pieces` contiguous chunks, then one unrelated chunk. The judge found
    every piece of the window relevant: by chunk the share is pieces / (pieces + 1), by
    character it is the window's share of the text whatever the cut."""
    texts = [*_pieces(WINDOW, pieces), OTHER]
    by_chunk = pieces / (pieces + 1)
    by_chars = len(WINDOW) / (len(WINDOW) + len(OTHER))
    rows = [
        row(
            q,
            retrieved=[f"c{q}-{i}" for i in range(1, len(texts) + 1)],
            retrieved_texts=texts,
            faithfulness=1.0,
            answer_correctness=0.9,
            context_relevance=by_chunk,
            context_precision=1.0,
            context_relevance_chars=by_chars,
            context_precision_chars=1.0,
        )
        for q in QUESTIONS
    ]
    config = {"name": "split", "pipeline": {"params": {"pieces": pieces}}}
    write_run(results, run_id, rows, created_at=created_at, config=config)


@pytest.fixture
def split(results: Path) -> Path:
    _run(results, "whole", 1, "2025-01-01T00:00:00Z")
    _run(results, "pieces", 4, "2025-01-02T00:00:00Z")
    _run(results, "again", 1, "2025-01-03T00:00:00Z")
    return results


def test_compare_says_the_runs_cut_differently_and_leads_with_figures_it_does_not_move(split):
    c = compare_runs(ResultsStore(split), ["whole", "pieces"])
    (note,) = [w for w in c.warnings if "cuts text differently" in w]
    total = len(WINDOW) + len(OTHER)  # two chunks in one run, five in the other
    assert note.startswith(
        f"pieces cuts text differently from whole (mean chunk {round(total / 5)} vs "
        f"{round(total / 2)} characters)"
    )
    order = list(dict.fromkeys(c.metrics["metric"]))
    moved = [m for m in order if counts_chunks(m, c.catalogue)]
    assert moved and order[-len(moved) :] == moved  # every chunk count after the rest
    assert order.index("context_relevance_chars") < order.index("context_relevance")
    by = c.metrics.set_index(["metric", "run_id"])
    assert by.loc[("context_relevance", "pieces"), "delta"] == pytest.approx(0.8 - 0.5)
    assert by.loc[("context_relevance_chars", "pieces"), "delta"] == pytest.approx(0.0)
    text = format_comparison(c)
    assert "warning: pieces cuts text differently" in text
    table = [ln.split()[0] for ln in text.splitlines() if ln.startswith(("faith", "context"))]
    assert table.index("faithfulness") < table.index("context_relevance")


def test_compare_of_runs_cut_alike_says_nothing_and_keeps_the_catalogue_order(split):
    c = compare_runs(ResultsStore(split), ["whole", "again"])
    assert not [w for w in c.warnings if "cut" in w]
    order = list(dict.fromkeys(c.metrics["metric"]))
    assert order.index("recall_at_5") < order.index("faithfulness")  # the usual order


def test_check_notes_the_cut_beside_a_breach_of_a_chunk_count(split, capsys):
    limits = parse_thresholds(
        {"context_relevance": {"max_drop": 0.02}, "context_relevance_chars": {"max_drop": 0.02}}
    )
    store = ResultsStore(split)
    result = check_run(store, "again", baseline="pieces", thresholds=limits)
    assert [r.metric for r in result.rows] == ["context_relevance_chars", "context_relevance"]
    chars, chunks = result.rows
    assert not chars.breached and chars.notes == ()
    # the chunk count still gates (a breach is a breach) and says why it moved
    assert chunks.breached and "counts chunks: the runs cut text differently" in chunks.notes
    assert any(n.startswith("again cuts text differently from pieces") for n in result.notes)
    assert "cuts text differently" in format_check(result)
    # the command line, without thresholds: the note printed, nothing gated
    code = main(["check", "again", "--baseline", "pieces", "--results", str(split)])
    out = capsys.readouterr().out
    assert code == 0 and "again cuts text differently from pieces" in out  # nothing gated


@pytest.mark.parametrize(
    ("a", "b", "cut"),
    [(100, 100, False), (100, 125, False), (100, 125.5, True), (400, 100, True), (None, 9, False)],
)
def test_the_documented_share(a, b, cut):
    assert CUT_SHARE == 0.25
    assert cut_differently(a, b) is cut and cut_differently(b, a) is cut
