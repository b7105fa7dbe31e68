"""A save's rerun: the label views reuse the claims rows earlier labels met and scan the
claims files only for the new labels' keys, and give the figures a full recompute (no
rows remembered) gives, whatever was labelled before and after."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.labels import LabelSet, LabelStore
from rageval_core.query import _label_join as labels_mod
from rageval_core.query import judge_reports, run_coverage
from rageval_core.store.results import ResultsStore
from tests.core.labels.helpers import LLM, judged_row, label, write_run

TEXTS = ("Paris is big.", "Two towers.", "Rome.", "The moon is cheese.")
VALUES = ("supported", "unsupported", "contradicted")
ROWS_A = [
    judged_row("q1", [(TEXTS[0], "supported"), (TEXTS[1], "unsupported")]),
    judged_row("q2", [(TEXTS[2], "contradicted"), (TEXTS[3], "supported")]),
    judged_row("q3", [(TEXTS[0], "unsupported")]),
]
ROWS_B = [  # the same answers, another judge
    judged_row("q1", [(TEXTS[0], "unsupported"), (TEXTS[1], "unsupported")]),
    judged_row("q2", [(TEXTS[2], "supported")]),
    judged_row("q3", [(TEXTS[0], "supported")]),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("rerun")
    write_run(root / "results", "20260101-000000-a", ROWS_A)
    write_run(root / "results", "20260102-000000-b", ROWS_B, judge=LLM)
    write_run(root / "results", "20260103-000000-live", ROWS_A[:2], status="running")
    with ResultsStore(str(root / "results"), cache_dir=root / "cache") as s:
        yield s


labels_st = st.lists(
    st.builds(
        lambda q, c, v, who, sec: label(
            q,
            c,
            v if c is not None else ("pass" if v == "supported" else "fail"),
            reviewer=who,
            at=f"2026-02-01T00:00:{sec:02d}Z",
        ),
        st.sampled_from(("q1", "q2", "q3", "q4")),
        st.sampled_from((*TEXTS, None)),
        st.sampled_from(VALUES),
        st.sampled_from(("ann", "bob")),
        st.integers(0, 59),
    ),
    max_size=12,
)


def figures(store, labels):
    reports = judge_reports(store, labels, n_boot=20)
    return reports, run_coverage(store, labels)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(before=labels_st, saved=labels_st)
def test_a_save_gives_the_figures_of_a_full_recompute(store, before, saved):
    first = LabelSet().merged(LabelSet(tuple(before)))
    after = first.merged(LabelSet(tuple(saved)))  # the save: newest per key again
    labels_mod._joined.clear()
    figures(store, first)  # the memo holds what the first labels met
    rerun = figures(store, after)
    labels_mod._joined.clear()
    assert rerun == figures(store, after)


def test_a_save_scans_only_for_its_new_keys(store, monkeypatch):
    labels_mod._joined.clear()
    first = LabelSet((label("q1", TEXTS[0], "supported"), label("q2", None, "pass")))
    figures(store, first)
    scanned: list[set] = []
    real = labels_mod._need

    def need(labels):
        out = real(labels)
        (memo,) = labels_mod._joined.values()
        scanned.append(out - memo.covered)
        return out

    monkeypatch.setattr(labels_mod, "_need", need)
    reports, _ = figures(store, first.merged(LabelSet((label("q2", TEXTS[2], "supported"),))))
    assert scanned == [{("a" * 64, "q2", "rome")}, set()]  # judge_reports, then run_coverage
    assert sum(r.claims.n for r in reports) == 2 + 2  # each claim label meets both judges


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """Finished runs only: the views keep their tallies (live rows change every call)."""
    root = tmp_path_factory.mktemp("tallied")
    write_run(root / "results", "20260101-000000-a", ROWS_A)
    write_run(root / "results", "20260102-000000-b", ROWS_B, judge=LLM)
    write_run(root / "results", "20260103-000000-c", ROWS_A[1:])
    with ResultsStore(str(root / "results"), cache_dir=root / "cache") as s:
        yield s


def recomputed(store, labels):
    """The figures with nothing remembered (no claims rows, no tallies); what the views
    remember is left as it was."""
    kept = dict(labels_mod._joined), dict(labels_mod._tallies)
    labels_mod._joined.clear()
    labels_mod._tallies.clear()
    try:
        return figures(store, labels)
    finally:
        for memo, held in zip((labels_mod._joined, labels_mod._tallies), kept, strict=True):
            memo.clear()
            memo.update(held)


def _saved(who, q, c, v, sec):
    if c == "chunk":  # a relevance label: no view counts it, every view must skip it
        base = label(q, None, "pass", who, f"2026-02-01T00:00:{sec:02d}Z")
        return replace(base, question_label=None, chunk_id="c1", relevant=v == "supported")
    value = v if c is not None else ("pass" if v == "supported" else "fail")
    return label(q, c, value, reviewer=who, at=f"2026-02-01T00:00:{sec:02d}Z", note=f"n{sec}")


steps = st.lists(
    st.tuples(
        st.sampled_from(("ann", "bob")),  # one reviewer per save
        st.lists(
            st.tuples(
                st.sampled_from(("q1", "q2", "q3", "q4")),
                st.sampled_from((*TEXTS, None, "chunk")),
                st.sampled_from(VALUES),
                st.integers(0, 5),  # ties in time: the later file wins
            ),
            min_size=1,
            max_size=5,
        ),
        st.booleans(),  # the file removed again after the views (a full reload next)
    ),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=steps)
def test_any_sequence_of_saves_gives_a_full_recompute(finished, steps):
    """The views count only what each save added or replaced (and a removed file took
    back); after every step the figures are those of nothing remembered."""
    labels_mod._tallies.clear()
    with tempfile.TemporaryDirectory() as root:
        labels = LabelStore(root)
        for who, batch, removed in steps:
            path = labels.save([_saved(who, *spec) for spec in batch])
            loaded = labels.load()
            assert figures(finished, loaded) == recomputed(finished, loaded)
            if removed:
                Path(path).unlink()
                again = labels.load()
                assert figures(finished, again) == recomputed(finished, again)
    assert labels_mod._tallies  # the finished runs' views were kept, not recomputed


def test_a_label_set_holding_one_label_twice_counts_it_twice(finished):
    lab = label("q1", TEXTS[0], "unsupported")
    twice = LabelSet((lab, lab))
    reports = judge_reports(finished, twice, n_boot=0)
    assert sum(r.claims.n for r in reports) == 2 * sum(
        r.claims.n for r in judge_reports(finished, LabelSet((lab,)), n_boot=0)
    )
