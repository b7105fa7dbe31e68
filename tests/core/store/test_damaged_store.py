"""The store, the views and the CLI commands that read runs, over damaged run folders
(issue 10): a damaged run is a problem on that run, never an exception, and every healthy
run is still there. Real folders, DuckDB, subprocesses and a concurrent deleter."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core import query
from rageval_core.errors import RagevalError, ResultsError
from rageval_core.query import ResultsStore, RunProblem
from rageval_core.runs.layout import MANIFEST, journal_name, parquet_name
from rageval_core.runs.reading import list_runs, read_run_rows
from tests.core.query.conftest import row, write_run

OLD, NEW = "20260101-000000-bm25", "20260102-000000-dense"


def two_runs(results: Path) -> Path:
    """Two healthy runs; the newer one is returned for a test to damage."""
    rows = [row("q1", faithfulness=0.5), row("q2", faithfulness=1.0), row("q3")]
    write_run(results, OLD, rows, created_at="2026-01-01T00:00:00Z")
    return write_run(results, NEW, rows, created_at="2026-01-02T00:00:00Z")


def problems_of(store: ResultsStore, run_id: str) -> list[str]:
    return [p.message for p in store.problems if p.run_id == run_id]


def every_view(store: ResultsStore, run_id: str) -> None:
    """Each view a page calls, with `run_id` as the page's run; none may raise, except
    question_detail and compare_runs, which may raise a ResultsError the pages handle."""
    query.runs_overview(store)
    query.metric_trend(store, "faithfulness")
    query.failure_counts(store, [run_id])
    query.recall_curve(store)
    query.cost_quality(store)
    query.question_history(store, "q1")
    query.flaky_questions(store)
    query.question_rows(store, run_id)
    query.question_tags(store, run_id)
    query.bottom_questions(store, run_id, "faithfulness")
    query.bottom_questions(store, run_id, "total_ms")
    query.metric_distribution(store, run_id, "faithfulness")
    query.rerank_candidates(store, run_id)
    try:
        query.question_detail(store, run_id, "q1")
    except ResultsError:
        pass
    try:
        query.compare_runs(store, [OLD, run_id])
    except RagevalError:
        pass


# ---------------------------------------------------------------------------- manifest


@pytest.mark.parametrize("damage", ["dangling symlink", "folder"])
def test_a_manifest_that_cannot_be_opened_is_a_problem_of_its_run(results, damage):
    d = two_runs(results)
    (d / MANIFEST).unlink()
    if damage == "folder":
        (d / MANIFEST).mkdir()
    else:
        (d / MANIFEST).symlink_to(results / "nowhere")
    store = ResultsStore(results, read_only=True)
    (problem,) = problems_of(store, NEW)
    assert problem.startswith(f"{d / MANIFEST}: unreadable manifest")
    assert list(query.runs_overview(store)["run_id"]) == [OLD]
    assert store.run_info(NEW).parquet_files  # its rows are still there to read
    every_view(store, NEW)
    assert query.question_rows(store, NEW).total == 3


def test_a_missing_run_is_a_results_error_for_the_cli_and_empty_for_views(results):
    two_runs(results)
    store = ResultsStore(results, read_only=True)
    shutil.rmtree(results / NEW)  # deleted after the store listed it
    with pytest.raises(ResultsError, match="no such run"):
        store.run_info(NEW)
    page = query.question_rows(store, NEW)
    assert page.total == 0 and any("no such run" in p for p in page.problems)
    every_view(store, NEW)


# ---------------------------------------------------------------------------- no Parquet


def test_a_complete_run_without_its_parquet_is_a_warning_and_views_are_empty(results):
    d = two_runs(results)
    (d / parquet_name()).unlink()
    store = ResultsStore(results, read_only=True)
    assert problems_of(store, NEW) == [f"{d}: status complete but no questions.parquet"]
    every_view(store, NEW)
    page = query.question_rows(store, NEW)
    assert page.total == 0
    assert page.problems == (f"{d}: status complete but no questions.parquet",)
    assert query.bottom_questions(store, NEW, "faithfulness").rows.empty
    assert query.metric_distribution(store, NEW, "faithfulness").empty
    assert query.question_tags(store, NEW) == []
    with pytest.raises(ResultsError, match="cannot be read: .*no questions.parquet"):
        store.run_info(NEW)  # what `check`, `report` and `compare` say
    assert query.question_rows(store, OLD).total == 3


# ---------------------------------------------------------------------------- column types


def test_a_metric_stored_as_strings_is_reported_by_the_store_and_the_view(results):
    d = two_runs(results)
    p = d / parquet_name()
    t = pq.read_table(p)
    i = t.schema.get_field_index("faithfulness")
    pq.write_table(t.set_column(i, "faithfulness", pa.array(["0.5", "1.0", None])), p)
    message = f"{p}: column faithfulness is string, expected double: values ignored"
    store = ResultsStore(results, read_only=True)
    assert problems_of(store, NEW) == [message]
    overview = query.runs_overview(store).set_index("run_id")
    assert overview["faithfulness"].isna()[NEW] and overview.loc[OLD, "faithfulness"] == 0.75
    assert overview.loc[NEW, "n_questions"] == 3
    page = query.question_rows(store, NEW)
    assert page.problems == (message,) and page.rows["faithfulness"].isna().all()
    assert query.metric_distribution(store, NEW, "faithfulness").empty
    every_view(store, NEW)


def test_a_parquet_without_pinned_columns_is_reported_and_still_read(results):
    d = two_runs(results)
    p = d / parquet_name()
    pq.write_table(pq.read_table(p).drop(["failure_type"]), p)
    store = ResultsStore(results, read_only=True)
    assert problems_of(store, NEW) == [
        f"{p}: missing pinned column(s) failure_type: shown as empty"
    ]
    assert query.question_rows(store, NEW).total == 3
    every_view(store, NEW)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(at=st.integers(0, 3), byte=st.binary(min_size=1, max_size=1))
def test_a_parquet_written_over_at_its_start_is_reported_and_still_read(results, at, byte):
    """Readers go by the footer and never check the leading magic number (the fuzz suite
    found a run with a damaged first byte shown as healthy)."""
    shutil.rmtree(results, ignore_errors=True)
    p = two_runs(results) / parquet_name()
    old = p.read_bytes()
    p.write_bytes(old[:at] + byte + old[at + 1 :])
    store = ResultsStore(results, read_only=True)
    damaged = old[at : at + 1] != byte
    assert [m for m in problems_of(store, NEW) if "Parquet magic" in m] == (
        [f"{p}: starts with {p.read_bytes()[:4]!r}, not the Parquet magic b'PAR1': damaged"]
        if damaged
        else []
    )
    assert query.question_rows(store, NEW).total == 3
    every_view(store, NEW)


def test_sharded_runs_check_every_file(results):
    d = two_runs(results)
    (d / parquet_name()).rename(d / parquet_name(0))
    t = pq.read_table(d / parquet_name(0))
    i = t.schema.get_field_index("answer")
    bad = t.set_column(i, "answer", pa.array([1, 2, 3]))
    pq.write_table(bad, d / parquet_name(1))
    m = json.loads((d / MANIFEST).read_text())
    (d / MANIFEST).write_text(json.dumps({**m, "shards": 2}))
    for k in (0, 1):
        (d / f"shard-{k}.json").write_text(json.dumps({"status": "complete"}))
    store = ResultsStore(results, read_only=True)
    assert problems_of(store, NEW) == [
        f"{d / parquet_name(1)}: column answer is int64, expected string: values ignored"
    ]
    assert query.question_rows(store, NEW).total == 6
    every_view(store, NEW)


# ---------------------------------------------------------------------------- foreign rows

OWNERS = st.one_of(st.none(), st.just(NEW), st.just(OLD), st.text(max_size=30))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(owners=st.lists(OWNERS, min_size=3, max_size=3), journal=st.booleans())
def test_rows_naming_another_run_show_under_their_folder_and_are_named(results, owners, journal):
    """Whatever a file's `run_id` column says (another run, garbage, nothing), its rows are
    the folder's run's rows everywhere, and a name other than the folder's is a problem."""
    shutil.rmtree(results, ignore_errors=True)
    d = two_runs(results)
    if journal:
        lines = [{**row(q), "run_id": o} for q, o in zip(("q1", "q2", "q3"), owners, strict=True)]
        (d / parquet_name()).unlink()
        (d / journal_name()).write_text("".join(json.dumps(r) + "\n" for r in lines))
        source = d / journal_name()
    else:
        t = pq.read_table(d / parquet_name())
        i = t.schema.get_field_index("run_id")
        pq.write_table(t.set_column(i, "run_id", pa.array(owners, pa.string())), d / parquet_name())
        source = d / parquet_name()
    store = ResultsStore(results, read_only=True)
    strays = [p for p in problems_of(store, NEW) if "rows name run(s)" in p]
    foreign = {o for o in owners if o is not None and o != NEW}
    assert bool(strays) == bool(foreign)
    if foreign:
        assert strays[0].startswith(f"{source}: rows name run(s) ")
        assert strays[0].endswith(f", not {NEW}: shown under {NEW}")
    page = query.question_rows(store, NEW)
    assert page.total == 3 and set(page.rows["run_id"]) == {NEW}
    assert bool(foreign) == any("rows name run(s)" in p for p in page.problems)
    assert query.question_rows(store, OLD).total == 3  # the other run keeps only its own
    assert query.runs_overview(store).set_index("run_id").loc[NEW, "n_questions"] == 3
    table, problems = read_run_rows(next(r for r in list_runs(results) if r.run_id == NEW))
    assert set(table.column("run_id").to_pylist()) == {NEW}
    assert bool(foreign) == any("rows name run(s)" in p for p in problems)


# ---------------------------------------------------------------------------- journals


def test_a_wrong_typed_journal_line_is_named_and_the_run_still_shows(results):
    write_run(results, OLD, [row("q1"), row("q2")])
    d = write_run(results, NEW, [], status="running")
    lines = [row("q1"), {**row("q2"), "answer": 42}, {**row("q3"), "error": float("nan")}]
    (d / journal_name()).write_text("".join(json.dumps(r) + "\n" for r in lines))
    store = ResultsStore(results, read_only=True)
    assert problems_of(store, NEW) == [
        f"{d / journal_name()}:2: question 'q2': column answer is int, expected string: "
        "line ignored",
        f"{d / journal_name()}:3: question 'q3': column error is float, expected string: "
        "line ignored",
    ]
    overview = query.runs_overview(store).set_index("run_id")
    assert overview.loc[NEW, "n_questions"] == 1 and overview.loc[NEW, "status"] == "running"
    every_view(store, NEW)


# ---------------------------------------------------------------------------- folder names


def test_folders_that_are_not_runs_are_reported_once(results):
    two_runs(results)
    (results / "final results (v2)").mkdir()
    (results / ".git").mkdir()
    store = ResultsStore(results, read_only=True)
    assert [p for p in store.problems if p.run_id not in (OLD, NEW)] == [
        RunProblem(
            repr("final results (v2)"),
            "folder name is not a valid run id (letters, digits, . _ -): ignored",
        )
    ]
    assert sorted(query.runs_overview(store)["run_id"]) == [OLD, NEW]


# ---------------------------------------------------------------------------- concurrency


def test_refreshing_while_runs_are_created_and_deleted_never_raises(results):
    """A deleter thread replaces run folders in a loop while the store refreshes."""
    two_runs(results)
    template = results.parent / "template"
    write_run(template, "tmpl", [row("q1"), row("q2")])
    write_run(template, "live", [row("q1")], status="running")
    stop = threading.Event()

    def churn() -> None:
        n = 0
        while not stop.is_set():
            for src in ("tmpl", "live"):
                target = results / f"{src}-{n % 3}"
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(template / src, target)
            n += 1

    store = ResultsStore(results)  # writes its cache in the location, as `rageval` does
    worker = threading.Thread(target=churn)
    worker.start()
    deadline = time.monotonic() + 8  # ~40 refreshes here; the bug showed in 1 of ~30
    try:
        while time.monotonic() < deadline:
            store.refresh()
            assert {OLD, NEW} <= set(query.runs_overview(store)["run_id"])
            query.question_history(store, "q1")
    finally:
        stop.set()
        worker.join()


# ---------------------------------------------------------------------------- commands


def rageval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", *args], capture_output=True, text=True
    )


@pytest.mark.parametrize("damage", ["dangling manifest", "no parquet"])
def test_commands_that_read_runs_answer_in_one_line(results, tmp_path, damage):
    d = two_runs(results)
    if damage == "dangling manifest":
        (d / MANIFEST).unlink()
        (d / MANIFEST).symlink_to(results / "nowhere")
    else:
        (d / parquet_name()).unlink()
    loc = ["--results", str(results)]
    out = str(tmp_path / "report.html")
    for args in (
        ["check", OLD, "--baseline", "latest", *loc],
        ["check", NEW, *loc],
        ["report", NEW, "--out", out, *loc],
        ["report", OLD, "--baseline", NEW, "--out", out, *loc],
        ["compare", OLD, NEW, *loc],
    ):
        proc = rageval(*args)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
        assert proc.returncode in (0, 1, 2), (args, proc.returncode, proc.stderr)
        if proc.returncode:
            assert len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
            assert NEW in proc.stderr


# ---------------------------------------------------------------------------- data pages


def per_run_views(store: ResultsStore, run_id: str) -> dict[str, object]:
    """Each per-run view a page calls; a ResultsError is an answer, anything else fails."""
    out: dict[str, object] = {}
    calls = {
        "rows": lambda: query.question_rows(store, run_id),
        "tags": lambda: query.question_tags(store, run_id),
        "bottom": lambda: query.bottom_questions(store, run_id, "faithfulness"),
        "distribution": lambda: query.metric_distribution(store, run_id, "answer_correctness"),
        "rerank": lambda: query.rerank_candidates(store, run_id),
        "detail": lambda: query.question_detail(store, run_id, "q7"),
    }
    for name, call in calls.items():
        try:
            out[name] = call()
        except ResultsError as exc:
            assert "\n" not in str(exc) and len(str(exc)) < 300, str(exc)
            assert run_id in str(exc)
            out[name] = exc
    return out


@pytest.mark.parametrize("where", [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
def test_garbage_in_a_data_page_is_a_results_error_or_a_problem(results, where):
    """The footer is intact (so the schema reads) but a data page is not: DuckDB fails
    only when the rows are read, with errors of several types."""
    rows = [row(f"q{i}", answer=f"answer {i} " * 20, faithfulness=i / 300) for i in range(300)]
    write_run(results, OLD, rows)
    d = write_run(results, NEW, rows)
    p = d / parquet_name()
    data = bytearray(p.read_bytes())
    at = int(len(data) * where)
    data[at : at + 64] = b"\xff" * 64
    p.write_bytes(bytes(data))
    store = ResultsStore(results, read_only=True)
    got = per_run_views(store, NEW)
    if isinstance(got["rows"], ResultsError):
        pytest.fail(f"question_rows raised {got['rows']}: Diagnose has no handler for it")
    if got["rows"].total == 0:  # unreadable: an empty page with the reason, in page shape
        assert NEW in got["rows"].problems[-1] and "unreadable" in got["rows"].problems[-1]
        assert "question_id" in got["rows"].rows.columns
    assert per_run_views(store, OLD)["rows"].total == 300


def test_an_unreadable_results_location_is_one_problem_not_a_crash(tmp_path):
    loop = tmp_path / "results"
    loop.symlink_to(loop)  # scandir fails with ELOOP, as it would without permission
    with pytest.raises(ResultsError, match="unreadable results location"):
        list_runs(str(loop))
    store = ResultsStore(loop, read_only=True)
    (problem,) = store.problems
    assert problem.run_id == "" and problem.message.startswith(f"{loop}: unreadable results")
    assert query.runs_overview(store).empty
