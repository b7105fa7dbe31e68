"""`run_coverage` over named runs: the same figures for those runs, and no claims read for
the others (the Runs table names its newest 1,000 runs rather than reading 10,000)."""

from __future__ import annotations

from rageval_core.labels import LabelSet
from rageval_core.query import run_coverage
from rageval_core.store.claims import ClaimsCache
from rageval_core.store.results import ResultsStore
from tests.core.labels.helpers import judged_row, label, write_run

R1, R2, R3 = "20260101-000000-a", "20260102-000000-b", "20260103-000000-c"
LABELS = LabelSet((label("q1", "Paris is big.", "supported"), label("q2", "Rome.", "supported")))


def test_named_runs_get_the_figures_of_all_runs_and_only_their_claims_are_read(tmp_path):
    root = tmp_path / "results"
    rows = [
        judged_row("q1", [("Paris is big.", "supported"), ("It has 3 towers.", "unsupported")]),
        judged_row("q2", [("Rome.", "contradicted")]),
    ]
    for rid in (R1, R2, R3):
        write_run(root, rid, rows)
    with ResultsStore(str(root), cache_dir=tmp_path / "named") as s:
        some = run_coverage(s, LABELS, (R3, R1))
        read = sorted(ClaimsCache(s)._existing())
    with ResultsStore(str(root), cache_dir=tmp_path / "all") as s:
        every = run_coverage(s, LABELS)
    assert set(some) == {R1, R3} and set(every) == {R1, R2, R3}
    assert some == {r: every[r] for r in (R1, R3)}
    assert every[R1].claims == 3 and every[R1].checked == 2  # the figures are real ones
    assert read == [R1, R3]  # R2's claims file was never built


def test_without_labels_there_is_no_coverage_and_no_claims_file_is_built(tmp_path):
    root = tmp_path / "results"
    write_run(root, R1, [judged_row("q1", [("Paris is big.", "supported")])])
    with ResultsStore(str(root), cache_dir=tmp_path / "c") as s:
        assert run_coverage(s, LabelSet()) == {}
        assert list(ClaimsCache(s)._existing()) == []
        assert run_coverage(s, LABELS)[R1].claims == 1  # with labels, the same store counts
