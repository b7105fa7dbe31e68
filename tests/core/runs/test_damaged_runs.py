"""The reader on damaged run folders: every damage is a problem naming the file, never an
exception (issue 10). Real folders, real Parquet and JSONL, a real concurrent deleter."""

from __future__ import annotations

import json
import math
import shutil
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rageval_core.errors import shown
from rageval_core.runs.journal import read_journal
from rageval_core.runs.layout import MANIFEST, journal_name, parquet_name
from rageval_core.runs.reading import inspect_run, list_runs, read_run_rows, scan_runs
from rageval_core.runs.rows import QUESTION_SCHEMA
from tests.core.query.conftest import row, write_run

RUN = "20260101-000000-bm25"


def problems_of(root: Path, run_id: str = RUN) -> list[str]:
    (info,) = [r for r in list_runs(str(root)) if r.run_id == run_id]
    return info.problems


# ---------------------------------------------------------------------------- the manifest


@pytest.mark.parametrize("damage", ["dangling symlink", "folder", "symlink loop"])
def test_a_manifest_that_cannot_be_opened_is_a_problem_naming_it(tmp_path, damage):
    d = write_run(tmp_path, RUN, [row("q1")])
    write_run(tmp_path, "healthy", [row("q1")])
    manifest = d / MANIFEST
    manifest.unlink()
    if damage == "dangling symlink":
        manifest.symlink_to(tmp_path / "nowhere.json")
    elif damage == "folder":
        manifest.mkdir()
    else:
        manifest.symlink_to(manifest)
    runs = {r.run_id: r for r in list_runs(str(tmp_path))}
    assert runs["healthy"].ok and runs["healthy"].status == "complete"
    (problem,) = runs[RUN].problems
    assert problem.startswith(f"{manifest}: unreadable manifest (")
    assert runs[RUN].status == "corrupt" and runs[RUN].readable


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        (b"\xff\xfe{}".decode("latin-1"), "not UTF-8 JSON"),
        # json.loads guessed UTF-16 here: "UnicodeDecodeError: 'utf-16-be' … truncated data"
        (b"\x00{\x00}\x00".decode("latin-1"), "not valid JSON"),
        (b"\x80{}".decode("latin-1"), "not UTF-8 JSON"),
        ('{"run_id": "' + RUN + '", "status": "complete", "created_at": "x", "shards": 1e999}', ""),
        ('{"run_id": "' + RUN + '", "status": "' + "x" * 10_000 + '", "created_at": "x"}', ""),
        ('{"run_id": "' + RUN + '", "status": "complete", "created_at": "x", "shards": 10e9}', ""),
    ],
)
def test_a_hostile_manifest_is_one_bounded_problem(tmp_path, text, expected):
    d = write_run(tmp_path, RUN, [row("q1")])
    (d / MANIFEST).write_bytes(text.encode("latin-1", errors="replace"))
    (problem,) = problems_of(tmp_path)
    assert problem.startswith(f"{d / MANIFEST}: ") and expected in problem
    assert len(problem) < len(str(d)) + 250 and "codec" not in problem


@pytest.mark.parametrize(
    "field, value", [("finished_at", {"a": 1}), ("git_commit", [1]), ("judge", {"model": 3})]
)
def test_manifest_fields_of_the_wrong_type_are_a_problem(tmp_path, field, value):
    d = write_run(tmp_path, RUN, [row("q1")])
    m = json.loads((d / MANIFEST).read_text())
    m[field] = value
    (d / MANIFEST).write_text(json.dumps(m))
    (problem,) = problems_of(tmp_path)
    assert "invalid manifest" in problem


# ---------------------------------------------------------------------------- folder names


def test_folders_not_named_like_a_run_are_reported_hidden_ones_are_not(tmp_path):
    write_run(tmp_path, RUN, [row("q1")])
    hostile = "bad name\n<b>`x`<b>" + "y" * 200
    for name in ["my run", "a..b", hostile, ".rageval", ".DS_Store_dir"]:
        (tmp_path / name).mkdir()
    (tmp_path / "notes.txt").write_text("a file is not a run folder")
    runs, ignored = scan_runs(str(tmp_path))
    assert [r.run_id for r in runs] == [RUN]
    quoted = {f.name: f.message for f in ignored}
    assert set(quoted) == {repr("my run"), repr("a..b"), shown(hostile)}
    for name, message in quoted.items():
        assert "\n" not in name and "`" not in name and len(name) <= 80
        assert message == "folder name is not a valid run id (letters, digits, . _ -): ignored"
    assert list_runs(str(tmp_path)) == runs


# ---------------------------------------------------------------------------- journals

PINNED_TYPES = {f.name: f.type for f in QUESTION_SCHEMA}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=5)
    | st.sampled_from(["\ud800", "q\udfff"]),  # lone surrogates: valid JSON, not UTF-8
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def write_journal_run(root: Path, rows: list[dict]) -> Path:
    d = write_run(root, RUN, [], status="running")
    (d / journal_name()).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d / journal_name()


@pytest.mark.parametrize(
    "column, value",
    [
        ("answer", 42),
        ("error", math.nan),
        ("tags", "nightly"),
        ("faithfulness", "0.9"),
        ("retrieved_ids", [1, 2]),
        ("claims", [{"text": "c", "verdict": 1}]),
        ("input_tokens", 2**70),
        ("recall_at_5", [0.5]),
        ("answerable", "yes"),
        ("question_id", ["q2"]),
    ],
)
def test_a_wrong_typed_journal_field_drops_its_line_and_names_it(tmp_path, column, value):
    path = write_journal_run(tmp_path, [row("q1"), {**row("q2"), column: value}, row("q3")])
    info = inspect_run(str(tmp_path), RUN)
    table, problems = read_run_rows(info)
    assert table.column("question_id").to_pylist() == ["q1", "q3"]
    (problem,) = problems
    assert problem.startswith(f"{path}:2: ")
    assert f"column {column}" in problem and problem.endswith(": line ignored")
    if column != "question_id":
        assert "question 'q2'" in problem


def test_values_of_a_compatible_json_type_are_kept(tmp_path):
    ok = {**row("q1"), "faithfulness": 1, "input_tokens": 12.0, "retrieved_scores": [1, None]}
    write_journal_run(tmp_path, [ok])
    table, problems = read_run_rows(inspect_run(str(tmp_path), RUN))
    assert problems == []
    got = table.to_pylist()[0]
    assert got["faithfulness"] == 1.0 and got["input_tokens"] == 12
    assert got["retrieved_scores"] == [1.0, None]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(column=st.sampled_from(sorted(PINNED_TYPES)), value=json_values)
@example(column="run_id", value="\ud800")  # a lone surrogate: found by hypothesis
def test_any_json_value_in_any_pinned_field_is_read_or_reported(tmp_path, column, value):
    """Reading never raises; the row is kept with that value or its line is named."""
    shutil.rmtree(tmp_path / RUN, ignore_errors=True)
    path = write_journal_run(tmp_path, [row("q1"), {**row("q2"), column: value}])
    table, problems = read_run_rows(inspect_run(str(tmp_path), RUN))
    rows = {r["question_id"]: r for r in table.to_pylist()}
    if column == "run_id" and (value is None or (isinstance(value, str) and unicode_ok(value))):
        # the folder names the run: the line is kept under its id, another name is a problem
        assert rows["q2"]["run_id"] == RUN
        assert len(problems) == (value not in (None, RUN))
        assert all(p.startswith(f"{path}: rows name run(s) ") for p in problems)
        return
    if problems:
        (problem,) = problems
        assert problem.startswith(f"{path}:2: ") and f"column {column}" in problem
        assert len(problem) < len(str(path)) + 200
        assert list(rows) == ["q1"]
    else:
        kept = rows[value if column == "question_id" else "q2"]
        assert same(kept[column], value, PINNED_TYPES[column])


def unicode_ok(text: str) -> bool:
    """Text a file can hold: a lone surrogate is not, so its line is dropped and named."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def same(got, sent, t: pa.DataType) -> bool:
    """`got` (read back) is `sent` (the JSON value) as a value of type `t`."""
    if sent is None or got is None:
        return sent is None and got is None
    if pa.types.is_struct(t):
        return all(same(got[f.name], sent.get(f.name), f.type) for f in t)
    if pa.types.is_list(t):
        return len(got) == len(sent) and all(
            same(g, s, t.value_type) for g, s in zip(got, sent, strict=True)
        )
    if isinstance(sent, float) and math.isnan(sent):
        return isinstance(got, float) and math.isnan(got)
    return got == sent


def test_every_dropped_line_is_reported_and_the_last_good_write_wins(tmp_path):
    path = write_journal_run(
        tmp_path, [row("q1", answer="first"), row("q1", answer=7), row("q2", answer=None)]
    )
    rows, problems = read_journal(str(path))
    assert [(r["question_id"], r["answer"]) for r in rows] == [("q1", "first"), ("q2", None)]
    assert [p.split(": ", 1)[0] for p in problems] == [f"{path}:2"]


# ---------------------------------------------------------------------------- Parquet columns


def rewrite(path: Path, table: pa.Table) -> None:
    pq.write_table(table, path)


def test_a_pinned_metric_stored_as_strings_is_reported_and_ignored(tmp_path):
    d = write_run(tmp_path, RUN, [row("q1", faithfulness=0.5), row("q2", faithfulness=1.0)])
    p = d / parquet_name()
    t = pq.read_table(p)
    i = t.schema.get_field_index("faithfulness")
    rewrite(p, t.set_column(i, "faithfulness", pa.array(["0.5", "high"])))
    info = inspect_run(str(tmp_path), RUN)
    table, problems = read_run_rows(info)
    assert problems == [f"{p}: column faithfulness is string, expected double: values ignored"]
    assert table.column("faithfulness").to_pylist() == [None, None]
    assert table.column("question_id").to_pylist() == ["q1", "q2"]


def test_a_parquet_lacking_pinned_columns_says_which(tmp_path):
    d = write_run(tmp_path, RUN, [row("q1"), row("q2")])
    p = d / parquet_name()
    rewrite(p, pq.read_table(p).drop(["answer_correctness", "claims"]))
    table, problems = read_run_rows(inspect_run(str(tmp_path), RUN))
    assert problems == [f"{p}: missing pinned column(s) claims, answer_correctness: shown as empty"]
    assert table.num_rows == 2


def test_compatible_column_types_are_not_problems(tmp_path):
    d = write_run(tmp_path, RUN, [row("q1", input_tokens=3), row("q2", input_tokens=None)])
    p = d / parquet_name()
    t = pq.read_table(p)
    for name, typ in [("input_tokens", pa.float64()), ("recall_at_5", pa.float32())]:
        i = t.schema.get_field_index(name)
        t = t.set_column(i, name, t.column(name).cast(typ))
    i = t.schema.get_field_index("error")
    t = t.set_column(i, "error", pa.nulls(2))
    rewrite(
        p,
        t.cast(
            t.schema.set(
                t.schema.get_field_index("question"), pa.field("question", pa.large_string())
            )
        ),
    )
    table, problems = read_run_rows(inspect_run(str(tmp_path), RUN))
    assert problems == []
    assert table.column("input_tokens").to_pylist() == [3, None]


# ---------------------------------------------------------------------------- concurrency


def test_listing_while_another_thread_deletes_runs_never_raises(tmp_path):
    """A run deleted during a listing is left out (or reported), never an exception."""
    for i in range(6):
        write_run(tmp_path, f"keep-{i}", [row("q1")])
    template = write_run(tmp_path / "spare", "tmpl", [row("q1")])
    stop = threading.Event()

    def churn() -> None:
        n = 0
        while not stop.is_set():
            target = tmp_path / f"gone-{n % 4}"
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(template, target)
            n += 1

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        for _ in range(300):
            runs = list_runs(str(tmp_path))
            assert {f"keep-{i}" for i in range(6)} <= {r.run_id for r in runs}
    finally:
        stop.set()
        worker.join()
