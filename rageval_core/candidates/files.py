"""The folder `rageval dataset generate` writes (docs/generate.md, "What it writes"):

    candidates.jsonl   every candidate, one JSON object a line: question, reference,
                       quotes (located), document versions, checks, status
    documents.jsonl    the documents they were written from ({id, text, title?, version?})
    accepted.yaml      a golden dataset of the accepted-by-checks candidates, gold as
                       quotes (`rageval validate` and `rageval run` read it); absent when
                       no candidate passed
    report.json        counts, rejections by check, coverage, cost and timings

The files are written into a temporary folder beside DIR, `accepted.yaml` is loaded
back (it must validate), and only then are they moved into DIR: a failed generation
leaves DIR as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from rageval_core.bounded_json import BadJSON, read_lines
from rageval_core.candidates.model import ACCEPTED, Candidate
from rageval_core.dataset import load_dataset
from rageval_core.errors import ConfigError, DatasetError
from rageval_core.models import Document
from rageval_core.runs.atomic import atomic_write_bytes

CANDIDATES_FILE = "candidates.jsonl"
DOCUMENTS_FILE = "documents.jsonl"
ACCEPTED_FILE = "accepted.yaml"
REPORT_FILE = "report.json"
OUTPUTS = (CANDIDATES_FILE, DOCUMENTS_FILE, ACCEPTED_FILE, REPORT_FILE)


def _jsonl(rows: Sequence[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def question_entry(c: Candidate, qid: str | None = None) -> dict[str, Any]:
    """A dataset question (id `qid`, default the candidate's): gold as quotes (each
    stands once: the `quotes` check), the candidate's kind as a tag."""
    q: dict[str, Any] = {
        "id": c.id if qid is None else qid,
        "question": c.question,
        "reference_answer": c.reference_answer,
    }
    if c.answerable:
        q["gold_spans"] = [{"doc_id": s.doc_id, "text": s.text} for s in c.quotes]
    else:
        q["answerable"] = False
    q["tags"] = ["generated", c.kind]
    return q


def accepted_dataset(name: str, candidates: Sequence[Candidate]) -> dict[str, Any] | None:
    """The dataset mapping of the accepted-by-checks candidates, None when there are none."""
    accepted = [question_entry(c) for c in candidates if c.status == ACCEPTED]
    if not accepted:
        return None
    return {"name": name, "version": "1", "documents": DOCUMENTS_FILE, "questions": accepted}


def write_outputs(
    out: Path,
    name: str,
    candidates: Sequence[Candidate],
    documents: Sequence[Document],
    report: dict[str, Any],
    *,
    overwrite: bool = False,
) -> list[Path]:
    """Write the folder (module docstring); the paths written."""
    taken = [out / f for f in OUTPUTS if (out / f).exists()]
    if taken and not overwrite:
        raise ConfigError(f"{taken[0]} already exists; use --force to replace it")
    try:
        out.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".generate-", dir=out))
    except OSError as exc:
        raise ConfigError(f"cannot write to {out}: {exc.strerror or exc}") from exc
    try:
        files = {
            CANDIDATES_FILE: _jsonl([c.to_json() for c in candidates]),
            DOCUMENTS_FILE: _jsonl(
                [{k: v for k, v in asdict(d).items() if v is not None} for d in documents]
            ),
            REPORT_FILE: (json.dumps(report, indent=2, ensure_ascii=False) + "\n").encode(),
        }
        dataset = accepted_dataset(name, candidates)
        if dataset is not None:
            files[ACCEPTED_FILE] = yaml.safe_dump(
                dataset, sort_keys=False, allow_unicode=True, width=100
            ).encode("utf-8")
        for file, data in files.items():
            atomic_write_bytes(staging / file, data)
        if dataset is not None:
            load_dataset(staging / ACCEPTED_FILE)  # what is written must validate
        for file in OUTPUTS:
            if file not in files and (out / file).exists():
                (out / file).unlink()  # an accepted.yaml of an earlier generation
        for file in files:
            os.replace(staging / file, out / file)
    except OSError as exc:
        raise ConfigError(f"cannot write to {out}: {exc.strerror or exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [out / f for f in files]


def read_candidates(path: str | os.PathLike[str]) -> list[Candidate]:
    """The candidates of a candidates file; a bad line is a DatasetError naming it."""
    out = []
    for n, row in read_lines(path):
        if isinstance(row, BadJSON):
            raise DatasetError(row.at(str(path)))
        out.append(Candidate.from_json(row, f"{path}:{n}"))
    return out
