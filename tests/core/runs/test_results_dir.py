"""The results directory: ids, atomic writes, journals and a reader that never crashes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rageval_core.errors import ResultsError
from rageval_core.models import DatasetRef, JudgeRef, RunManifest
from rageval_core.runs.atomic import atomic_write_json, write_parquet
from rageval_core.runs.journal import Journal, read_journal
from rageval_core.runs.layout import (
    MANIFEST,
    RUN_ID_RE,
    default_run_id,
    journal_name,
    parquet_name,
    validate_run_id,
)
from rageval_core.runs.manifest import manifest_from_dict, manifest_to_dict
from rageval_core.runs.reading import inspect_run, list_runs, read_run_rows
from rageval_core.runs.rows import QUESTION_SCHEMA, rows_to_table


def manifest(run_id: str, status: str = "complete", **kw) -> RunManifest:
    return RunManifest(
        run_id=run_id,
        status=status,
        created_at="2026-11-01T09:00:00Z",
        config={"name": "bm25"},
        dataset=DatasetRef("ds", "1", "abc", 2),
        judge=JudgeRef("offline"),
        **kw,
    )


def row(run_id: str, qid: str, **kw) -> dict:
    return {"run_id": run_id, "question_id": qid, "question": f"what is {qid}?", **kw}


def write_run(root: Path, run_id: str, rows: list[dict], status: str = "complete", **kw) -> Path:
    d = root / run_id
    atomic_write_json(d / MANIFEST, manifest_to_dict(manifest(run_id, status, **kw)))
    if status == "running":
        with Journal(d / journal_name()) as j:
            for r in rows:
                j.append(r)
    else:
        write_parquet(d / parquet_name(), rows_to_table(rows))
    return d


@pytest.mark.parametrize(
    "bad", ["", "../etc", "a/b", ".hidden", "x' OR 1=1 --", "a..b", "é", "a" * 129, None, 3]
)
def test_invalid_run_ids_are_rejected(bad):
    with pytest.raises(ResultsError, match="invalid run id"):
        validate_run_id(bad)


@given(st.from_regex(RUN_ID_RE, fullmatch=True).filter(lambda s: ".." not in s))
def test_valid_run_ids_round_trip(run_id):
    assert validate_run_id(run_id) == run_id


def test_default_run_id_is_timestamped_and_safe():
    from datetime import UTC, datetime

    rid = default_run_id("bm25 / rerank!", datetime(2026, 11, 2, 9, 0, tzinfo=UTC))
    assert rid == "20261102-090000-bm25-rerank"


def test_atomic_write_leaves_no_temp_files(tmp_path):
    target = tmp_path / "sub" / "f.json"
    atomic_write_json(target, {"a": 1})
    atomic_write_json(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 2}
    assert [p.name for p in target.parent.iterdir()] == ["f.json"]


def test_manifest_round_trip_and_invalid_manifest_names_file():
    m = manifest("r1", tags=("nightly",), totals={"n": 2})
    assert manifest_from_dict(manifest_to_dict(m)) == m
    with pytest.raises(ResultsError, match=r"m\.json: invalid manifest"):
        manifest_from_dict({"run_id": "r1"}, "m.json")
    with pytest.raises(ResultsError, match="status"):
        manifest_from_dict({**manifest_to_dict(m), "status": "weird"})
    stale = manifest("r2", stale_questions={"q1": "gold_spans[0]: 'x' is gone"})
    assert manifest_from_dict(manifest_to_dict(stale)) == stale
    for bad in (["q1"], {"q1": 3}):
        with pytest.raises(ResultsError, match="stale_questions must map question ids"):
            manifest_from_dict({**manifest_to_dict(m), "stale_questions": bad}, "m.json")


def test_rows_to_table_fills_missing_columns_with_null():
    t = rows_to_table([row("r", "q1", faithfulness=0.5)])
    assert t.schema.equals(QUESTION_SCHEMA)
    d = t.to_pylist()[0]
    assert d["faithfulness"] == 0.5 and d["recall_at_5"] is None and d["claims"] is None


def test_rows_to_table_keeps_extra_k_columns():
    t = rows_to_table([row("r", "q1", recall_at_50=1.0)])
    assert "recall_at_50" in t.column_names and "precision_at_50" in t.column_names


JOURNAL_WRITER = """
import sys, time
from rageval_core.runs.journal import Journal
j = Journal(sys.argv[1])
i = 0
while True:
    j.append({"question_id": f"q{i}", "answer": "x" * 5000})
    i += 1
    if i == 20:
        print("ready", flush=True)
"""


def test_journal_survives_sigkill(tmp_path):
    path = tmp_path / "questions.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-c", JOURNAL_WRITER, str(path)], stdout=subprocess.PIPE
    )
    assert proc.stdout.readline().strip() == b"ready"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    rows, problems = read_journal(str(path))
    assert len(rows) >= 20
    assert [r["question_id"] for r in rows] == [f"q{i}" for i in range(len(rows))]
    assert len(problems) <= 1  # at most the one line being written when killed


def test_torn_last_line_is_reported_not_raised(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_text('{"question_id": "q1"}\n{"question_id": "q2"}\n{"question_id": "q3", "ans')
    rows, problems = read_journal(str(path))
    assert [r["question_id"] for r in rows] == ["q1", "q2"]
    assert problems == [f"{path}:3: truncated last line (interrupted write)"]


def test_appending_after_a_torn_line_keeps_the_new_row(tmp_path):
    # --resume after kill -9 reopens a journal whose last line was cut mid-write: the next
    # row must start on its own line, not be glued to the torn one and lost with it.
    path = tmp_path / "questions.jsonl"
    path.write_text('{"question_id": "q1"}\n{"question_id": "q2", "ans')
    with Journal(path) as j:
        j.append({"question_id": "q3"})
    rows, problems = read_journal(str(path))
    assert [r["question_id"] for r in rows] == ["q1", "q3"]
    assert len(problems) == 1 and ":2: " in problems[0]


def test_journal_repeated_question_keeps_last_write(tmp_path):
    path = tmp_path / "questions.jsonl"
    with Journal(path) as j:
        j.append({"question_id": "q1", "answer": "old"})
        j.append({"question_id": "q1", "answer": "new"})
    rows, _ = read_journal(str(path))
    assert rows == [{"question_id": "q1", "answer": "new"}]


def test_list_runs_reports_every_broken_run_and_keeps_going(tmp_path):
    write_run(tmp_path, "ok-run", [row("ok-run", "q1"), row("ok-run", "q2")])
    write_run(tmp_path, "live-run", [row("live-run", "q1")], status="running")
    (tmp_path / "no-manifest").mkdir()
    bad_json = write_run(tmp_path, "bad-json", [row("bad-json", "q1")])
    (bad_json / MANIFEST).write_text("{not json")
    corrupt = write_run(tmp_path, "corrupt-parquet", [row("corrupt-parquet", "q1")])
    (corrupt / parquet_name()).write_bytes(b"PAR1 garbage")
    future = write_run(tmp_path, "future", [row("future", "q1")], schema_version=99)
    (tmp_path / ".rageval").mkdir()
    (tmp_path / "stray.txt").write_text("not a run")
    assert future.exists()

    runs = {r.run_id: r for r in list_runs(str(tmp_path))}
    assert sorted(runs) == [
        "bad-json",
        "corrupt-parquet",
        "future",
        "live-run",
        "no-manifest",
        "ok-run",
    ]
    assert runs["ok-run"].ok and runs["ok-run"].status == "complete"
    assert runs["live-run"].status == "running" and runs["live-run"].journal_files
    assert "missing manifest" in runs["no-manifest"].problems[0]
    assert "not valid JSON" in runs["bad-json"].problems[0]
    assert "newer than" in runs["future"].problems[0]

    table, problems = read_run_rows(runs["corrupt-parquet"])
    assert table.num_rows == 0 and "unreadable Parquet" in problems[0]
    table, problems = read_run_rows(runs["live-run"])
    assert table.column("question_id").to_pylist() == ["q1"] and not problems


def test_sharded_run_status_and_union(tmp_path):
    d = tmp_path / "sharded"
    atomic_write_json(d / MANIFEST, manifest_to_dict(manifest("sharded", "running", shards=2)))
    write_parquet(d / parquet_name(0), rows_to_table([row("sharded", "q1")]))
    atomic_write_json(d / "shard-0.json", {"status": "complete"})
    with Journal(d / journal_name(1)) as j:
        j.append(row("sharded", "q2"))
    info = inspect_run(str(tmp_path), "sharded")
    assert info.status == "running"
    table, _ = read_run_rows(info)
    assert sorted(table.column("question_id").to_pylist()) == ["q1", "q2"]

    write_parquet(d / parquet_name(1), rows_to_table([row("sharded", "q2")]))
    atomic_write_json(d / "shard-1.json", {"status": "complete"})
    info = inspect_run(str(tmp_path), "sharded")
    assert info.status == "complete" and len(info.parquet_files) == 2


def test_parquet_lacking_pinned_columns_reads_with_nulls_and_says_so(tmp_path):
    import pyarrow as pa

    d = tmp_path / "old"
    atomic_write_json(d / MANIFEST, manifest_to_dict(manifest("old", schema_version=0)))
    pq.write_table(
        pa.table({"run_id": ["old"], "question_id": ["q1"], "mrr": [0.5]}), d / "questions.parquet"
    )
    table, problems = read_run_rows(inspect_run(str(tmp_path), "old"))
    assert problems == [
        f"{d / 'questions.parquet'}: missing pinned column(s) question, reference_answer, "
        "answerable, tags, answer, retrieved_ids, retrieved_texts, gold_ids and 52 more: "
        "shown as empty"
    ]
    r = table.to_pylist()[0]
    assert r["mrr"] == 0.5 and r["faithfulness"] is None and r["claims"] is None


def test_missing_results_dir_lists_no_runs(tmp_path):
    assert list_runs(str(tmp_path / "nope")) == []


def test_written_files_are_readable_by_other_users(tmp_path):
    atomic_write_json(tmp_path / "m.json", {"a": 1})
    write_parquet(tmp_path / "q.parquet", rows_to_table([row("r", "q1")]))
    for name in ("m.json", "q.parquet"):
        assert (tmp_path / name).stat().st_mode & 0o044 == 0o044
