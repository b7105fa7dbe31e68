"""`rageval labels to-gold`: a new dataset version whose gold comes from the chunks people
marked relevant (docs/review.md, "From review to gold").

The rules, each written once here: which label of a chunk is current (each reviewer's
newest; reviewers who disagree apply nothing), which chunks can become gold (a chunk of
this version's corpus, not of a superseded document version, placed in the documents by
`placement.Placer` when the dataset scores spans), and what a labelled question's gold
becomes (extended by default, replaced on request). Unanswerable questions never gain
gold. This module plans, writes, and reads the runs that labels name (for the text of a
chunk outside the corpus); it never reads the labels location or prints.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rageval_core.dataset import DATASET_FILE, dataset_sha256, write_revision
from rageval_core.errors import ConfigError, RagevalError
from rageval_core.labels.model import HumanLabel
from rageval_core.models import Chunk, GoldenDataset, GoldenQuestion, GoldSpan, RetrievedChunk
from rageval_core.placement import Placer
from rageval_core.runs.layout import filesystem
from rageval_core.runs.reading import inspect_run, read_run_rows
from rageval_core.userfiles import ascii_int

_DIGITS = re.compile(r"([0-9]+)")  # ASCII digits: userfiles.ASCII_INT's rule


@dataclass(frozen=True)
class Skipped:
    """A chunk label that did not change gold, and why."""

    chunk_id: str
    why: str


@dataclass(frozen=True)
class QuestionChange:
    """What to-gold did to one labelled question; gold items as the row's `gold_ids` name
    them (chunk ids, `doc:start-end` spans)."""

    question_id: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()  # labelled relevant and already gold
    skipped: tuple[Skipped, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


@dataclass(frozen=True)
class GoldPlan:
    """The new dataset version, before it is written, and what changed."""

    source: GoldenDataset
    version: str
    questions: tuple[GoldenQuestion, ...]
    changes: tuple[QuestionChange, ...]
    unknown_questions: tuple[str, ...]  # labelled question ids this version does not have
    sha256: str  # of the new version
    replace_gold: bool = False  # labelled questions' gold replaced, not extended

    @property
    def changed(self) -> int:
        return sum(c.changed for c in self.changes)


@dataclass(frozen=True)
class _Target:
    """Where a relevant chunk lands as gold: its id (id gold, when the corpus has it) and
    its place."""

    chunk_id: str
    span: GoldSpan | None
    in_corpus: bool = True


def next_version(version: str) -> str:
    """`3` -> `4`, `2.1` -> `2.2`, `v7` -> `v8`; text without a trailing number gets `-gold`."""
    parts = _DIGITS.split(version)
    if len(parts) > 1 and parts[-1] == "" and (n := ascii_int(parts[-2])) is not None:
        return "".join(parts[:-2]) + str(n + 1)
    return f"{version}-gold"


def _version_key(version: str) -> tuple:
    return tuple(
        (0, n, "") if (n := ascii_int(p)) is not None else (1, 0, p) for p in _DIGITS.split(version)
    )


def superseded(corpus: Sequence[Chunk]) -> dict[str, str]:
    """Chunk id -> the newer version of its document, for chunks of an old version (a
    document present in several versions: only the newest states current facts)."""
    newest: dict[str, str] = {}
    for c in corpus:
        if c.version is not None:
            held = newest.get(c.doc_id)
            if held is None or _version_key(c.version) > _version_key(held):
                newest[c.doc_id] = c.version
    return {
        c.id: newest[c.doc_id]
        for c in corpus
        if c.version is not None and c.version != newest[c.doc_id]
    }


def current_chunk_labels(
    labels: Iterable[HumanLabel], dataset: str
) -> dict[tuple[str, str], list[HumanLabel]]:
    """(question id, chunk id) -> each reviewer's current label of that chunk: the newest
    (the store's rule, here across every version of the dataset, since a chunk id means
    the same chunk in each version that has it)."""
    newest: dict[tuple[str, str, str], HumanLabel] = {}
    for lab in labels:
        if lab.dataset != dataset or lab.kind != "chunk":
            continue
        k = (lab.question_id, lab.chunk_id or "", lab.reviewer)
        held = newest.get(k)
        if held is None or lab.at >= held.at:
            newest[k] = lab
    out: dict[tuple[str, str], list[HumanLabel]] = {}
    for (qid, cid, _), lab in sorted(newest.items()):
        out.setdefault((qid, cid), []).append(lab)
    return out


RunChunks = dict[tuple[str, str], RetrievedChunk | str]
"""(question id, chunk id) -> the chunk as its run retrieved it, or why it was not found."""


def chunks_from_runs(location: str, labels: Iterable[HumanLabel], ds: GoldenDataset) -> RunChunks:
    """The text of each labelled chunk outside the corpus of a dataset with documents, read
    from the run its label names: a pipeline that chunks the documents its own way
    retrieves ids no corpus has, and its chunks become spans by their text. Reads only
    the runs such labels name."""
    if not ds.documents:
        return {}
    known = ds.chunk_map()
    wanted: dict[str, set[tuple[str, str]]] = {}
    out: RunChunks = {}
    for lab in labels:
        if lab.dataset != ds.name or lab.kind != "chunk" or lab.chunk_id in known:
            continue
        k = (lab.question_id, lab.chunk_id or "")
        if lab.run_id is None:
            out.setdefault(k, "not in the corpus, and its label names no run to read it from")
        else:
            wanted.setdefault(lab.run_id, set()).add(k)
    fs = filesystem(location)[0]
    for run_id, keys in sorted(wanted.items()):
        table, why = None, f"not in the corpus, and its run {run_id} is not in {location}"
        try:
            info = inspect_run(location, run_id)
            if info.status != "missing":
                table = read_run_rows(info, fs)[0]
                why = f"not in the corpus, nor among what run {run_id} retrieved"
        except RagevalError as exc:
            why = f"not in the corpus; its run {run_id}: {exc.message}"
        for row in _retrieved_rows(table):
            for cid, text, doc_id, start, end in _places(row):
                k = (row["question_id"], cid)
                if k in keys and not isinstance(out.get(k), RetrievedChunk):
                    out[k] = RetrievedChunk(cid, text or "", doc_id=doc_id, start=start, end=end)
        for k in keys:
            out.setdefault(k, why)
    return out


_PLACE_COLUMNS = ("retrieved_doc_ids", "retrieved_starts", "retrieved_ends")


def _retrieved_rows(table: Any) -> list[dict[str, Any]]:
    """Each row's retrieved ids and texts, and where the run placed each chunk (older
    runs and runs without documents have no places)."""
    if table is None:
        return []
    wanted = ["question_id", "retrieved_ids", "retrieved_texts"]
    wanted += [c for c in _PLACE_COLUMNS if c in table.column_names]
    return table.select(wanted).to_pylist()


def _places(row: dict[str, Any]) -> Iterator[tuple[Any, ...]]:
    ids = row["retrieved_ids"] or ()
    n = len(ids)
    columns = [row.get(c) or [None] * n for c in ("retrieved_texts", *_PLACE_COLUMNS)]
    return zip(ids, *columns, strict=False)


class _Resolver:
    """Turns a labelled chunk id into a gold target of this dataset version, or a reason."""

    def __init__(self, ds: GoldenDataset, retrieved: RunChunks):
        self.chunks = ds.chunk_map()
        self.old = superseded(ds.corpus)
        self.placer = Placer(ds.documents, ds.corpus) if ds.documents else None
        self.retrieved = retrieved

    def resolve(self, question_id: str, chunk_id: str) -> _Target | str:
        chunk = self.chunks.get(chunk_id)
        if chunk is not None and chunk_id in self.old:
            return f"superseded: {chunk.doc_id} has a newer version ({self.old[chunk_id]})"
        if self.placer is None:  # id gold: the corpus decides
            return (
                "not in this dataset version's corpus" if chunk is None else _Target(chunk_id, None)
            )
        piece = self.retrieved.get((question_id, chunk_id))
        if chunk is not None:
            piece = RetrievedChunk(chunk.id, chunk.text)
        elif not isinstance(piece, RetrievedChunk):
            return piece or "not in this dataset version's corpus"
        # where the run placed it, never its text found elsewhere (`Placer` trusts
        # offsets that hold the text, and searches only the document the run named)
        placement = self.placer.place_all([piece])
        if placement.unknown_doc_ids:
            return (
                f"its run placed it in document {placement.unknown_doc_ids[0]}, which this "
                "dataset version does not have"
            )
        (placed,) = placement.ranges
        if placed is None:
            return "cannot be placed in the dataset's documents (its text is not found)"
        return _Target(
            chunk_id, GoldSpan(placed.doc_id, placed.start, placed.end), chunk is not None
        )


def _inside(span: GoldSpan, spans: Iterable[GoldSpan]) -> bool:
    return any(
        s.doc_id == span.doc_id and s.start <= span.start and span.end <= s.end for s in spans
    )


def _overlaps(span: GoldSpan, spans: Iterable[GoldSpan]) -> bool:
    return any(s.doc_id == span.doc_id and s.start < span.end and span.start < s.end for s in spans)


def _unique(items: Iterable) -> tuple:
    return tuple(dict.fromkeys(items))


def _plan_question(
    q: GoldenQuestion,
    labelled: dict[str, list[HumanLabel]],
    resolver: _Resolver,
    *,
    use_spans: bool,
    replace_gold: bool,
) -> tuple[GoldenQuestion, QuestionChange]:
    use_ids = not use_spans or bool(q.gold_chunk_ids)
    skipped: list[Skipped] = []
    relevant: list[_Target] = []
    disputed: list[_Target] = []
    irrelevant: list[_Target] = []
    for cid, labs in labelled.items():
        values = {lab.relevant for lab in labs}
        if q.answerability == "unanswerable":
            if True in values:
                skipped.append(Skipped(cid, "the question is unanswerable: labels do not add gold"))
            continue
        target = resolver.resolve(q.id, cid)
        if isinstance(target, str):
            if True in values:
                skipped.append(Skipped(cid, target))
            continue
        if len(values) > 1:
            said = ", ".join(f"{lab.reviewer}: {lab.value}" for lab in labs)
            skipped.append(Skipped(cid, f"reviewers disagree ({said})"))
            disputed.append(target)
        elif values == {True}:
            relevant.append(target)
        else:
            irrelevant.append(target)

    ids, spans = list(q.gold_chunk_ids), list(q.gold_spans)
    kept: list[str] = []
    if replace_gold and relevant:
        held = {t.chunk_id for t in disputed}
        ids = [g for g in ids if g in held] if use_ids else ids
        dspans = [t.span for t in disputed if t.span is not None]
        spans = [s for s in spans if _overlaps(s, dspans)] if use_spans else spans

    def has(t: _Target, ids: Sequence[str], spans: Sequence[GoldSpan]) -> bool:
        return (not use_ids or not t.in_corpus or t.chunk_id in ids) and (
            not use_spans or (t.span is not None and _inside(t.span, spans))
        )

    for t in relevant:
        if not has(t, ids, spans):
            if use_ids and t.in_corpus and t.chunk_id not in ids:
                ids.append(t.chunk_id)  # a chunk outside the corpus is gold by its span only
            if use_spans and t.span is not None and not _inside(t.span, spans):
                spans.append(t.span)
        if has(t, q.gold_chunk_ids, q.gold_spans):
            kept.append(t.span.label if use_spans and t.span is not None else t.chunk_id)
    if not replace_gold:
        for t in irrelevant:
            if (use_ids and t.chunk_id in q.gold_chunk_ids) or (
                use_spans and t.span in q.gold_spans
            ):
                skipped.append(
                    Skipped(t.chunk_id, "labelled irrelevant but gold: kept (--replace drops it)")
                )
    new = q
    if (tuple(ids), tuple(spans)) != (q.gold_chunk_ids, q.gold_spans):
        new = replace(
            q, gold_chunk_ids=tuple(ids), gold_spans=tuple(spans), answerability="answerable"
        )
    before, after = set(q.gold_labels), set(new.gold_labels)
    if use_ids and use_spans:  # both forms kept in step: report both
        before |= set(q.gold_chunk_ids)
        after |= set(new.gold_chunk_ids)
    change = QuestionChange(
        q.id,
        added=tuple(
            g for g in _unique((*new.gold_chunk_ids, *new.gold_labels)) if g in after - before
        ),
        removed=tuple(
            g for g in _unique((*q.gold_chunk_ids, *q.gold_labels)) if g in before - after
        ),
        kept=_unique(kept),
        skipped=tuple(skipped),
    )
    return new, change


def plan_gold(
    ds: GoldenDataset,
    labels: Iterable[HumanLabel],
    *,
    replace_gold: bool = False,
    version: str | None = None,
    retrieved: RunChunks | None = None,
) -> GoldPlan:
    """The new version of `ds` with gold from its chunk-relevance labels (see the module
    docstring). Questions without chunk labels are kept as they are; `retrieved`
    (`chunks_from_runs`) gives the text of labelled chunks outside the corpus."""
    by_question: dict[str, dict[str, list[HumanLabel]]] = {}
    for (qid, cid), labs in current_chunk_labels(labels, ds.name).items():
        by_question.setdefault(qid, {})[cid] = labs
    resolver = _Resolver(ds, retrieved or {})
    questions, changes = [], []
    for q in ds.questions:
        labelled = by_question.pop(q.id, None)
        if labelled is None:
            questions.append(q)
            continue
        new, change = _plan_question(
            q, labelled, resolver, use_spans=bool(ds.documents), replace_gold=replace_gold
        )
        questions.append(new)
        changes.append(change)
    new_version = version or next_version(ds.version)
    if new_version == ds.version:
        raise ConfigError(f"the new version must differ from the dataset's ({ds.version})")
    qs = tuple(questions)
    return GoldPlan(
        source=ds,
        version=new_version,
        questions=qs,
        changes=tuple(changes),
        unknown_questions=tuple(sorted(by_question)),
        sha256=dataset_sha256(ds.name, new_version, qs, ds.corpus, ds.documents),
        replace_gold=replace_gold,
    )


def write_gold(plan: GoldPlan, out_dir: str | Path) -> Path:
    """Write the planned version into `out_dir`, the dataset file edited where gold
    changed and nothing else (`dataset.revising`). Refused when that would replace the
    input or any existing dataset file: the input is curated by hand, and the point is a
    new version beside it."""
    out = Path(out_dir)
    source = Path(plan.source.path).resolve()
    if out.resolve() == source.parent or (out / DATASET_FILE).resolve() == source:
        raise ConfigError(
            f"--out {out_dir} is the folder of the input {plan.source.path}: "
            "to-gold writes a new version, never over the input; pick another folder"
        )
    return write_revision(
        plan.source, plan.version, plan.questions, out, expected_sha256=plan.sha256
    )
