"""What the fuzz found, pinned: each reproducer is the damage value it shrank to, run
through the same checks as the fuzz (every page, with and without the damaged run in the
URL; the CLI commands that read runs)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.bounded import MAX_ITEMS
from rageval_core.query import ResultsStore
from tests.dashboard.apptest import seen
from tests.fuzz.damage import (
    COMMITTED,
    JOURNAL,
    MANIFEST,
    PARQUET,
    RUN_IDS,
    Garbage,
    HostileFolder,
    Huge,
    HugeValue,
    ManifestValue,
    NestedJson,
    Symlink,
    fresh_copy,
)
from tests.fuzz.harness import (
    COMMANDS,
    ENTRY,
    cli,
    cli_findings,
    environment,
    examine_cli,
    examine_dashboard,
)

# A column chunk of the third run's Parquet that no longer decompresses: the footer is
# fine, so the run is listed, but the Question page reads that chunk.
MD_LINK = "![t](http://127.0.0.1:9/t.png)[x](http://127.0.0.1:9/x)"
BAD_PAGE = Garbage(1, PARQUET, 0.5, b"\xff" * 32, False)
FOUND = {
    "manifest finished_at of another JSON type": ManifestValue(1, "finished_at", [1, "a"]),
    "manifest git_commit of another JSON type": ManifestValue(1, "git_commit", {"k": [1]}),
    "manifest judge.model of another JSON type": ManifestValue(1, "judge.model", 42),
    "manifest status of 1 MB echoed in the warning": ManifestValue(1, "status", Huge("string")),
    "Parquet column chunk that does not decompress": BAD_PAGE,
    "manifest thresholds with problems": ManifestValue(1, "config.thresholds", {"k": [1]}),
    "manifest shard count of a million": ManifestValue(1, "shards", 1_000_000),
    "manifest with markdown where the status belongs": ManifestValue(1, "status", MD_LINK),
    "manifest nested deeper than the parser recurses": NestedJson(1, MANIFEST),
    "journal line nested deeper than the parser recurses": NestedJson(1, JOURNAL),
    # one flipped byte in a column chunk the summary cache reads: the refresh itself failed
    "Parquet byte that breaks a cached column": Garbage(6, PARQUET, 0.5, b"\x01", False),
    # one flipped byte that DuckDB reports as a bare duckdb.Error ("Out of buffer")
    "Parquet byte that runs DuckDB out of buffer": Garbage(4, PARQUET, 0.5, b"\x01", False),
    # the oldest run's manifest a link to another run's: two summary rows under one id
    "manifest that is another run's": Symlink(0, MANIFEST, "other-run"),
    # a folder name with backticks is shown with them escaped (\x60): still named
    "folder named with backticks": HostileFolder(0, "`tick`"),
    # 10,000 retrieved ids in one row: the Question page drew a chunk and its form for each
    "10,000 retrieved ids in one row": HugeValue(0, "retrieved_ids", "list"),
}


@pytest.fixture
def tmp() -> Iterator[Path]:
    # Not tmp_path: pytest keeps only the newest three session folders of a user, and
    # other sessions on a shared machine delete them mid-run.
    with tempfile.TemporaryDirectory(prefix="rageval-fuzz-") as d:
        yield Path(d)


@pytest.mark.parametrize("damage", list(FOUND.values()), ids=list(FOUND))
def test_every_page_survives(damage, tmp):
    # With the damaged run in the URL: every page reads it, and the banner is on each.
    assert examine_dashboard(tmp, [damage], point_at_damage=True) == []


@pytest.mark.parametrize("damage", list(FOUND.values()), ids=list(FOUND))
def test_every_command_on_the_damaged_run_survives(damage, tmp):
    assert examine_cli(tmp, [damage], [c for c in COMMANDS if "D" in c]) == []


def test_a_huge_shard_count_does_not_hang_the_reader(tmp):
    """`shards: 1000000` in a manifest made every page and command open a million shard
    status files (minutes per page, 20 minutes for the CLI)."""
    results = fresh_copy(tmp)
    ManifestValue(1, "shards", 1_000_000).apply(results)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", "check", RUN_IDS[1], "--results", str(results)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert time.monotonic() - started < 30
    assert proc.returncode in (0, 1, 2) and "Traceback" not in proc.stderr


def test_an_os_error_on_a_results_file_is_one_line_naming_it(tmp):
    results = fresh_copy(tmp)
    Symlink(1, MANIFEST, "loop").apply(results)
    with environment(results, tmp / "xdg"):
        r = cli("check", RUN_IDS[1], "--results", str(results))
    assert r.code == 2 and len(r.err.splitlines()) == 1
    assert cli_findings(r, [RUN_IDS[1]]) == []


def test_an_os_error_on_the_output_file_names_it(tmp):
    results = fresh_copy(tmp)
    out = tmp / "report.html"
    out.mkdir()  # where the report should go there is a folder
    with environment(results, tmp / "xdg"):
        r = cli("report", RUN_IDS[1], "--out", str(out), "--results", str(results))
    assert r.code == 2
    assert r.err == f"rageval report: error: {out}: Is a directory\n"


def test_a_closed_stdout_is_not_a_traceback(tmp):
    """`rageval compare A B | head -1`: the reader goes away before the output ends."""
    results = fresh_copy(tmp)
    with subprocess.Popen(
        [sys.executable, "-m", "rageval_core.cli", "compare", RUN_IDS[0], RUN_IDS[1]]
        + ["--results", str(results)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp / "xdg")},
    ) as proc:
        proc.stdout.close()  # as `head` does once it has its line
        err = proc.stderr.read().decode()
        proc.wait(timeout=120)
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_a_run_deleted_after_listing_is_a_message_on_the_page(tmp):
    """The dashboard lists runs at most every 15 s; a run removed in between is read by
    the next page and must be a message naming it (the page's problems: a warning), not
    an exception."""
    results = fresh_copy(tmp)
    gone = RUN_IDS[1]
    with environment(results, tmp / "xdg"):
        at = AppTest.from_file(ENTRY, default_timeout=60).run()
        assert not at.exception
        shutil.rmtree(results / gone)
        at.query_params["run"] = gone
        at.switch_page("app_pages/diagnose.py").run()
        assert not at.exception, [e.value for e in at.exception]
        assert any(gone in seen(e.value) for e in [*at.error, *at.warning])


@pytest.mark.parametrize("cache_file", ["metrics/seg-", "run_summary"])
def test_a_damaged_derived_cache_is_rebuilt(cache_file, tmp):
    """The cache beside the runs can always be rebuilt (SPEC §4): a segment or summary
    file cut in half (a full disk, a bad copy) must not keep a view down."""
    results = fresh_copy(tmp)
    with environment(results, tmp / "xdg"):
        ResultsStore(str(results), read_only=True).close()  # what an earlier process left
        (damaged,) = [p for p in (tmp / "xdg").rglob("*.parquet") if cache_file in str(p)]
        damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
        at = AppTest.from_file(ENTRY, default_timeout=60).run()
        at.query_params.update(run=RUN_IDS[-1], question="q001")
        at.switch_page("app_pages/question.py").run()
        assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
        # the history table (the answer diff's claims table may follow it)
        history = next(d.value for d in at.dataframe if "config_name" in d.value.columns)
        assert set(history["run_id"]) == set(RUN_IDS)


def test_an_unreadable_question_is_not_called_missing(tmp):
    """The Question page said "Question 'q001' not found" when the question's row could
    not be decompressed: the user looks for a typo instead of a damaged file."""
    results = fresh_copy(tmp)
    BAD_PAGE.apply(results)
    with environment(results, tmp / "xdg"):
        at = AppTest.from_file(ENTRY, default_timeout=60).run()
        at.query_params.update(run=RUN_IDS[1], question="q001")
        at.switch_page("app_pages/question.py").run()
    errors = [e.value for e in at.error]
    assert not at.exception and len(errors) == 1, errors
    # DuckDB names the file for some damage and not for other (a dictionary offset)
    assert "not found" not in errors[0] and "unreadable results file" in errors[0]


def test_a_question_with_10000_chunks_draws_the_first_ones_and_counts_the_rest(tmp):
    """One row whose `retrieved_ids` held 10,000 ids kept the Question page drawing for
    57 s (an expander, its text and a relevance form per chunk); every other page took
    under 1 s. It draws the first chunks and says how many it left out."""
    results = fresh_copy(tmp)
    HugeValue(0, "retrieved_ids", "list").apply(results)
    with environment(results, tmp / "xdg"):
        at = AppTest.from_file(ENTRY, default_timeout=60).run()
        at.query_params.update(run=RUN_IDS[0], question="q001")
        at.switch_page("app_pages/question.py").run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    chunks = [e.label for e in at.expander if e.label.startswith("#")]
    assert len(chunks) == MAX_ITEMS and chunks[-1].startswith(f"#{MAX_ITEMS} ")
    assert any(f"{10_000 - MAX_ITEMS:,} more chunks not shown" in c.value for c in at.caption)


def _long_lists(n: int) -> dict:
    """Row 0's lists, each `n` long: chunks (all placed in the gold document), claims,
    chunk verdicts, missed and found statements, gold spans in `n` documents."""
    doc = "company-overview"
    return {
        "retrieved_ids": [f"c{i}" for i in range(n)],
        "retrieved_texts": [f"text {i}" for i in range(n)],
        "retrieved_scores": [1.0 - i / n for i in range(n)],
        "retrieved_doc_ids": [doc] * n,
        "retrieved_starts": [10 * i for i in range(n)],
        "retrieved_ends": [10 * i + 10 for i in range(n)],
        "gold_spans": [
            {"doc_id": doc if i == 0 else f"doc{i}", "start": 0, "end": 10} for i in range(n)
        ],
        "claims": [
            {"text": f"claim {i}", "verdict": "supported", "evidence_chunk_id": f"c{i}"}
            for i in range(n)
        ],
        "chunk_verdicts": [
            {"chunk_id": f"c{i}", "rank": i + 1, "relevant": i % 2 == 0, "reason": "r"}
            for i in range(n)
        ],
        "recall_statements": [
            {"text": f"statement {i}", "attributed": i % 2 == 0, "evidence_chunk_id": f"c{i}"}
            for i in range(2 * n)
        ],
    }


def test_every_list_of_a_row_stops_at_the_bound_and_counts_the_rest(tmp):
    results = fresh_copy(tmp)
    path = results / RUN_IDS[0] / PARQUET
    table = pq.read_table(COMMITTED / RUN_IDS[0] / PARQUET)
    rows = table.to_pylist()
    rows[0].update(_long_lists(MAX_ITEMS + 7))
    pq.write_table(pa.Table.from_pylist(rows, table.schema), path)
    with environment(results, tmp / "xdg"):
        at = AppTest.from_file(ENTRY, default_timeout=60).run()
        at.query_params.update(run=RUN_IDS[0], question="q001")
        at.switch_page("app_pages/question.py").run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    labels = [e.label for e in at.expander]
    for prefix in ("#", "Claim ", "Found "):
        assert len([x for x in labels if x.startswith(prefix)]) == MAX_ITEMS, prefix
    documents = [h.value for h in at.subheader if h.value.startswith("Gold document ")]
    assert len(documents) == MAX_ITEMS
    notes = [c.value.split(" (")[0] for c in at.caption if "not shown (" in c.value]
    assert notes == [
        "7 more claims not shown",
        "7 more chunks not shown",
        "7 more missed statements not shown",
        "7 more found statements not shown",
        "7 more chunks placed in this document not shown",
        "7 more gold documents not shown",
    ]
