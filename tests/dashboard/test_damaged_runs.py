"""Every page over a demo results copy with one damaged run (issue 10, reader side): no
exception, the damaged run named in a warning, every other run still listed."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rageval_core.errors import shown
from rageval_core.links import md_escape
from rageval_core.runs.layout import MANIFEST
from tests.dashboard.apptest import PAGES, no_exception, texts
from tests.dashboard.conftest import LATEST, RUN_IDS, make_running


def dangling_manifest(results: Path) -> str:
    (results / LATEST / MANIFEST).unlink()
    (results / LATEST / MANIFEST).symlink_to(results / "nowhere.json")
    return "unreadable manifest"


def manifest_folder(results: Path) -> str:
    (results / LATEST / MANIFEST).unlink()
    (results / LATEST / MANIFEST).mkdir()
    return "unreadable manifest"


def no_parquet(results: Path) -> str:
    (results / LATEST / "questions.parquet").unlink()
    return "status complete but no questions.parquet"


def wrong_typed_journal_line(results: Path) -> str:
    make_running(results, LATEST, keep=5)
    journal = results / LATEST / "questions.jsonl"
    rows = [json.loads(line) for line in journal.read_text().splitlines()]
    rows[1]["answer"], rows[2]["error"] = 42, float("nan")
    journal.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f"questions.jsonl:2: question {rows[1]['question_id']!r}: column answer is int"


def strings_for_a_metric(results: Path) -> str:
    path = results / LATEST / "questions.parquet"
    t = pq.read_table(path)
    i = t.schema.get_field_index("faithfulness")
    as_text = pa.array([None if v is None else f"{v}" for v in t.column(i).to_pylist()])
    pq.write_table(t.set_column(i, "faithfulness", as_text), path)
    return "column faithfulness is string, expected double: values ignored"


DAMAGE = [dangling_manifest, manifest_folder, no_parquet, wrong_typed_journal_line]
DAMAGE += [strings_for_a_metric]


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__)
def test_every_page_survives_a_damaged_newest_run_and_names_it(app, results, damage):
    said = damage(results)
    at = no_exception(app(results).run())
    shown = set(at.dataframe[0].value["run_id"])
    assert set(RUN_IDS[:-1]) <= shown
    for page in PAGES:
        at.switch_page(f"app_pages/{page}.py").run()
        no_exception(at)
        warnings = " ".join(texts(at.warning))
        # the banner shows problems as plain text: markdown-active characters escaped
        assert LATEST in warnings and md_escape(said) in warnings, (page, warnings)


def test_a_folder_that_is_not_a_run_is_named_safely_and_ignored(app, results):
    name = "old results\n**copy**`"
    (results / name).mkdir()
    at = no_exception(app(results).run())
    warnings = " ".join(texts(at.warning))
    assert f"{md_escape(shown(name))}: folder name is not a valid run id" in warnings
    assert list(at.dataframe[0].value["run_id"]) == RUN_IDS[::-1]
