"""The fixtures the real tools wrote (tests/fixtures/imports, see make_fixtures.sh)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "imports"
CASES = {c["id"]: c for c in json.loads((FIXTURES / "cases.json").read_text())}
FILES = {
    "promptfoo": FIXTURES / "promptfoo" / "results.json",
    "inspect": FIXTURES / "inspect" / "fixture.eval",
    "inspect-json": FIXTURES / "inspect" / "fixture.json",
    "ragas": FIXTURES / "ragas" / "scores.csv",
    "ragas-jsonl": FIXTURES / "ragas" / "scores.jsonl",
    "ragas-parquet": FIXTURES / "ragas" / "scores.parquet",
    "deepeval": FIXTURES / "deepeval" / "latest_test_run.json",
}


def tool_of(kind: str) -> str:
    return kind.split("-")[0]


@pytest.fixture
def fixture_file():
    def get(kind: str) -> Path:
        path = FILES[kind]
        if not path.exists():
            pytest.fail(f"{path} is missing: run tests/fixtures/imports/make_fixtures.sh")
        return path

    return get


def nothing_written(results: Path) -> None:
    """No run and no staged import left in `results` (a refused import writes nothing)."""
    if not results.exists():
        return
    assert not [p for p in results.iterdir() if not p.name.startswith(".")]
    staging = results / ".rageval" / "import-staging"
    assert not staging.exists() or not list(staging.iterdir())
