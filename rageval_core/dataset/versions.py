"""The document versions a dataset records (`document_versions:`, written by `rageval
dataset refresh`) and the warning when the documents on disk are not those versions:
gold written against one text may no longer stand in another.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from rageval_core.dataset.files import Located
from rageval_core.dataset.hashing import document_sha256
from rageval_core.dataset.records import Record, type_name
from rageval_core.errors import shown
from rageval_core.models import Document

VERSIONS_KEY = "document_versions"
_SHA256 = re.compile(r"[0-9a-f]{64}")


def recorded_versions(rec: Record) -> dict[str, str]:
    """Document id -> the sha256 of its text the dataset was written against; problems
    (not a mapping, not 64 lowercase hex digits) named with file and line."""
    raw = rec.data.get(VERSIONS_KEY)
    if raw is None:
        return {}
    if not isinstance(raw, Located):
        rec.problem(
            f"'{VERSIONS_KEY}' must be a mapping of document id to sha256, not {type_name(raw)}",
            VERSIONS_KEY,
        )
        return {}
    found = {}
    for doc_id, digest in raw.items():
        if (
            not isinstance(doc_id, str)
            or not isinstance(digest, str)
            or not _SHA256.fullmatch(digest)
        ):
            rec.problems.append(
                f"{rec.file}:{raw.line_of(doc_id)}: {rec.subject}: {VERSIONS_KEY}: "
                f"{shown(doc_id)} needs the sha256 of its text (64 lowercase hex digits), "
                f"not {shown(digest)}"
            )
            continue
        found[doc_id] = digest
    return found


def version_warnings(
    recorded: Mapping[str, str], documents: Sequence[Document], file: Path, line: int
) -> tuple[str, ...]:
    """One warning per recorded document whose text on disk is another version (or gone)."""
    texts = {d.id: d for d in documents}
    warnings = []
    for doc_id, digest in recorded.items():
        doc = texts.get(doc_id)
        if doc is None:
            now = "is not in the documents"
        elif (sha := document_sha256(doc)) != digest:
            now = f"has changed (recorded sha256 {digest[:12]}, on disk {sha[:12]})"
        else:
            continue
        warnings.append(
            f"{file}:{line}: document {shown(doc_id)} {now}: its gold may no longer stand; "
            "run `rageval dataset refresh`"
        )
    return tuple(warnings)
