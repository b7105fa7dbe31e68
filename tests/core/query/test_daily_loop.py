"""Known flaky questions (per config series, marked in compare) and answer diffs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rageval_core.models import Claim
from rageval_core.query import (
    ResultsStore,
    answer_diff,
    compare_runs,
    flaky_questions,
    format_comparison,
    run_flaky,
    run_headline,
)
from rageval_core.query._answer_diff import claim_changes, word_diff
from rageval_core.query._flaky import settings_change

from .conftest import row, write_run


def _series(results):
    """Config `nightly`: q1 flips ok → incorrect → ok, q2 is always ok; config `other`
    answers q2 wrongly once (a different pipeline: not flakiness of `nightly`)."""
    days = [("ok", "ok"), ("incorrect", "ok"), ("ok", "ok")]
    for i, (q1, q2) in enumerate(days):
        write_run(
            results,
            f"nightly-{i}",
            [
                row("q1", failure_type=q1, answer_correctness=1.0 if q1 == "ok" else 0.0),
                row("q2", failure_type=q2, answer_correctness=1.0),
            ],
            created_at=f"2025-01-0{i + 1}T00:00:00Z",
            config={"name": "nightly"},
        )
    write_run(
        results,
        "other-0",
        [row("q1"), row("q2", failure_type="incorrect", answer_correctness=0.0)],
        created_at="2025-01-04T00:00:00Z",
        config={"name": "other"},
    )


def test_flaky_is_per_config_series_and_can_leave_runs_out(results):
    _series(results)
    store = ResultsStore(results)
    assert list(flaky_questions(store, dataset="qa", config="nightly")["question_id"]) == ["q1"]
    # across configs q2 "flips" too, but that is two pipelines, not noise
    assert set(flaky_questions(store, dataset="qa")["question_id"]) == {"q1", "q2"}
    left_out = flaky_questions(store, dataset="qa", config="nightly", exclude_runs=["nightly-1"])
    assert left_out.empty
    f = run_flaky(store, "nightly-2")
    assert list(f["question_id"]) == ["q1"]
    assert f["flaky_note"].iloc[0] == "flipped 2× in 3 runs of nightly with the same settings"


def test_compare_marks_a_regression_on_a_known_flaky_question(results):
    _series(results)
    # a new nightly run breaks q1 (known flaky) and q2 (always ok before): only q1 is noise
    write_run(
        results,
        "nightly-3",
        [
            row("q1", failure_type="incorrect", answer_correctness=0.0),
            row("q2", failure_type="incorrect", answer_correctness=0.0),
        ],
        created_at="2025-01-05T00:00:00Z",
        config={"name": "nightly"},
    )
    store = ResultsStore(results)
    c = compare_runs(store, ["nightly-2", "nightly-3"])
    q = c.questions.set_index("question_id")
    assert q.loc["q1", "kind"] == q.loc["q2", "kind"] == "regression"
    assert bool(q.loc["q1", "flaky"]) and not bool(q.loc["q2", "flaky"])
    # the compared runs are not their own evidence: nightly-0 and -1 are the history
    assert q.loc["q1", "flaky_note"] == "flipped 1× in 2 runs of nightly with the same settings"
    text = format_comparison(c)
    assert "Regressed: 2 questions (1 known flaky)" in text
    rows = [ln.split() for ln in text.splitlines() if ln.startswith("regression")]
    kinds = {r[2] if r[1] == "(flaky)" else r[1]: r[1] == "(flaky)" for r in rows}
    assert kinds == {"q1": True, "q2": False}


def test_answer_diff_between_two_runs(results):
    claims_a = [
        {"text": "Fact one.", "verdict": "supported", "evidence_chunk_id": "c", "evidence": "e"},
        {"text": "Gone claim.", "verdict": "supported", "evidence_chunk_id": "c", "evidence": "e"},
    ]
    claims_b = [{**claims_a[0], "verdict": "contradicted", "text": "fact  ONE."}]
    write_run(results, "a", [row("q1", answer="The pallet is kept cold.", claims=claims_a)])
    write_run(
        results,
        "b",
        [row("q1", answer="The pallet is kept <b>warm</b>.", claims=claims_b)],
        created_at="2025-01-02T00:00:00Z",
    )
    d = answer_diff(ResultsStore(results), "a", "b", "q1")
    assert [(t.op, t.text) for t in d.tokens] == [
        ("same", "The pallet is kept"),
        ("removed", "cold."),
        ("added", "<b>warm</b>."),
    ]
    assert [(c.before, c.after) for c in d.claims] == [
        ("supported", "contradicted"),
        ("supported", None),
    ]
    assert d.changed and d.summary() == "+1 −1 words, 2 claims changed verdict"


def _claim(text: str, verdict: str) -> Claim:
    return Claim(text, verdict, None, None, "r")


def test_unchanged_claims_are_not_listed():
    same = [_claim("A b.", "supported"), _claim("c", "unsupported")]
    assert claim_changes(same, list(reversed(same))) == ()
    assert [c.text for c in claim_changes([], [_claim("new", "supported")])] == ["new"]


words = st.lists(st.sampled_from(["a", "b", "c", "<i>", "[x](y)", "ü"]), max_size=30)


@given(words, words)
def test_word_diff_rebuilds_both_answers(a, b):
    tokens, cut = word_diff(" ".join(a), " ".join(b))
    assert not cut
    before = " ".join(t.text for t in tokens if t.op != "added").split()
    after = " ".join(t.text for t in tokens if t.op != "removed").split()
    assert before == a and after == b
    assert all(x.op != y.op for x, y in zip(tokens, tokens[1:], strict=False))  # merged
    assert (a == b) == all(t.op == "same" for t in tokens)


def test_the_first_refresh_reports_what_it_does_and_how_far(results):
    for i in range(12):
        write_run(results, f"r{i:02d}", [row("q1"), row("q2")], created_at=f"2025-01-{i + 1:02d}")
    seen: list[tuple[str, int, int]] = []
    store = ResultsStore(results, refresh=False)
    store.refresh(lambda what, done, total: seen.append((what, done, total)))
    phases = {what for what, _, _ in seen}
    assert phases == {"reading run folders", "summarising runs into the cache"}
    for what in phases:
        steps = [(d, t) for w, d, t in seen if w == what]
        assert all(t == 12 and 0 <= d < t for d, t in steps)
        assert [d for d, _ in steps] == sorted(d for d, _ in steps)  # never backwards
    assert len(store.runs()) == 12
    seen.clear()
    store.refresh(lambda *a: seen.append(a))  # nothing changed: nothing to summarise
    assert all(what != "summarising runs into the cache" for what, _, _ in seen)


def test_the_report_marks_a_regression_on_a_known_flaky_question(results):
    from rageval_core.report import build_report

    _series(results)
    write_run(
        results,
        "nightly-3",
        [row("q1", failure_type="incorrect", answer_correctness=0.0), row("q2")],
        created_at="2025-01-05T00:00:00Z",
        config={"name": "nightly"},
    )
    page = build_report(ResultsStore(results), "nightly-3", baseline="nightly-2")
    assert "Regressed: 1 question (1 known flaky)" in page
    assert "regression (flaky: flipped 1× in 2 runs of nightly with the same settings)" in page


def _chunk_sizes(results, sizes):
    """Runs of one config name whose chunk size changes: 64 answers q1 right, 256 wrongly,
    every time (a deterministic pipeline: the flips follow the parameter)."""
    for i, size in enumerate(sizes):
        q1 = "ok" if size == 64 else "incorrect"
        write_run(
            results,
            f"chunks-{i}",
            [row("q1", failure_type=q1, answer_correctness=float(q1 == "ok")), row("q2")],
            created_at=f"2025-02-0{i + 1}T00:00:00Z",
            config={"name": "chunks", "pipeline": {"params": {"chunk_size": size}}},
        )


def test_a_parameter_change_under_one_name_is_not_noise(results):
    _chunk_sizes(results, [64, 64, 256, 64, 256])
    store = ResultsStore(results)
    assert run_flaky(store, "chunks-4").empty  # 256 twice, the same answer twice
    assert run_flaky(store, "chunks-3").empty  # 64 three times
    c = compare_runs(store, ["chunks-3", "chunks-4"])
    q = c.questions.set_index("question_id")
    assert q.loc["q1", "kind"] == "regression" and not bool(q.loc["q1", "flaky"])
    [warning] = [w for w in c.warnings if "other settings" in w]
    assert "config.pipeline.params.chunk_size 64 → 256" in warning
    text = format_comparison(c)
    assert "Regressed: 1 question," in text and "known flaky" not in text
    assert "chunk_size 64 → 256" in text
    # the Question page's note: the run before and what changed since
    assert settings_change(store, store.run("chunks-4")) == (
        "chunks-3",
        ["config.pipeline.params.chunk_size 64 → 256"],
    )
    assert settings_change(store, store.run("chunks-1")) == (None, [])


def test_latency_noise_is_the_spread_of_earlier_runs_with_the_same_settings(results):
    """A latency change is noise within the spread of the earlier runs with the run's
    settings, not of every run under its name: chunk size 64 answers in 100 or 120 ms,
    256 in 400 or 410 ms, and 430 ms is slower than 256 has been (docs/metrics.md)."""
    plan = [(64, 100.0), (256, 400.0), (64, 120.0), (256, 410.0), (256, 430.0)]
    for i, (size, ms) in enumerate(plan):
        write_run(
            results,
            f"chunks-{i}",
            [row("q1", total_ms=ms), row("q2", total_ms=ms)],
            created_at=f"2025-02-0{i + 1}T00:00:00Z",
            config={"name": "chunks", "pipeline": {"params": {"chunk_size": size}}},
        )
    h = run_headline(ResultsStore(results), "chunks-4")
    [p95] = [f for f in h.figures if f.name == "total_ms_p95"]
    assert h.previous == "chunks-3"
    assert p95.noise == pytest.approx(10.0)  # 410 − 400; every run of `chunks` spans 310
    assert p95.delta_text().endswith("▼ worse"), p95.delta_text()


def test_flips_under_the_same_settings_stay_flaky_beside_other_settings(results):
    _chunk_sizes(results, [64, 256])
    for i, q1 in enumerate(["incorrect", "ok"]):  # 64 again, now flipping: noise
        write_run(
            results,
            f"chunks-{i + 2}",
            [row("q1", failure_type=q1, answer_correctness=float(q1 == "ok")), row("q2")],
            created_at=f"2025-02-0{i + 3}T00:00:00Z",
            config={"name": "chunks", "pipeline": {"params": {"chunk_size": 64}}},
        )
    f = run_flaky(ResultsStore(results), "chunks-3")
    assert list(f["question_id"]) == ["q1"]
    assert f["flaky_note"].iloc[0] == "flipped 2× in 3 runs of chunks with the same settings"
