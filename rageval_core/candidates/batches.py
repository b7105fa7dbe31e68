"""Candidate batches as the dashboard's Candidates page finds them (docs/dashboard.md):
each a folder `rageval dataset generate --out DIR` wrote, named by its folder.

They are looked for in one place, the *candidates location*: `$RAGEVAL_CANDIDATES`
(`rageval dashboard --candidates DIR` sets it), else `candidates/` inside the results
location (a folder the results listing leaves alone, `runs.layout.folder_kind`). A
location that is itself a batch is that one batch; otherwise every subfolder holding a
`candidates.jsonl` is one. Folder names are ids in URLs (`?batch=`), so only names a
run id could have are listed. Local folders only. Nothing here writes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rageval_core.candidates.documents import read_documents
from rageval_core.candidates.files import CANDIDATES_FILE, DOCUMENTS_FILE, read_candidates
from rageval_core.candidates.model import Candidate
from rageval_core.errors import DatasetError
from rageval_core.runs.layout import (
    CANDIDATES_ENV,
    CANDIDATES_FOLDER,
    filesystem,
    is_remote,
    is_run_id,
)


def candidates_location(results_location: str, explicit: str | None = None) -> str:
    """`explicit`, else $RAGEVAL_CANDIDATES, else `candidates/` in the results location."""
    if explicit or os.environ.get(CANDIDATES_ENV):
        return str(explicit or os.environ[CANDIDATES_ENV])
    return f"{results_location.rstrip('/')}/{CANDIDATES_FOLDER}"


def list_batches(location: str) -> dict[str, Path]:
    """Batch name -> folder, sorted by name; {} for a location that is not a local folder
    (a bucket: the page says so) or holds no batch."""
    if is_remote(location):
        return {}
    root = Path(filesystem(location)[1])
    if (root / CANDIDATES_FILE).is_file():
        return {root.name: root} if is_run_id(root.name) else {}
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:  # no such folder yet, or not a folder
        return {}
    return {p.name: p for p in folders if is_run_id(p.name) and (p / CANDIDATES_FILE).is_file()}


@dataclass(frozen=True)
class Batch:
    """One batch read: its candidates in file order and the texts of the documents they
    quote (doc id -> text)."""

    name: str
    path: Path
    candidates: tuple[Candidate, ...]
    documents: dict[str, str]


def read_batch(name: str, path: Path) -> Batch:
    """The batch in `path`; a DatasetError naming the file (and line) when it is damaged."""
    candidates = tuple(read_candidates(path / CANDIDATES_FILE))
    docs = path / DOCUMENTS_FILE
    if not docs.is_file():
        raise DatasetError(f"{docs}: missing (the documents the candidates quote)")
    texts = {d.id: d.text for d in read_documents(docs)}
    return Batch(name, path, candidates, texts)
