"""What the code and the docs cite is in the repository: no file under `rageval_core/`,
`dashboard/` or `docs/`, nor README.md, points at a product spec, a style guide or a
shared folder that a clone of the repository does not have. Cite a page of docs/, which
says it in the project's own words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = re.compile(r"SPEC\s*§|\bSPEC\.md\b|\bSTYLE\.md\b|\bTESTING\.md\b|\bPERF\.md\b|shared/")


def cited_outside(text: str) -> list[str]:
    """`line N: …` of each line citing a document the repository does not hold."""
    return [
        f"line {n}: {line.strip()[:100]}"
        for n, line in enumerate(text.splitlines(), 1)
        if OUTSIDE.search(line)
    ]


def _files() -> list[Path]:
    found = [ROOT / "README.md"]
    for tree in ("rageval_core", "dashboard", "docs"):
        found += [
            p
            for p in (ROOT / tree).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".png"
        ]
    return sorted(found)


def test_nothing_cites_a_document_outside_the_repository():
    found = []
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # not text: cites nothing
            continue
        found += [f"{path.relative_to(ROOT)} {c}" for c in cited_outside(text)]
    assert not found, found


@pytest.mark.parametrize(
    "line",
    [
        '"""Golden datasets (SPEC §2): load and validate."""',
        "# the pinned columns (SPEC§4)",
        "The rule underneath is the one in STYLE.md.",
        "see /work/shared/TESTING.md",
        "as PERF.md measures",
    ],
)
def test_a_citation_outside_is_seen(line):
    assert cited_outside(f"first\n{line}\n") == [f"line 2: {line.strip()}"]


def test_citations_of_docs_pass():
    assert cited_outside("Golden datasets (docs/datasets.md); `_SPECS` and inspect_spec") == []
