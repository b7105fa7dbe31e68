"""The narrow claims cache: one file per finished run and fingerprint, running runs read
live, damaged runs contribute nothing (and break nothing), batch and run-by-run reads
give the same rows."""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest

from rageval_core.labels import LabelSet
from rageval_core.query import judge_reports, run_coverage
from rageval_core.runs.atomic import write_parquet
from rageval_core.runs.rows import rows_to_table
from rageval_core.store.claims import ClaimsCache
from rageval_core.store.results import ResultsStore
from tests.core.labels.helpers import judged_row, label, write_run
from tests.core.query.conftest import row

ROWS = [
    judged_row("q1", [("Paris is big.", "supported"), ("Two towers.", "unsupported")]),
    judged_row("q2", [("Rome.", "contradicted")], judge_error=None, answer_correctness=0.9),
    judged_row("q3", [], refused=True),
]
LABELS = LabelSet((label("q1", "Two towers.", "unsupported"), label("q2", "rome", "supported")))


def open_store(tmp_path):
    return ResultsStore(str(tmp_path / "results"), cache_dir=tmp_path / "cache")


def test_batch_and_run_by_run_reads_agree(tmp_path):
    write_run(tmp_path / "results", "20260101-000000-a", ROWS)
    with open_store(tmp_path) as store, store.cursor() as cur:
        cache = ClaimsCache(store)
        (info,) = store.runs()
        batch = cache._read_batch(cur, [info]).sort_by([("question_id", "ascending")])
        single = cache._read_run(cur, info).sort_by([("question_id", "ascending")])
    assert batch.to_pylist() == single.to_pylist()
    claims = [r for r in batch.to_pylist() if r["claim"] is not None]
    assert [(r["claim_key"], r["verdict"]) for r in claims] == [
        ("paris is big", "supported"),
        ("two towers", "unsupported"),
        ("rome", "contradicted"),
    ]
    assert batch.num_rows == 3 + 3  # a row per question and per claim


def test_each_run_is_unnested_once_per_fingerprint(tmp_path):
    run = write_run(tmp_path / "results", "20260101-000000-a", ROWS)
    with open_store(tmp_path) as store:
        judge_reports(store, LABELS)
        (first,) = (tmp_path / "cache" / "claims").iterdir()
        stamp = first.stat().st_mtime_ns
        judge_reports(store, LABELS)
        assert first.stat().st_mtime_ns == stamp
        # the run's files change (a re-upload): a new file replaces the old one
        write_parquet(
            run / "questions.parquet", rows_to_table([{**r, "run_id": run.name} for r in ROWS[:1]])
        )
        os.utime(run / "questions.parquet", ns=(1, 1))
        store.refresh()
        (report,) = judge_reports(store, LABELS)
        (second,) = (tmp_path / "cache" / "claims").iterdir()
    assert second.name != first.name and not first.exists()
    assert report.claims.n == 1


def test_running_runs_are_read_live_and_never_cached(tmp_path):
    write_run(tmp_path / "results", "20260101-000000-a", ROWS, status="running")
    with open_store(tmp_path) as store:
        cov = run_coverage(store, LABELS)
        assert not any((tmp_path / "cache" / "claims").iterdir())
    assert cov["20260101-000000-a"].claims == 3 and cov["20260101-000000-a"].checked == 2


def test_damaged_and_claimless_runs_contribute_nothing(tmp_path):
    root = tmp_path / "results"
    write_run(root, "20260101-000000-good", ROWS)
    bad = write_run(root, "20260102-000000-bad", ROWS)
    (bad / "questions.parquet").write_bytes(b"PAR1 not parquet PAR1")
    bare = write_run(root, "20260103-000000-bare", ROWS)
    table = rows_to_table([{**r, "run_id": bare.name} for r in ROWS]).drop_columns(["claims"])
    pq.write_table(table, bare / "questions.parquet")
    with open_store(tmp_path) as store:
        cov = run_coverage(store, LABELS)
        (report,) = judge_reports(store, LABELS)
    assert set(cov) == {"20260101-000000-good"}  # the others have no claims to count
    assert report.claims.n == 2
    assert len(report.runs) == 3  # still runs of the judge: the Judge page lists them


@pytest.mark.parametrize("text", ["", "   "])
def test_claims_without_text_to_match_are_kept_but_match_nothing(tmp_path, text):
    rows = [
        row(
            "q1",
            claims=[
                {
                    "text": text,
                    "verdict": "supported",
                    "evidence_chunk_id": None,
                    "evidence": None,
                    "reason": "",
                }
            ],
            faithfulness=1.0,
        )
    ]
    write_run(tmp_path / "results", "20260101-000000-a", rows)
    with open_store(tmp_path) as store:
        (report,) = judge_reports(store, LABELS)
    assert report.claims.n == 0


def test_a_deleted_run_takes_its_claims_file_along(tmp_path):
    import shutil

    write_run(tmp_path / "results", "20260101-000000-a", ROWS)
    gone = write_run(tmp_path / "results", "20260102-000000-b", ROWS)
    with open_store(tmp_path) as store:
        judge_reports(store, LABELS)
        assert len(list((tmp_path / "cache" / "claims").iterdir())) == 2
        shutil.rmtree(gone)
        store.refresh()
        (report,) = judge_reports(store, LABELS)
    (left,) = (tmp_path / "cache" / "claims").iterdir()
    assert left.name.startswith("20260101-000000-a-") and report.claims.n == 2
