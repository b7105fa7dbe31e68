"""Pure shaping helpers: in-place claim marks that escape everything, headlines, deltas."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dashboard.shaping import (
    MAX_TEXT,
    Mark,
    answer_marks,
    default_compare,
    evidence_marks,
    failure_headline,
    mark_text,
    marked_block,
    question_links,
    shorten,
    slider_range,
    split_config_diff,
    split_question_changes,
    widest_gap_run,
    with_deltas,
)
from rageval_core.models import Claim

XSS_ANSWER = (
    'Refunds take 5 days.<script>alert("answer")</script> <img src=x onerror=alert(1)> Call 555.'
)


def test_flagged_claim_is_marked_in_place_with_the_reason_as_title():
    claims = [
        Claim("Refunds take 5 days.", "supported", "billing#1", "Refunds take 5 days.", "found"),
        Claim("Call 555.", "unsupported", None, None, "no chunk mentions 555"),
    ]
    html, missed = mark_text("Refunds take 5 days. Call 555.", answer_marks(claims))
    assert missed == []
    assert html == (
        'Refunds take 5 days. <mark class="rageval-unsupported" '
        'title="unsupported: no chunk mentions 555">Call 555.</mark>'
    )


def test_answer_claim_and_reason_are_all_escaped():
    claims = [
        Claim(
            "<img src=x onerror=alert(1)>",
            "contradicted",
            None,
            None,
            '"><script>alert("reason")</script>',
        ),
        Claim("Call 555.", "unsupported", None, None, "it's <b>bold</b>"),
    ]
    html, missed = mark_text(XSS_ANSWER, answer_marks(claims))
    assert missed == []
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(&quot;answer&quot;)&lt;/script&gt;" in html
    # the mark wraps the escaped claim; the handler is inert text inside it
    assert (
        '<mark class="rageval-contradicted" title="contradicted: &quot;&gt;&lt;script&gt;'
        'alert(&quot;reason&quot;)&lt;/script&gt;">&lt;img src=x onerror=alert(1)&gt;</mark>'
    ) in html
    assert 'title="unsupported: it&#x27;s &lt;b&gt;bold&lt;/b&gt;"' in html
    # the only tags left are our own marks
    tags = [t.split()[0].strip("</>") for t in html.split("<")[1:]]
    assert set(tags) == {"mark"}


def test_marked_block_escapes_text_without_marks():
    html, _ = marked_block("<script>x</script>\nline two", [])
    body = html.split("</style>", 1)[1]
    assert body == '<div class="rageval-text">&lt;script&gt;x&lt;/script&gt;<br>line two</div>'


def test_runaway_text_is_cut_before_it_reaches_the_browser():
    text = "ok claim. " + "<b>x</b>" * 2_000_000  # 16 MB of hostile filler
    html, missed = marked_block(
        text + " late claim", [Mark("ok claim", "t1", "c"), Mark("late claim", "t2", "c")]
    )
    assert len(html) < 2 * MAX_TEXT * len("&lt;b&gt;x&lt;/b&gt;") / len("<b>x</b>")
    assert f"showing {MAX_TEXT:,} of {len(text) + 11:,} characters" in html
    assert '<mark class="c" title="t1">ok claim</mark>' in html
    assert [m.title for m in missed] == ["t2"]  # past the cut: listed, not marked
    assert "<b>" not in html


def test_claims_not_verbatim_overlapping_or_empty_come_back_as_missed():
    marks = [
        Mark("quick brown", "t1", "c"),
        Mark("brown fox", "t2", "c"),
        Mark("wolf", "t3", "c"),
        Mark("  ", "t4", "c"),
    ]
    html, missed = mark_text("The quick brown fox.", marks)
    assert [m.title for m in missed] == ["t2", "t3", "t4"]
    assert html == 'The <mark class="c" title="t1">quick brown</mark> fox.'


def test_match_falls_back_to_case_insensitive_and_keeps_original_case():
    html, missed = mark_text("Rotterdam HQ.", [Mark("rotterdam hq.", "t", "c")])
    assert missed == [] and '<mark class="c" title="t">Rotterdam HQ.</mark>' == html


def test_supported_claims_are_not_marked_and_evidence_marks_follow_the_chunk():
    claims = [
        Claim("A.", "supported", "doc#1", "Sentence one.", "ok"),
        Claim("B.", "supported", "doc#2", "Other.", "ok"),
        Claim("C.", "supported", "doc#1", "Sentence one.", "ok"),  # same sentence once
        Claim("D.", "unsupported", None, None, "none"),
    ]
    assert [m.needle for m in answer_marks(claims)] == ["D."]
    marks = evidence_marks(claims, "doc#1")
    assert [m.needle for m in marks] == ["Sentence one."]
    html, _ = mark_text("Intro. Sentence one. Outro.", marks)
    assert '<mark class="rageval-evidence" title="evidence for: A.">Sentence one.</mark>' in html


def test_failure_headline_counts_largest_first():
    counts = {"ok": 76, "retrieval_miss": 9, "unfaithful": 9, "incorrect": 5, "error": 0}
    assert failure_headline(counts) == (
        "23 of 99 questions failed: 9 retrieval miss, 9 unfaithful, 5 incorrect."
    )
    assert failure_headline({"ok": 3}) == "All 3 questions passed."
    assert failure_headline({}) == "No questions in this run yet."


def test_deltas_are_against_each_runs_previous_run_even_when_filtered_out():
    every = pd.DataFrame(
        {
            "run_id": ["d", "c", "b", "a"],
            "previous_run": ["b", "a", None, None],
            "mrr": [0.7, 0.9, 0.5, 0.1],
        }
    )
    shown = every[every["run_id"].isin(["d", "c", "a"])]  # b filtered out of the table
    out = with_deltas(shown, ["mrr"], every)
    assert out["mrr_delta"].tolist()[:2] == pytest.approx([0.2, 0.8])
    assert math.isnan(out["mrr_delta"].iloc[2])  # `a` has no previous run


def test_question_links_point_at_the_question_page():
    rows = pd.DataFrame({"run_id": ["r1", "r2"], "question_id": ["q1", "q#2"]})
    assert list(question_links(rows)) == [
        "question?run=r1&question=q1",
        "question?run=r2&question=q%232",
    ]
    assert list(question_links(rows, "r9"))[0] == "question?run=r9&question=q1"
    # a question named on several rows (one per metric that moved) gets its link on each
    repeated = pd.DataFrame({"run_id": ["r2", "r1", "r2"], "question_id": ["q#2", "q1", "q#2"]})
    assert list(question_links(repeated, None)) == [
        "question?run=r2&question=q%232",
        "question?run=r1&question=q1",
        "question?run=r2&question=q%232",
    ]


def test_config_diff_splits_differing_from_same():
    diff = pd.DataFrame(
        {"key": ["a", "b"], "r1": ["1", "x"], "r2": ["2", "x"], "differs": [True, False]}
    )
    differing, same = split_config_diff(diff)
    assert list(differing["key"]) == ["a"] and list(same["key"]) == ["b"]
    assert "differs" not in differing.columns


def test_small_helpers():
    runs = pd.DataFrame(
        {
            "run_id": ["new", "mid", "old", "first"],
            "status": ["failed", "complete", "complete", "complete"],
            "previous_run": ["mid", "first", None, None],
        }
    )
    assert default_compare(runs) == ("first", "mid")  # the newest complete run with one
    assert default_compare(runs.assign(previous_run=None)) == ("mid", "new")
    assert slider_range(None, None) == (0.0, 1.0)
    assert slider_range(0.8, 0.2) == (0.2, 0.8)
    assert slider_range(-3, 9) == (0.0, 1.0)
    assert slider_range(None, 9, (1.0, 5.0)) == (1.0, 5.0)
    assert slider_range(2, None, (1.0, 5.0)) == (2.0, 5.0)


def test_shorten_puts_text_on_one_line_and_cuts_it():
    assert shorten("a  b\nc") == "a b c"
    assert shorten("x" * 10, 5) == "xxxx…" and len(shorten("y" * 200)) == 80
    assert shorten(None) == "" and shorten(float("nan")) == ""


def test_split_question_changes_in_tab_order_keeping_the_order_within():
    qc = pd.DataFrame(
        {
            "run_id": ["c"] * 4,
            "question_id": ["q1", "q2", "q3", "q4"],
            "question": ["long " * 30, "short", "mid", "other"],
            "kind": ["regression", "regression", "mixed", "improvement"],
        }
    )
    parts = split_question_changes(qc, width=20)
    assert list(parts) == ["regression", "improvement", "mixed"]
    assert list(parts["regression"]["question_id"]) == ["q1", "q2"]
    assert parts["regression"]["question"].iloc[0] == ("long " * 4).strip() + "…"
    assert list(parts["mixed"].index) == [0] and list(parts["improvement"]["question_id"]) == ["q4"]
    assert qc["question"].iloc[0] == "long " * 30  # the input is left as it was
    empty = split_question_changes(qc.iloc[0:0])
    assert all(df.empty for df in empty.values())
    # a text shared by many rows (one question in many runs) is shortened once, missing ones too
    many = qc.assign(question=["long " * 30, None, "long " * 30, None])
    assert split_question_changes(many, width=20)["regression"]["question"].tolist() == [
        ("long " * 4).strip() + "…",
        "",
    ]


def test_widest_gap_run_picks_the_run_with_most_to_rerank():
    runs = pd.DataFrame(
        {
            "run_id": ["new", "mid", "old"],
            "recall_at_5": [0.9, 0.7, 0.8],
            "recall_at_20": [0.9, 0.95, 0.85],
        }
    )
    assert widest_gap_run(runs, ["new", "mid", "old"]) == "mid"
    assert widest_gap_run(runs, ["new", "old"]) == "old"
    assert widest_gap_run(runs, ["new"]) is None  # no gap: keep the usual default
    assert widest_gap_run(runs, []) is None


def test_carriage_returns_cannot_end_the_html_block():
    # CommonMark ends a line at \r as well as \n: a lone \r would close the one-line HTML
    # block, and markdown after it (an image fetching a URL, a link) would be parsed.
    text = "Line one\r![track](http://127.0.0.1:9/t.png)\r\nline three\nline four"
    html, _ = marked_block(text, [Mark("line three", "t", "c")])
    assert "\r" not in html and "\n" not in html
    body = html.split("</style>", 1)[1]
    assert body == (
        '<div class="rageval-text">Line one<br>![track](http://127.0.0.1:9/t.png)<br>'
        '<mark class="c" title="t">line three</mark><br>line four</div>'
    )


def test_case_insensitive_match_marks_the_right_span_when_lowering_changes_length():
    # "İ".lower() is two characters: offsets found in the lowered text would be shifted.
    html, missed = mark_text("İstanbul office. Call 555.", [Mark("call 555.", "t", "c")])
    assert missed == []
    assert html == 'İstanbul office. <mark class="c" title="t">Call 555.</mark>'
