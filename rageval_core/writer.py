"""Write a run from any harness: open it, add one question's result at a time, close it.

For evaluation loops rageval does not drive (docs/import.md)::

    with RunWriter("my-harness", dataset="data/dataset.yaml") as run:
        for q in questions:
            if q.id in run.done:      # resumed after a crash: already recorded
                continue
            out = my_rag(q.text)
            run.add(q.id, answer=out.text, retrieved=out.chunk_ids, scores={"tone": 0.8})

The files are those of `rageval run` (manifest first as `running`, one fsynced journal line
per question, then Parquet, summary and the manifest as `complete`: both write through a
`runs.folder.RunFolder`), so a writer killed with `kill -9` keeps every added question
and `RunWriter(..., resume=RUN_ID)` continues it. One writer per run, held by the run's
lease (`runs/lease.py`).

What the harness gives is recorded; what it does not stays NULL, never invented. Each
record is scored by `scoring.Scorer`, the code that scores `rageval run`: retrieval figures
from the gold (the dataset's, or given) and the retrieved ids, or on a span dataset the
chunks' places in its documents; the refusal, when not given, read from the answer by the
offline judge's rule; the failure type. Any other score is a declared metric
(`metrics=`). Every string goes through a `Redactor` before it is written.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rageval_core.catalogue import DEFAULT_KS, parse_declared
from rageval_core.dataset import answerability, load_dataset
from rageval_core.errors import ConfigError, ResultsError, SourceError, shown
from rageval_core.job import RunResult, git_commit
from rageval_core.models import (
    VERDICTS,
    Claim,
    DatasetRef,
    DeclaredMetric,
    GoldenDataset,
    GoldenQuestion,
    JudgeRef,
    RetrievedChunk,
    RunManifest,
    capped,
    capped_chunks,
    count,
    number,
)
from rageval_core.origin import RunOrigin
from rageval_core.redact import Redactor, secret_values
from rageval_core.runs.folder import PART_ROWS, RunFolder, run_totals
from rageval_core.runs.layout import default_run_id, iso, results_location, utc_now
from rageval_core.runs.rows import conform_row, question_schema
from rageval_core.scoring import Asked, Given, Judged, Scorer
from rageval_core.thresholds import DEFAULT_THRESHOLDS, FailureThresholds

NO_DATASET = DatasetRef(name="", version="", sha256="", n_questions=0)
PART_BYTES = 32 << 20
"""Text a writer holds before writing its batch early: a batch of long answers stays small."""


def _text_size(row: Mapping[str, Any]) -> int:
    """About how many bytes of text a row holds (its strings and lists of strings)."""
    size = 0
    for v in row.values():
        if isinstance(v, str):
            size += len(v)
        elif isinstance(v, list):
            size += sum(len(x) if isinstance(x, str) else len(str(x)) for x in v)
    return size


@dataclass(frozen=True)
class QuestionRecord:
    """One question's result as a harness reports it; every field but the id is optional.

    `retrieved` is ranked (None: unknown; `[]`: nothing retrieved): chunk ids, or chunks
    (mappings `{id?, text?, score?, doc_id?, start?, end?}` or `RetrievedChunk`s, checked
    as a pipeline's output is). A text whose id is unknown is matched to the dataset's
    corpus by exact text; unmatched, or shared by several chunks, its id stays unknown,
    and so do the question's id figures (its text is still placed in the documents).
    `gold_ids`, `question`, `reference` and `tags` default to the dataset's. `claims` are
    `Claim`s or mappings with `text`, `verdict` and optionally `evidence_chunk_id`,
    `evidence`, `reason`;
    without `faithfulness` it is computed from them. `context_relevance`,
    `context_precision`, `answer_relevancy` (with its reason) and `context_recall` are the
    reference-free verdicts' figures (docs/metrics.md): only the scores, so the per-chunk
    and per-statement verdict lists stay NULL. `scores` holds the run's declared metrics.
    """

    question_id: str
    question: str | None = None
    answer: str | None = None
    retrieved: Sequence[Any] | None = None
    reference: str | None = None
    gold_ids: Sequence[str] | None = None
    tags: Sequence[str] | None = None
    scores: Mapping[str, float | None] = field(default_factory=dict)
    faithfulness: float | None = None
    answer_correctness: float | None = None
    context_relevance: float | None = None
    context_precision: float | None = None
    answer_relevancy: float | None = None
    answer_relevancy_reason: str | None = None
    context_recall: float | None = None
    refused: bool | None = None
    claims: Sequence[Any] = ()
    retrieval_ms: float | None = None
    generation_ms: float | None = None
    ttft_ms: float | None = None
    total_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    judge_cost_usd: float | None = None
    error: str | None = None
    judge_error: str | None = None


def _claim(raw: Any, qid: str, i: int) -> Claim:
    if isinstance(raw, Claim):
        return raw
    where = f"question {shown(qid, 80)}: claims[{i}]"
    if not isinstance(raw, Mapping) or not isinstance(raw.get("text"), str):
        raise SourceError(f"{where} needs a text")
    if raw.get("verdict") not in VERDICTS:
        # A claim without a verdict is never counted as supported (STYLE: evidence travels).
        raise SourceError(f"{where}: verdict must be one of {', '.join(VERDICTS)}")
    opt = {k: raw.get(k) for k in ("evidence_chunk_id", "evidence")}
    return Claim(
        text=raw["text"],
        verdict=raw["verdict"],
        **{k: None if v is None else str(v) for k, v in opt.items()},
        reason=str(raw.get("reason") or ""),
    )


def _answerable(r: QuestionRecord, q: GoldenQuestion | None, reference: str | None) -> bool | None:
    """The row's `answerable` by the one rule (`dataset.answerability`): the dataset
    question's, unless the harness gives the gold ids; NULL for a reference-free question
    (no gold key, no reference), whose answerability nobody stated."""
    if q is not None and r.gold_ids is None:
        kind = q.answerability
    else:
        kind, problem = answerability(
            gold_chunk_ids=r.gold_ids,
            gold_spans=None,
            answerable=None,
            reference_answer=reference,
        )
        if problem:
            raise SourceError(f"question {shown(r.question_id, 80)}: {problem}")
    return None if kind == "reference_free" else kind != "unanswerable"


def _ids_by_text(dataset: GoldenDataset | None) -> dict[str, str | None]:
    """Chunk id by chunk text, for retrieved texts given without ids; None for a text
    two chunks share (versions of one passage): which was retrieved is unknown."""
    out: dict[str, str | None] = {}
    for c in dataset.corpus if dataset is not None else ():
        out[c.text] = None if c.text in out and out[c.text] != c.id else c.id
    return out


class RunWriter:
    """One run written question by question; use as a context manager or call `close()`.

    `dataset` is a golden dataset (path or loaded) or None; `config` is recorded as the
    run's config (its `name` is `name`); `metrics` declares the scores the harness adds
    (`{name: {label, direction, range}}`, docs/metrics.md). `durable=False` skips the journal
    (rows survive only a clean `close()`): for all-or-nothing writers such as the
    importers, which stage the whole run and rename it into place.

    Rows are held `PART_ROWS` (or `PART_BYTES` of text) at a time, then written as a part
    file; `close()` compacts the parts into the final Parquet in DuckDB and sums the totals
    reading it back, so memory does not grow with the run (docs/import.md).
    """

    def __init__(
        self,
        name: str,
        *,
        results_dir: str | Path | None = None,
        dataset: str | Path | GoldenDataset | None = None,
        config: Mapping[str, Any] | None = None,
        metrics: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        resume: str | None = None,
        tags: Iterable[str] = (),
        judge: JudgeRef | None = None,
        ks: Iterable[int] = DEFAULT_KS,
        failure_thresholds: FailureThresholds = DEFAULT_THRESHOLDS,
        origin: RunOrigin | None = None,
        durable: bool = True,
    ):
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("a run needs a name (the config name Runs shows)")
        if resume and run_id and resume != run_id:
            raise ConfigError("run_id and resume name different runs; give one")
        self.dataset = load_dataset(dataset) if isinstance(dataset, str | Path) else dataset
        self.declared: tuple[DeclaredMetric, ...] = parse_declared(metrics, "metrics")
        self.ks = tuple(sorted(set(ks)))
        self.durable = durable
        origin = origin or RunOrigin("writer", name)
        recorded = {**dict(config or {}), "name": name, "origin": origin.to_dict()}
        recorded.setdefault("ks", list(self.ks))
        self.redactor = Redactor(secret_values(recorded))
        location = results_location(results_dir)
        now = utc_now()
        run_id = resume or run_id or default_run_id(name, now)
        self.folder = RunFolder(location, run_id)
        self._command = origin.kind  # how warnings name who writes
        self.run_id = self.folder.run_id
        self.scorer = Scorer(
            self.run_id, self.dataset, self.ks, failure_thresholds, self.declared, bad=SourceError
        )
        self._questions = {q.id: q for q in self.dataset.questions} if self.dataset else {}
        self._by_text = _ids_by_text(self.dataset)
        self._schema = question_schema(self.ks, self.declared)
        self._batch: list[dict[str, Any]] = []
        self._batch_bytes = 0
        self._seq = 0  # rows added, numbering the part files' rows
        self._done: set[str] | None = None  # built when first asked for
        self._started = time.monotonic()
        self._closed = False
        self._held = ExitStack()
        manifest = RunManifest(
            run_id=self.run_id,
            status="running",
            created_at=iso(now),
            config=self.redactor.value(recorded),
            dataset=self._dataset_ref(),
            judge=judge or JudgeRef(kind="none"),
            git_commit=git_commit(Path.cwd()),
            tags=tuple(tags),
            metrics=self.declared,
        )
        self._hold()
        try:
            self.manifest = self._open(manifest, bool(resume))
            self._journal = self.folder.journal_writer() if durable else None
        except BaseException:
            self._held.close()
            raise

    # -- opening

    def _dataset_ref(self) -> DatasetRef:
        ds = self.dataset
        if ds is None:
            return NO_DATASET
        return DatasetRef(ds.name, ds.version, ds.sha256, len(ds.questions), str(ds.path))

    def _hold(self) -> None:
        """Take the run's lease (as `rageval run` does) for as long as the writer is open."""
        self._held.enter_context(self.folder.hold(f"run {self.run_id}"))

    def _open(self, manifest: RunManifest, resume: bool) -> RunManifest:
        opened = self.folder.open(
            manifest, resume=resume, exists_hint="resume it or choose another run id"
        )
        self.folder.clear_parts()
        if resume:
            for row in self.folder.done_rows(self._warn):
                self._keep(row)
        return opened

    def _warn(self, message: str) -> None:
        print(f"rageval {self._command}: {message}", file=sys.stderr)

    # -- adding

    @property
    def done(self) -> frozenset[str]:
        """Ids of the questions already recorded (by this writer or before a resume). The
        first call reads them from the part files; later adds keep the set up to date."""
        if self._done is None:
            self._done = {*self.folder.part_ids(), *(r["question_id"] for r in self._batch)}
        return frozenset(self._done)

    def add(self, question_id: str, **fields: Any) -> None:
        """Record one question's result (fields of `QuestionRecord`); a bad field is a
        SourceError naming the question and the field, and nothing is recorded."""
        if self._closed:
            raise ResultsError(f"run {self.run_id} is closed")
        try:
            record = QuestionRecord(question_id, **fields)
        except TypeError as exc:
            raise SourceError(f"question {shown(question_id, 80)}: {exc}") from None
        row = self.redactor.row(self.row(record))
        try:
            row = conform_row(row, {d.name for d in self.declared})
        except ValueError as exc:
            raise SourceError(str(exc)) from None
        if self._journal is not None:
            self._journal.append(row)
        self._keep(row)

    def _keep(self, row: dict[str, Any]) -> None:
        """Hold a row until its batch is full, then write the batch as a part file."""
        self._batch.append(row)
        self._batch_bytes += _text_size(row)
        if self._done is not None:
            self._done.add(row["question_id"])
        if len(self._batch) >= PART_ROWS or self._batch_bytes >= PART_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._batch:
            self.folder.write_part(self._batch, self._seq, self._schema)
            self._seq += len(self._batch)
            self._batch, self._batch_bytes = [], 0

    def row(self, r: QuestionRecord) -> dict[str, Any]:
        """The result row (schema `question_schema`) of one record, scored as `rageval
        run` scores (`scoring.Scorer`)."""
        qid = r.question_id
        if not isinstance(qid, str) or not qid:
            raise SourceError(f"a question id must be non-empty text, got {qid!r:.80}")
        q: GoldenQuestion | None = self._questions.get(qid)
        if self.dataset is not None and q is None:
            raise SourceError(f"question {shown(qid, 80)} is not in dataset {self.dataset.name!r}")
        where = f"question {shown(qid, 80)}:"

        def num(name: str) -> float | None:
            return number(getattr(r, name), f"{where} {name}", SourceError)

        reference = r.reference if r.reference is not None else (q.reference_answer if q else None)
        gold = tuple(r.gold_ids) if r.gold_ids is not None else None
        question, cut = _capped(
            r.question if r.question is not None else (q.question if q else None)
        )
        asked = Asked(
            qid,
            question,
            reference,
            _answerable(r, q, reference),
            tuple(r.tags if r.tags is not None else (q.tags if q else ())),
            gold if gold is not None else (q.gold_chunk_ids if q else ()),
            () if gold is not None or q is None else q.gold_spans,
        )
        if r.answer is not None and not isinstance(r.answer, str):
            raise SourceError(f"{where} answer must be text")
        answer, cut_answer = _capped(r.answer)
        retrieved, ids_known = self._retrieved(r)
        cut_chunks = 0
        if retrieved is not None:
            retrieved, cut_chunks = capped_chunks(retrieved)
        given = Given(
            answer=answer,
            chars_cut=cut + cut_answer + cut_chunks,
            retrieved=retrieved,
            ids_known=ids_known,
            **{k: num(k) for k in ("retrieval_ms", "generation_ms", "ttft_ms", "total_ms")},
            input_tokens=count(r.input_tokens, f"{where} input_tokens", SourceError),
            output_tokens=count(r.output_tokens, f"{where} output_tokens", SourceError),
            cost_usd=num("cost_usd"),
            scores=r.scores,
            error=r.error,
        )
        claims = tuple(_claim(c, qid, i) for i, c in enumerate(r.claims))
        faithfulness = num("faithfulness")
        if faithfulness is None and claims:
            faithfulness = sum(c.verdict == "supported" for c in claims) / len(claims)
        if r.refused is not None and not isinstance(r.refused, bool):
            raise SourceError(f"{where} refused must be true or false")
        if r.answer_relevancy_reason is not None and not isinstance(r.answer_relevancy_reason, str):
            raise SourceError(f"{where} answer_relevancy_reason must be text")
        judged = Judged(
            claims=claims,
            faithfulness=faithfulness,
            refused=r.refused,
            answer_relevancy_reason=r.answer_relevancy_reason,
            **{
                k: num(k)
                for k in (
                    "answer_correctness",
                    "context_relevance",
                    "context_precision",
                    "answer_relevancy",
                    "context_recall",
                )
            },
            cost_usd=num("judge_cost_usd"),
            error=r.judge_error,
        )
        return self.scorer.row(asked, given, judged)

    def _retrieved(self, r: QuestionRecord) -> tuple[tuple[RetrievedChunk, ...] | None, bool]:
        """The ranked chunks (None: unknown) and whether every id is known. An item is an
        id, or a chunk (a mapping or a `RetrievedChunk`, checked by the rules a pipeline's
        output meets) whose id may be missing: then it is the corpus chunk with the same
        text, if exactly one, else unknown (its text is still placed in the documents)."""
        if r.retrieved is None:
            return None, True
        where = f"question {shown(r.question_id, 80)}: retrieved"
        if isinstance(r.retrieved, str | bytes | Mapping) or not isinstance(r.retrieved, Sequence):
            raise SourceError(f"{where} must be a list")
        chunks, known = [], True
        for i, item in enumerate(r.retrieved):
            if isinstance(item, str):
                item = {"id": item}
            if isinstance(item, Mapping) and item.get("id") is None:
                text = item.get("text")
                cid = self._by_text.get(text) if isinstance(text, str) else None
                if cid is None and not isinstance(text, str):
                    raise SourceError(f"{where}[{i}] must be an id or a chunk with id and/or text")
                known = known and cid is not None
                item = {**item, "id": cid or ""}
            chunks.append(RetrievedChunk.from_value(item, f"{where}[{i}]", SourceError))
        return tuple(chunks), known

    # -- closing

    def close(self, failed: bool = False) -> RunResult:
        """Write the Parquet, summary and manifest (`complete`), or mark the run `failed`
        (resumable: the journal stays). Closing twice is a no-op returning the same run."""
        if self._closed:
            m = self.manifest
            return RunResult(self.run_id, self.folder.path, m.status, m.totals)
        self._closed = True
        try:
            if self._journal is not None:
                self._journal.close()
            self._flush()
            order = [q.id for q in self.dataset.questions] if self.dataset else []
            previous = float(self.manifest.totals.get("duration_s") or 0.0)
            took = previous + time.monotonic() - self._started
            status = "failed" if failed else "complete"
            if failed:  # the journal stays for a resume; the parts go
                with self.folder.compacted(self._schema, order) as tables:
                    totals = run_totals((r for t in tables for r in t.to_pylist()), took)
                self.folder.clear_parts()
            else:
                self.folder.write_rows_from_parts(self._schema, order)
                totals = run_totals(self.folder.iter_rows(), took)
            self.manifest = replace(
                self.manifest,
                status=status,
                finished_at=iso(utc_now()),
                totals=totals,
            )
            self.folder.publish(self.manifest)
        finally:
            self._held.close()
        return RunResult(self.run_id, self.folder.path, status, totals)

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.close(failed=exc_type is not None)


def _capped(text: str | None) -> tuple[str | None, int]:
    """A record's text cut to `MAX_TEXT_CHARS` (None stays unknown), and what was cut."""
    return (None, 0) if not isinstance(text, str) else capped(text)
