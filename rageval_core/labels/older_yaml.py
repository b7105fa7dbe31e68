"""The older labels file: a YAML written for one run, read as `HumanLabel`s of that run's
dataset version (`faithful` -> pass/fail)::

    labels:
      - {question_id: q001, claim: "Hybrid search mixes BM25 and vectors.", verdict: supported}
      - {question_id: q002, faithful: false}
      - {question_id: q001, chunk_id: "company-overview#1", relevant: true}
      - {question_id: q001, answer: "2009.", answer_relevant: true}

`rageval calibrate --labels` and the demo's example labels read it; bad entries are
named by file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from rageval_core.errors import DatasetError, shown
from rageval_core.labels.model import RELEVANCE, HumanLabel, utc_stamp
from rageval_core.labels.store import LabelSet
from rageval_core.metrics.generation import normalize_answer
from rageval_core.models import VERDICTS
from rageval_core.runs.reading import RunInfo
from rageval_core.userfiles import SafeLoader, load_yaml

FAITHFUL = ("faithful", "unfaithful")


FAITHFUL = ("faithful", "unfaithful")
_NUMBER_TAGS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}


class _LabelLoader(SafeLoader):  # type: ignore[misc, valid-type]
    """Safe YAML where numbers stay the text written: the dataset keeps `id: 001` as "001",
    so a label must too, or it would match no question. Booleans (`faithful:`) still parse."""

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in _NUMBER_TAGS]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


@dataclass(frozen=True)
class Label:
    """One human judgement: of a claim (`claim` set), a retrieved chunk's relevance
    (`chunk_id` set), the answer's relevancy (`answer` set) or a whole answer (none)."""

    question_id: str
    verdict: str  # VERDICTS for a claim, FAITHFUL for a question, else RELEVANCE
    claim: str | None = None
    chunk_id: str | None = None
    answer: str | None = None

    @property
    def key(self) -> tuple:
        """What two entries of one file may not share."""
        if self.chunk_id is not None:
            return (self.question_id, "chunk", self.chunk_id)
        if self.answer is not None:
            return (self.question_id, "answer", normalize_answer(self.answer))
        return (self.question_id, normalize_answer(self.claim) if self.claim else None)


def _relevance(e: dict, name: str, flag: str) -> tuple[str | None, str | None]:
    """(text, "relevant"/"irrelevant") of a chunk or answer entry, or (None, why)."""
    text, value = e.get(name), e.get(flag)
    if not isinstance(text, str) or not text.strip():
        return None, f"{name} must be non-empty text"
    if not isinstance(value, bool):
        return None, f"{flag} must be true or false"
    return text, RELEVANCE[value]


def load_labels(path: str | Path) -> list[Label]:
    """Read and validate a labels file; every problem is listed in one DatasetError."""
    path = Path(path)
    doc = load_yaml(path, "labels file", DatasetError, _LabelLoader)
    entries = doc.get("labels") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise DatasetError(f"{path}: expected a mapping with a 'labels' list")
    labels, problems, seen = [], [], set()
    for i, e in enumerate(entries):
        where = f"{path}: labels[{i}]"
        if not isinstance(e, dict) or not isinstance(e.get("question_id"), str | int):
            problems.append(f"{where}: needs a question_id")
            continue
        qid = str(e["question_id"])
        where = f"{where} ({shown(qid, bare=True)})"
        kinds = [k for k in ("claim", "chunk_id", "answer") if k in e]
        if len(kinds) > 1:
            problems.append(f"{where}: one kind per entry, not both {kinds[0]} and {kinds[1]}")
            continue
        if kinds and kinds[0] != "claim":
            name = kinds[0]
            text, got = _relevance(e, name, "relevant" if name == "chunk_id" else "answer_relevant")
            if text is None:
                problems.append(f"{where}: {got}")
                continue
            label = Label(qid, str(got), **{"chunk_id" if name == "chunk_id" else "answer": text})
        elif "claim" in e:
            claim, verdict = e.get("claim"), e.get("verdict")
            if not isinstance(claim, str) or not claim.strip():
                problems.append(f"{where}: claim must be non-empty text")
                continue
            if verdict not in VERDICTS:
                problems.append(f"{where}: verdict must be one of {', '.join(VERDICTS)}")
                continue
            label = Label(qid, verdict, claim)
        elif isinstance(e.get("faithful"), bool):
            label = Label(qid, FAITHFUL[0] if e["faithful"] else FAITHFUL[1])
        else:
            problems.append(
                f"{where}: needs claim + verdict, chunk_id + relevant, answer + "
                "answer_relevant, or faithful: true|false"
            )
            continue
        key = label.key
        if key in seen:
            problems.append(f"{where}: duplicate label")
            continue
        seen.add(key)
        labels.append(label)
    if problems:
        raise DatasetError(f"{path}: invalid labels", problems)
    return labels


def labels_from_yaml(
    path: str | Path,
    run: RunInfo,
    *,
    reviewer: str | None = None,
    created_at: str | None = None,
) -> LabelSet:
    """The labels of an older YAML file as `HumanLabel`s of `run` (its dataset version;
    question labels on its answers), by `reviewer` (default `file:<name>`) at `created_at`
    (default: when the file was last written)."""
    path = Path(path)
    ds = run.manifest.dataset  # type: ignore[union-attr]
    made = created_at or utc_stamp(datetime.fromtimestamp(path.stat().st_mtime, UTC))
    out = []
    for lab in load_labels(path):
        is_claim = lab.claim is not None
        relevance = lab.chunk_id is not None or lab.answer is not None
        flag = lab.verdict == RELEVANCE[1] if relevance else None
        out.append(
            HumanLabel(
                dataset=ds.name,
                dataset_sha256=ds.sha256,
                question_id=lab.question_id,
                claim=lab.claim,
                verdict=lab.verdict if is_claim else None,
                question_label=None
                if is_claim or relevance
                else ("pass" if lab.verdict == "faithful" else "fail"),
                reviewer=reviewer or f"file:{path.name}"[:120],
                created_at=made,
                run_id=run.run_id,
                chunk_id=lab.chunk_id,
                relevant=flag if lab.chunk_id is not None else None,
                answer=lab.answer,
                answer_relevant=flag if lab.answer is not None else None,
            )
        )
    return LabelSet(tuple(out))
