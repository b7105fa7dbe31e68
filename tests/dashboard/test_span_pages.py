"""Span datasets on the pages: span figures per k and the chunking trade-off on Retrieval,
gold spans cut by a chunk boundary on Diagnose, the gold document with every top-k chunk's
range on Question (document text escaped), and the unknown-id banner on Runs and Diagnose."""

from __future__ import annotations

import json
import re

from rageval_core.demo import DEMO_RUNS, demo_run_id
from tests.core.query.conftest import row, write_run
from tests.dashboard.apptest import no_exception, open_page, texts

CHUNKS = {d.config: demo_run_id(d) for d in DEMO_RUNS if d.config.startswith("chunks-")}
SMALL, LARGE = CHUNKS["chunks-40"], CHUNKS["chunks-120"]


def _figures(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_retrieval_page_shows_span_figures_and_the_chunking_tradeoff(app, demo_results) -> None:
    at = open_page(app(demo_results, runs=[SMALL, LARGE]), "retrieval")
    titles = [f["layout"]["title"]["text"] for f in _figures(at)]
    assert "Span recall, precision and IoU at k" in titles
    tradeoff = next(
        f for f in _figures(at) if f["layout"]["title"]["text"].startswith("Span recall@k vs")
    )
    names = [t["name"] for t in tradeoff["data"]]
    assert any(SMALL in n and "input tokens / question" in n for n in names)
    assert len(tradeoff["data"]) == 2
    assert tradeoff["data"][0]["text"] == ["k=1", "k=3", "k=5", "k=10", "k=20"]  # a point per k


def test_pages_say_when_runs_have_no_spans_or_no_retrieval_gold(app, scratch) -> None:
    out = scratch / "results"
    free = {**row("free", answerable=False), "answerable": True, "reference_answer": "r"}
    rows = [row(f"q{i}") for i in range(5)] + [free]  # a question with no gold key
    write_run(out, "ids-only", rows, created_at="2025-01-01T00:00Z")
    at = open_page(app(out, runs=["ids-only"]), "retrieval")
    assert any("none of these runs has gold spans" in c for c in texts(at.caption))
    at = open_page(app(out, run="ids-only"), "diagnose")
    assert any(
        c.startswith("1 answerable question(s) have no retrieval gold") for c in texts(at.caption)
    )


def test_diagnose_counts_gold_spans_cut_by_a_chunk_boundary(app, demo_results) -> None:
    small = open_page(app(demo_results, run=SMALL), "diagnose")
    large = open_page(app(demo_results, run=LARGE), "diagnose")
    cut = [c for c in texts(small.caption) if "cut by a chunk boundary" in c]
    assert cut and cut[0].startswith("80 of 100 gold spans")
    assert next(c for c in texts(large.caption) if "cut by a chunk" in c).startswith("21 of 100")


def test_question_page_draws_the_gold_document_with_the_chunk_ranges(app, demo_results) -> None:
    at = open_page(app(demo_results, run=SMALL, question="q001"), "question")
    no_exception(at)
    maps = [
        f for f in _figures(at) if "gold spans and retrieved chunks" in f["layout"]["title"]["text"]
    ]
    assert maps, "no span map"
    gold, chunks = maps[0]["data"]
    assert gold["name"] == "gold span" and list(gold["base"]) == [0]
    assert chunks["y"][0].startswith("#")
    html = " ".join(m.value for m in at.markdown if "rageval-gold" in m.value)
    assert '<mark class="rageval-gold"' in html and "⟨#" in html
    assert "2009" in html  # the document's own text, escaped, around the spans


def test_document_block_escapes_the_document_text() -> None:
    from dashboard.shaping import document_block

    text = "intro <img src=x onerror=alert(1)> gold <b>span</b> tail\nnext line"
    start = text.index("gold")
    body = document_block(text, [(start, start + 15)], [(1, "<i>c</i>", 0, start + 4)])
    assert "<img" not in body and "<b>span" not in body and "&lt;img" in body
    # the span, marked in two pieces around the chunk's end inside it
    assert 'title="gold span">gold</mark><sup><b>#1⟩</b></sup>' in body
    assert 'title="gold span"> &lt;b&gt;span&lt;/b</mark>&gt; tail' in body
    assert "<sup><b>⟨#1</b></sup>intro" in body and "#1⟩" in body and "<br>" in body


def test_placed_chunks_are_named_by_document_and_range(app, demo_results) -> None:
    """A chunk is shown as where its text is (`fleet-maintenance 0–271`), its id inside;
    the judge's reasons name it the same way (issue 36: UUIDs said nothing)."""
    at = no_exception(open_page(app(demo_results, run=SMALL, question="q001"), "question"))
    headings = [e.label for e in at.expander if e.label.startswith("#")]
    assert headings and all(
        re.search(r"^#\d+( · ✓ gold)? · \S+ [\d,]+–[\d,]+ · ", h) for h in headings
    ), headings
    reasons = [m.value for m in at.markdown if "content words found in" in m.value]
    assert reasons and not any(re.search(r"found in [\w-]+:\d", r) for r in reasons), reasons
