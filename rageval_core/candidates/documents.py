"""The documents questions are generated from: read from a documents file or a folder of
text files, fingerprinted (the versions a candidate records) and cut into sections (what
coverage counts).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rageval_core.candidates.model import Source
from rageval_core.dataset.documents import load_documents
from rageval_core.errors import DatasetError
from rageval_core.models import Document
from rageval_core.userfiles import read_text

TEXT_SUFFIXES = (".txt", ".md", ".rst", ".text", ".markdown")
"""The files of a documents folder that are read (others are skipped and counted)."""
MAX_FOLDER_FILES = 100_000

_HEADING = re.compile(r"^#{1,6}\s+\S", re.MULTILINE)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")


def read_documents(path: str | os.PathLike[str]) -> tuple[Document, ...]:
    """The documents of DOCS: a documents file (JSONL or a YAML list of {id, text, title?,
    version?}, as a dataset's `documents:`), or a folder whose text files (`TEXT_SUFFIXES`,
    searched recursively, in path order) become documents named by their relative path."""
    path = Path(path)
    if path.is_dir():
        return _folder(path)
    problems: list[str] = []
    docs = load_documents(path, problems)
    if problems or docs is None:
        raise DatasetError(f"{path}: cannot read the documents", problems)
    if not docs:
        raise DatasetError(f"{path}: has no documents")
    return tuple(docs)


def _folder(root: Path) -> tuple[Document, ...]:
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES)
    if not files:
        raise DatasetError(
            f"{root}: holds no text files ({', '.join(TEXT_SUFFIXES)}) to generate from"
        )
    if len(files) > MAX_FOLDER_FILES:
        raise DatasetError(f"{root}: holds more than {MAX_FOLDER_FILES} text files")
    docs = []
    for file in files:
        text = read_text(file, "document", DatasetError)
        if text.strip():
            docs.append(Document(id=file.relative_to(root).as_posix(), text=text, title=file.stem))
    if not docs:
        raise DatasetError(f"{root}: every text file is empty")
    return tuple(docs)


@dataclass(frozen=True)
class Piece:
    """A range of a document: a sentence a template asks about, a passage sent to the LLM."""

    doc: Document
    start: int
    end: int

    @property
    def text(self) -> str:
        """The range as the document writes it."""
        return self.doc.text[self.start : self.end]

    @property
    def flat(self) -> str:
        """The range with its white space (a hard-wrapped line's breaks) as single spaces."""
        return " ".join(self.text.split())


@lru_cache(maxsize=4096)
def source(doc: Document) -> Source:
    """The version a candidate written from `doc` records: its declared version and the
    sha256 of its text, so a later change of the text is seen even when nobody bumped
    the version. Kept for the documents seen last: every candidate of a document
    records it."""
    digest = hashlib.sha256(doc.text.encode("utf-8", "surrogatepass")).hexdigest()
    return Source(doc.id, doc.version, digest)


def sections(text: str) -> tuple[tuple[int, int], ...]:
    """The sections of a document as character ranges: from each Markdown heading to the
    next when it has headings, else its paragraphs (blocks between blank lines). Blank
    ranges are left out; every character of content is in exactly one section."""
    if _HEADING.search(text):
        cuts = [m.start() for m in _HEADING.finditer(text)]
    else:
        cuts = [m.end() for m in _PARAGRAPH_BREAK.finditer(text)]
    bounds = sorted({0, *cuts, len(text)})
    return tuple((a, b) for a, b in zip(bounds, bounds[1:], strict=False) if text[a:b].strip())
