"""Reproducers of the failures listed in `damage.KNOWN_OPEN`, checked with nothing
tolerated. While a tag is listed its reproducer is a strict xfail; when the fix lands the
reproducer passes, the XPASS fails the suite, and the tag must be removed from KNOWN_OPEN,
which also turns its damage back on in the fuzz."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.fuzz.damage import (
    KNOWN_OPEN,
    MANIFEST,
    PARQUET,
    FolderForFile,
    HostileFolder,
    JournalValue,
    Symlink,
    Truncate,
    WrongColumnType,
)
from tests.fuzz.harness import COMMANDS, examine_cli, examine_dashboard

ON_D = [c for c in COMMANDS if "D" in c]
REPRODUCERS = [
    ("manifest-not-a-file", "pages", Symlink(1, MANIFEST, "dangling")),
    ("manifest-not-a-file", "pages", FolderForFile(1, MANIFEST)),
    ("journal-types", "pages", JournalValue(1, 0, "answer", 42)),
    ("parquet-types", "pages", WrongColumnType(1, "tags", "string")),
    ("parquet-types", "pages", WrongColumnType(1, "faithfulness", "string")),
    ("invalid-folder-names", "pages", HostileFolder(1, "a..b")),
    ("invalid-folder-names", "pages", HostileFolder(1, "new\nline")),
    ("compare-empty-run", "cli", Truncate(1, PARQUET, 0.0)),
]


def _case(tag: str, where: str, damage) -> pytest.param:
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN_OPEN[tag])] if tag in KNOWN_OPEN else []
    return pytest.param(where, damage, marks=marks, id=f"{tag}-{where}-{type(damage).__name__}")


@pytest.mark.parametrize(("where", "damage"), [_case(*r) for r in REPRODUCERS])
def test_known_open_failure_is_still_open(where, damage):
    with tempfile.TemporaryDirectory(prefix="rageval-fuzz-") as d:
        if where == "pages":
            findings = examine_dashboard(Path(d), [damage], point_at_damage=True, open_tags=())
        else:
            findings = examine_cli(Path(d), [damage], ON_D, open_tags=())
    assert findings == []
