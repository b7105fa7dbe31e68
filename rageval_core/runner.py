"""Run a pipeline over a golden dataset and write the run (docs/pipeline.md), crash-safe.

Order of writes, which is what makes a run survive `kill -9`:

1. the manifest with status `running` (created only if absent when sharded, so
   concurrent shard workers never clobber each other's manifest);
2. one journal line per finished question, flushed and fsynced before the next is
   recorded — a killed run keeps every question whose line completed;
3. at the end the typed Parquet (rows in dataset order), then the journal is removed (the
   Parquet holds the same rows), the summary, and the manifest as `complete`. The
   files and their names are the run folder's (`runs.folder.RunFolder`, `runs.layout`).

`--resume RUN_ID` reads the journal back, skips the question ids already there and
finishes the rest. Ctrl-C stops submitting questions, records the ones in flight, marks
the run `failed` (resumable) and re-raises KeyboardInterrupt, which the CLI turns into
exit 130; a second Ctrl-C does the same at once, leaving the questions in flight
unrecorded. Every string written goes through the run's `Redactor` first.

The pipeline is the user's code: anything it raises for one question becomes that row's
`error` (`Type: message`, failure type `error`) and the run goes on. Where it is built and
called is its engine's business (`engines.py`: this process, or Ray workers); everything
after the call — redaction, judge, metrics, journal — happens here, the same for both.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from tqdm import tqdm

from rageval_core.config import RunConfig
from rageval_core.dataset import load_dataset
from rageval_core.engines import Answered, Ask, Engine, LocalEngine, PipelineSource
from rageval_core.errors import ConfigError, ConflictError, PipelineError
from rageval_core.judges import Judge, make_judge
from rageval_core.metrics.failure import FailureThresholds, classify_failure
from rageval_core.metrics.retrieval import gold_ranks, retrieval_metrics
from rageval_core.models import (
    DatasetRef,
    DeclaredMetric,
    GoldenDataset,
    GoldenQuestion,
    JudgeInput,
    Judgement,
    PipelineOutput,
    RetrievedChunk,
    RunManifest,
)
from rageval_core.placement import Placement, Placer
from rageval_core.redact import Redactor
from rageval_core.runs.folder import MAX_NAMED, NAMED_TOTALS, RunFolder, run_totals
from rageval_core.runs.journal import Journal
from rageval_core.runs.layout import (
    Shard,
    default_run_id,
    iso,
    utc_now,
    validate_run_id,
)
from rageval_core.runs.lease import Lease, stale_after_s


class Remote(Protocol):
    """Object storage behind the local results folder of a run (`runs.remote.StagedRun`)."""

    def lease(self, run_id: str, shard: int | None) -> Lease | None:
        """The run's lease in the store; None when the store cannot hold one."""

    def download(self, run_id: str) -> None:
        """Copy what the store has of the run into the local folder."""

    def sync_shard(self, folder: Path, index: int, count: int) -> None:
        """Publish this finished shard where the other workers can see it, and refresh
        their status files into `folder`."""

    def upload(self) -> list[str]:
        """Upload what was written locally (failed runs too)."""


@dataclass(frozen=True)
class RunOptions:
    """How to run, beyond the config. `pinned_time` is replay mode (used by the demo):
    the run is dated `pinned_time`, its duration and `finished_at` follow from the
    pipeline's own reported timings, and no git commit is recorded, so the same inputs
    give byte-identical manifests and rows. `remote` is set when the results folder
    stands in for object storage (`runs.remote.StagedRun`)."""

    results: str = "results"
    run_id: str | None = None
    resume: str | None = None
    concurrency: int | None = None
    shard: Shard | None = None
    progress: bool = True
    pinned_time: datetime | None = None
    remote: Remote | None = None
    engine: Engine = LocalEngine()


@dataclass(frozen=True)
class RunResult:
    """What one `run()` call did. `status` is the run's (a finished shard of a run whose
    other shards are not all done leaves it `running`); `totals` are this call's part.
    `shard` is the part this call wrote and `missing_shards` the labels (`2/3`) of the
    shards still to finish."""

    run_id: str
    path: Path
    status: str
    totals: Mapping[str, Any]
    shard: Shard | None = None
    missing_shards: tuple[str, ...] = ()


# ---------------------------------------------------------------------------- one question


@dataclass(frozen=True)
class _Context:
    run_id: str
    config: RunConfig
    ask: Ask
    judge: Judge
    redactor: Redactor
    placer: Placer | None = None
    """The dataset's documents, when it has some: retrieved chunks are placed in them."""
    corpus_ids: frozenset[str] | None = None
    """The chunk ids of an id dataset (a corpus, no documents): retrieved ids are checked."""


def _timings(out: PipelineOutput, wall_ms: float) -> dict[str, float | None]:
    """Stage timings: the pipeline's own figures, else measured wall time.

    The runner sees only the whole call, so without a figure from the pipeline the
    unreported stage gets the wall time not accounted for (all of it when neither stage
    is reported, in which case `retrieval_ms` stays NULL: it cannot be told apart).
    """
    r, g = out.retrieval_ms, out.generation_ms
    if r is not None and g is not None:
        total = r + g  # fully reported: independent of this machine's speed
    else:
        total = wall_ms
        if r is not None:
            g = max(0.0, wall_ms - r)
        elif g is not None:
            r = max(0.0, wall_ms - g)
        else:
            g = wall_ms
    return {
        "retrieval_ms": r,
        "generation_ms": g,
        "ttft_ms": out.ttft_ms if out.ttft_ms is not None else g,
        "total_ms": total,
    }


def _judge(judge: Judge, inp: JudgeInput) -> Judgement:
    try:
        return judge.judge(inp)
    except Exception as exc:  # a judge bug must cost one row, not the run
        return Judgement((), False, None, error=f"{type(exc).__name__}: {exc}")


def _verdict_columns(judgement: Judgement) -> dict[str, Any]:
    """The reference-free verdicts of a judgement as their row columns (`rows.JUDGE_FIELDS`);
    all NULL when the judge erred or was not asked for them."""
    failed = judgement.error is not None
    verdicts = None if failed else judgement.chunk_verdicts
    statements = None if failed else judgement.statements
    return {
        "context_relevance": judgement.context_relevance,
        "context_precision": judgement.context_precision,
        "chunk_verdicts": None if verdicts is None else [v.to_dict() for v in verdicts],
        "answer_relevancy": None if failed else judgement.answer_relevancy,
        "answer_relevancy_reason": None if failed else judgement.answer_relevancy_reason,
        "context_recall": judgement.context_recall,
        "recall_statements": None if statements is None else [s.to_dict() for s in statements],
    }


def judge_columns(
    judge: Judge,
    inp: JudgeInput,
    answerable: bool | None,
    ranks: list[int | None] | None,
    thresholds: FailureThresholds,
) -> dict[str, Any]:
    """The columns of a row the judge decides: claims, faithfulness, answer correctness,
    refusal, the reference-free verdicts, the judge's cost and error, and the failure
    type that follows from them.

    Shared by `rageval run` and `rageval rescore`, so a rescored row is exactly what a run
    with that judge would have written. answer_correctness of an unanswerable question is
    1.0 when the pipeline declined and 0.0 when it answered: declining is its reference.
    `answerable` None is a reference-free question (answerability unknown): declining it
    is neither a false nor a right refusal, so its refusal sets no failure type.
    """
    judgement = _judge(judge, inp)
    refused = None if judgement.error else judgement.refused
    correctness = judgement.answer_correctness
    if answerable is False and refused is not None:
        correctness = 1.0 if refused else 0.0
    return {
        "claims": [c.to_dict() for c in judgement.claims],
        "unsupported_claims": list(judgement.unsupported_claims),
        "faithfulness": judgement.faithfulness,
        "answer_correctness": correctness,
        "refused": refused,
        "judge_cost_usd": judgement.cost_usd,
        "judge_error": judgement.error,
        **_verdict_columns(judgement),
        "failure_type": classify_failure(
            error=None,
            answerable=answerable is not False,
            # An unknown refusal (judge error) is judged on retrieval alone, not as declined.
            refused=bool(refused) and answerable is not None,
            gold_ranks=ranks,
            faithfulness=judgement.faithfulness,
            answer_correctness=correctness,
            thresholds=thresholds,
        ),
    }


def _declared_scores(
    declared: tuple[DeclaredMetric, ...], out: PipelineOutput, q: GoldenQuestion
) -> dict[str, float | None]:
    """The output's `scores` as the row's declared columns (None where one is absent).

    A score the config does not declare, or one that is not a number, is a
    PipelineError naming the question: silently dropping it would hide a typo in a name.
    """
    names = {d.name for d in declared}
    unknown = [k for k in out.scores if k not in names]
    if unknown:
        raise PipelineError(
            f"question {q.id!r}: pipeline returned undeclared score(s) "
            f"{', '.join(repr(str(k)[:64]) for k in unknown[:3])}; declare them under "
            "`metrics:` in the run config"
        )
    scores: dict[str, float | None] = dict.fromkeys(names)
    for k, v in out.scores.items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise PipelineError(
                f"question {q.id!r}: score {k!r} must be a number, got {type(v).__name__}"
            )
        scores[k] = None if v is None else float(v)
    return scores


def retrieval_row(
    ctx: _Context, q: GoldenQuestion, chunks: tuple[RetrievedChunk, ...]
) -> tuple[dict[str, Any], list[int | None] | None]:
    """The retrieval columns of one question's row and the gold ranks its failure type
    reads (None: no retrieval gold). A span question is scored on the chunks' places
    (`metrics/spans.py`), any other on ids; placement and id checks are recorded for both."""
    ids = [c.id for c in chunks]
    placement: Placement | None = None
    cols: dict[str, Any] = {"gold_ids": list(q.gold_labels)}
    if ctx.placer is not None:
        placement = ctx.placer.place_all(chunks)
        cols.update(
            placement.columns(),
            gold_spans=[{"doc_id": s.doc_id, "start": s.start, "end": s.end} for s in q.gold_spans],
        )
    if ctx.corpus_ids is not None:
        cols["n_unknown_ids"] = sum(i not in ctx.corpus_ids for i in dict.fromkeys(ids))
    if q.gold_spans and ctx.placer is not None and placement is not None:
        figures, ranks = ctx.placer.span_figures(ids, placement, q.gold_spans, ctx.config.ks)
        cols.update(figures)
    else:
        cols.update(retrieval_metrics(ids, q.gold_chunk_ids, ctx.config.ks))
        ranks = gold_ranks(ids, q.gold_chunk_ids)
    cols["gold_ranks"] = ranks
    return cols, (ranks if q.has_retrieval_gold else None)


def _answerable(q: GoldenQuestion) -> bool | None:
    """The row's `answerable`: NULL for a reference-free question, whose answerability
    nobody stated (counted neither answerable nor unanswerable in the figures)."""
    return None if q.answerability == "reference_free" else q.answerable


def evaluate_question(ctx: _Context, q: GoldenQuestion) -> dict[str, Any]:
    """The result row of one question (schema `question_schema`), redacted."""
    answered: Answered = ctx.ask(q.question)
    out, error, wall_ms = answered.output, answered.error, answered.wall_ms
    if out is not None:
        try:
            out = ctx.redactor.output(out)
            scores = _declared_scores(ctx.config.metrics, out, q)
        except Exception as exc:
            out, error = None, f"{type(exc).__name__}: {exc}"
    row: dict[str, Any] = {
        "run_id": ctx.run_id,
        "question_id": q.id,
        "question": q.question,
        "reference_answer": q.reference_answer,
        "answerable": _answerable(q),
        "tags": list(q.tags),
        "error": error,
        "judge_error": None,
    }
    if out is None:
        # Nothing was retrieved: 0 for an answerable question (NULL would drop the
        # crash from the means and flatter a pipeline that fails on hard questions).
        row.update(retrieval_row(ctx, q, ())[0])
        row.update(
            failure_type="error",
            claims=[],
            unsupported_claims=[],
            retrieved_ids=[],
            retrieved_texts=[],
            retrieved_scores=[],
            total_ms=wall_ms,
        )
        return ctx.redactor.row(row)

    ids = [c.id for c in out.retrieved]
    retrieval, ranks = retrieval_row(ctx, q, out.retrieved)
    row.update(retrieval)
    row.update(_timings(out, wall_ms))
    row.update(scores)
    row.update(
        answer=out.answer,
        retrieved_ids=ids,
        retrieved_texts=[c.text for c in out.retrieved],
        retrieved_scores=[c.score for c in out.retrieved],
        input_tokens=out.input_tokens,
        output_tokens=out.output_tokens,
        cost_usd=ctx.config.prices.cost(out.input_tokens, out.output_tokens),
    )
    inp = JudgeInput(q.question, out.answer, out.retrieved, q.reference_answer)
    row.update(judge_columns(ctx.judge, inp, _answerable(q), ranks, ctx.config.failure_thresholds))
    return ctx.redactor.row(row)


# ---------------------------------------------------------------------------- the pool


class _DaemonPool:
    """A fixed pool of daemon worker threads handing out `Future`s.

    Not ThreadPoolExecutor: Python joins its (non-daemon) threads at interpreter exit, so
    even `shutdown(wait=False)` left an abandoned run (second Ctrl-C) waiting for every
    question in flight — one pipeline call can take minutes. Daemon threads do not hold
    the process; an abandoned question was never journalled, so nothing is lost.
    """

    def __init__(self, workers: int, name: str):
        self._work: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple] | None]
        self._work = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._worker, name=f"{name}_{i}", daemon=True)
            for i in range(workers)
        ]
        for t in self._threads:
            t.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._work.put((future, fn, args))
        return future

    def _worker(self) -> None:
        while (item := self._work.get()) is not None:
            future, fn, args = item
            if not future.set_running_or_notify_cancel():
                continue  # cancelled while queued
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # delivered to whoever waits on the future
                future.set_exception(exc)

    def shutdown(self, wait: bool) -> None:
        """Stop the workers once the queue drains; cancel queued work first yourself."""
        for _ in self._threads:
            self._work.put(None)
        if wait:
            for t in self._threads:
                t.join()


# ---------------------------------------------------------------------------- writing a run


def git_commit(cwd: Path | None = None) -> str | None:
    """HEAD of the git repository around `cwd`, or None (not a repo, no git, any failure)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _relative(path: Path) -> str:
    """A path as the user would type it: relative to cwd when below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class RunJob:
    """The writing of one run (or one shard of one) whose rows some `work` makes: lease,
    manifest, journal, resume, the bounded pool with its progress bar and Ctrl-C, Parquet,
    summary, upload. `Runner` gives it a pipeline's answers and `rescore.Rescorer` stored
    answers judged again; `command` is how its messages name the command."""

    def __init__(self, command: str, config: RunConfig, options: RunOptions):
        self.command = command
        self.config = config
        self.options = options
        self.concurrency = (
            config.concurrency if options.concurrency is None else options.concurrency
        )
        if self.concurrency < 1:
            raise ConfigError(f"--concurrency must be >= 1, got {self.concurrency}")
        self.redactor = Redactor.for_env(config.secret_env_names(), extra=config.secret_values())
        self.pinned = options.pinned_time
        self.started = time.monotonic()
        self._leases: list[Lease] = []
        self._writing = ""  # "run X" or "shard K/N of run X", once the leases are held

    def log(self, message: str) -> None:
        print(f"rageval {self.command}: {self.redactor.text(message)}", file=sys.stderr, flush=True)

    def now(self) -> datetime:
        return self.pinned or utc_now()

    def run_id(self, default_name: str) -> str:
        """The run's id: `--resume`'s, `--run-id`'s, else the UTC time and `default_name`."""
        if self.options.resume:
            if self.options.run_id and self.options.run_id != self.options.resume:
                raise ConfigError("--run-id and --resume name different runs; give one")
            return validate_run_id(self.options.resume)
        if self.options.run_id:
            return validate_run_id(self.options.run_id)
        if self.options.shard:
            raise ConfigError("--shard needs --run-id so every worker writes the same run")
        return default_run_id(default_name, self.now())

    def _duration(self, rows: list[dict[str, Any]], previous: float) -> float:
        if self.pinned:
            # Replay: as long as the pipeline says the questions took, spread over workers.
            return sum(r.get("total_ms") or 0.0 for r in rows) / 1000 / self.concurrency
        return previous + time.monotonic() - self.started

    def _evaluate_all(
        self,
        run_id: str,
        work: Callable[[Any], dict[str, Any]],
        todo: list[Any],
        done: int,
        journal: Journal,
    ) -> list[dict[str, Any]]:
        """Run `work` on each item of `todo` on a bounded pool; journal each row as it
        finishes. Ctrl-C: stop submitting, record what is in flight, then re-raise. A second
        Ctrl-C abandons the questions in flight: no waiting for them, here or at exit."""
        new_rows: list[dict[str, Any]] = []
        bar = tqdm(
            total=done + len(todo),
            initial=done,
            desc=run_id[:40],
            unit="q",
            file=sys.stderr,
            disable=not self.options.progress,
            dynamic_ncols=True,
        )

        def record(futures: Iterable[Future[dict[str, Any]]]) -> None:
            failed: Exception | None = None
            for f in futures:
                try:
                    row = f.result()
                except Exception as exc:  # raised once the batch's finished rows are kept
                    failed = failed or exc
                    continue
                journal.append(row)
                new_rows.append(row)
                bar.update(1)
            if failed is not None:
                raise failed

        pool = _DaemonPool(self.concurrency, "rageval")
        pending: set[Future[dict[str, Any]]] = set()
        items = iter(todo)
        abandoned = False
        try:
            while True:
                # A short queue keeps memory flat and lets Ctrl-C stop quickly.
                for item in items:
                    pending.add(pool.submit(work, item))
                    if len(pending) >= 2 * self.concurrency:
                        break
                if not pending:
                    break
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                record(finished)
                self._check_leases()
        except KeyboardInterrupt:
            try:  # the second Ctrl-C may come at any point of this, the log line included
                for f in pending:
                    f.cancel()
                self.log("interrupted: finishing the questions in flight (Ctrl-C again to abandon)")
                record(f for f in wait(pending)[0] if not f.cancelled())
            except KeyboardInterrupt:
                abandoned = True
                self.log("abandoned: the questions in flight are not recorded")
                raise
            raise
        finally:
            for f in pending:
                f.cancel()  # queued questions never start; running ones cannot be stopped
            pool.shutdown(wait=not abandoned)
            bar.close()
        return new_rows

    def write(
        self,
        folder: RunFolder,
        manifest: RunManifest,
        mine: Mapping[str, Any],
        work: Callable[[Any], dict[str, Any]],
    ) -> RunResult:
        """Open (or resume) the run under `manifest`, turn every item of `mine` (question
        id -> item, in the order rows are written) not yet journalled into its row with
        `work`, and finish the run. Hold the lease (`sole_writer`) around it."""
        manifest = folder.open(
            manifest,
            resume=bool(self.options.resume),
            exists_hint=f"use --resume {folder.run_id} or another --run-id",
        )
        done_rows = folder.done_rows(self.log)
        done_ids = {r["question_id"] for r in done_rows}
        todo = [item for qid, item in mine.items() if qid not in done_ids]
        if done_rows:
            self.log(f"resuming {folder.run_id}: {len(mine) - len(todo)} of {len(mine)} done")
        order = list(mine)
        previous = float(manifest.totals.get("duration_s") or 0.0)
        with folder.journal_writer() as journal:
            try:
                new_rows = self._evaluate_all(
                    folder.run_id, work, todo, len(mine) - len(todo), journal
                )
                self._check_leases()
            except BaseException:
                self._finish(folder, manifest, order, [], previous, failed=True)
                raise
        rows = done_rows + new_rows
        return self._finish(folder, manifest, order, rows, previous, failed=False)

    # -- one writer

    @contextmanager
    def sole_writer(self, folder: RunFolder, what: str, resume: str) -> Iterator[None]:
        """Hold the lease of the run (or of this shard) for the block (`RunFolder.hold`;
        `what` names the writer's part of the run, `resume` the command that resumes it).
        With object storage the bucket's lease comes first, the run is copied down only
        then, and it is uploaded (failed runs too) before the lease is let go."""
        remote = self.options.remote
        first: list[Lease] = []
        if remote is not None:
            bucket = remote.lease(folder.run_id, folder.shard.index if folder.shard else None)
            if bucket is None:
                self.log(
                    "warning: this object store has no conditional writes rageval uses, so "
                    "nothing stops a second writer of this run: start only one"
                )
            else:
                first.append(bucket)
        with folder.hold(what, resume, first) as leases:
            self._leases, self._writing = leases, what
            if remote is None:
                yield
                return
            remote.download(folder.run_id)
            try:
                yield
            finally:
                if not any(lease.lost for lease in leases):
                    remote.upload()

    def _check_leases(self) -> None:
        if any(lease.lost for lease in self._leases):
            raise ConflictError(
                f"{self._writing}: another writer took the run over after this one "
                f"showed no sign of life for {stale_after_s():g} s; stopping, nothing uploaded"
            )

    # -- the end

    def _finish(
        self,
        folder: RunFolder,
        manifest: RunManifest,
        order: list[str],
        rows: list[dict[str, Any]],
        previous: float,
        failed: bool,
    ) -> RunResult:
        if failed:
            # Rows stay in the journal; totals count what it holds so far.
            rows = folder.done_rows(self.log)
        rank = {qid: i for i, qid in enumerate(order)}
        rows = sorted(rows, key=lambda r: rank.get(r["question_id"], len(rank)))
        totals = run_totals(rows, self._duration(rows, previous))
        status = "failed" if failed else "complete"
        finished_at = iso(
            self.pinned + timedelta(seconds=totals["duration_s"]) if self.pinned else self.now()
        )
        if not failed:
            folder.write_rows(rows, self.config.ks, self.config.metrics)
        if folder.shard_status is not None:
            folder.write_shard_status(status, finished_at, totals)
            if not failed and self.options.remote is not None:
                # Other workers finish elsewhere: look at their status now, not at start-up.
                self.options.remote.sync_shard(folder.path, folder.shard.index, folder.shard.count)
            missing = self._missing_shards(folder, manifest.shards)
            if failed or missing:
                return RunResult(
                    folder.run_id,
                    folder.path,
                    "failed" if failed else "running",
                    totals,
                    shard=folder.shard,
                    missing_shards=missing,
                )
            totals = self._shard_totals(folder, manifest.shards)
        final = replace(manifest, status=status, finished_at=finished_at, totals=totals)
        folder.publish(final)
        return RunResult(folder.run_id, folder.path, status, totals, shard=folder.shard)

    def _missing_shards(self, folder: RunFolder, count: int) -> tuple[str, ...]:
        """Labels (`2/3`) of the shards that have not reported complete."""
        return tuple(
            Shard(k, count).label
            for k, s in enumerate(folder.shard_statuses(count))
            if s.status != "complete"
        )

    def _shard_totals(self, folder: RunFolder, count: int) -> dict[str, Any]:
        parts = [s.totals for s in folder.shard_statuses(count) if s.status == "complete"]
        keys = dict.fromkeys(k for p in parts for k in p)
        summed = {k: sum(p.get(k) or 0 for p in parts) for k in keys if k not in NAMED_TOTALS}
        for key in NAMED_TOTALS:
            if key in keys:
                named = dict.fromkeys(i for p in parts for i in p.get(key) or ())
                summed[key] = list(named)[:MAX_NAMED]
        # Shards run side by side: the run took as long as its slowest shard.
        summed["duration_s"] = max(p.get("duration_s") or 0 for p in parts)
        summed["cost_usd"] = round(summed["cost_usd"], 8)
        summed["judge_cost_usd"] = round(summed["judge_cost_usd"], 8)
        return summed


# ---------------------------------------------------------------------------- the run


class Runner:
    """One run (or one shard of one) of a config; `run()` does the whole job: the
    pipeline's answers, judged and scored, written by a `RunJob`."""

    def __init__(self, config: RunConfig, options: RunOptions):
        self.config = config
        self.options = options
        self.job = RunJob("run", config, options)

    def _new_manifest(self, run_id: str, dataset: GoldenDataset, judge: Judge) -> RunManifest:
        config = self.config.to_manifest()
        config["concurrency"] = self.job.concurrency
        if not isinstance(self.options.engine, LocalEngine):
            # Absent means local: local runs' manifests stay as they were (byte-identical demo).
            config["engine"] = self.options.engine.name
        return RunManifest(
            run_id=run_id,
            status="running",
            created_at=iso(self.job.now()),
            config=self.job.redactor.value(config),
            dataset=DatasetRef(
                name=dataset.name,
                version=dataset.version,
                sha256=dataset.sha256,
                n_questions=len(dataset.questions),
                path=_relative(Path(dataset.path)),
            ),
            judge=judge.describe(),
            git_commit=None if self.job.pinned else git_commit(Path.cwd()),
            tags=self.config.tags,
            shards=self.options.shard.count if self.options.shard else 1,
            metrics=self.config.metrics,
        )

    def run(self) -> RunResult:
        dataset = load_dataset(self.config.dataset_path)
        run_id = self.job.run_id(self.config.name)
        folder = RunFolder(self.options.results, run_id, self.options.shard)
        judge = make_judge(self.config.judge)
        try:
            with self.job.sole_writer(folder, *self._what(folder)), self._pipeline() as ask:
                return self._run(folder, dataset, judge, ask)
        finally:
            judge.close()

    @contextmanager
    def _pipeline(self) -> Iterator[Ask]:
        """The run's pipeline, built by its engine (here, or once per Ray worker)."""
        source = PipelineSource(
            self.config.pipeline, self.config.folder, self.config.dataset_path, Path.cwd()
        )
        with ExitStack() as stack:
            try:
                ask = stack.enter_context(
                    self.options.engine.open(source, self.job.concurrency, self.job.log)
                )
            except PipelineError as exc:  # user code's message may echo a secret
                raise PipelineError(self.job.redactor.text(exc.message)) from None
            yield ask

    def _run(self, folder: RunFolder, dataset: GoldenDataset, judge: Judge, ask: Ask) -> RunResult:
        mine = {
            q.id: q
            for q in dataset.questions
            if self.options.shard is None or self.options.shard.owns(q.id)
        }
        ctx = _Context(
            folder.run_id,
            self.config,
            ask,
            judge,
            self.job.redactor,
            placer=Placer(dataset.documents, dataset.corpus) if dataset.documents else None,
            # on a span dataset ids are free to differ from the corpus: places are scored
            corpus_ids=(
                frozenset(c.id for c in dataset.corpus)
                if dataset.corpus and not dataset.documents
                else None
            ),
        )
        manifest = self._new_manifest(folder.run_id, dataset, judge)
        return self.job.write(folder, manifest, mine, partial(evaluate_question, ctx))

    def _what(self, folder: RunFolder) -> tuple[str, str]:
        """How messages name this writer's part of the run, and the command that resumes it."""
        shard = self.options.shard
        if shard is None:
            return f"run {folder.run_id}", f"rageval run CONFIG.yaml --resume {folder.run_id}"
        part = shard.label
        return (
            f"shard {part} of run {folder.run_id}",
            f"rageval run CONFIG.yaml --resume {folder.run_id} --shard {part}",
        )


def run(config: RunConfig, options: RunOptions = RunOptions()) -> RunResult:
    """Run `config` and write the run under `options.results`; see the module docstring."""
    return Runner(config, options).run()
