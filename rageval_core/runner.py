"""Run a pipeline over a golden dataset and write the run (SPEC §4), crash-safe.

Order of writes, which is what makes a run survive `kill -9`:

1. `manifest.json` with status `running` (created only if absent when sharded, so
   concurrent shard workers never clobber each other's manifest);
2. one journal line per finished question, flushed and fsynced before the next is
   recorded — a killed run keeps every question whose line completed;
3. at the end the typed Parquet (rows in dataset order), then the journal is removed (the
   Parquet holds the same rows), `summary.json`, and the manifest as `complete`.

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

import hashlib
import json
import os
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

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from rageval_core import results
from rageval_core.config import RunConfig
from rageval_core.dataset import load_dataset
from rageval_core.engines import Answered, Ask, Engine, LocalEngine, PipelineSource
from rageval_core.errors import ConfigError, ConflictError, PipelineError, ResultsError
from rageval_core.judges import Judge, make_judge
from rageval_core.lease import Lease, LocalLease, heartbeat, heartbeat_s, lease_name
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
    RunManifest,
)
from rageval_core.query.summary import summarize_run
from rageval_core.redact import Redactor
from rageval_core.results import MAX_SHARDS, stale_after_s


@dataclass(frozen=True)
class Shard:
    """Worker `index` of `count`: owns the questions whose stable id hash lands on it.

    Users number shards 1..N (`--shard 1/3` … `3/3`, as Playwright, Jest and a CI matrix
    do); `index` is that number minus one, which is also the number in the shard's file
    names (`questions-0.parquet` is shard 1/N), so runs written before stay readable.
    """

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`K/N` with 1 <= K <= N, e.g. `1/2`; ConfigError naming the value otherwise."""
        k, sep, n = text.partition("/")
        short = sep and k.isdigit() and n.isdigit() and len(k) <= 6 and len(n) <= 6
        if not (short and 1 <= int(n) <= MAX_SHARDS):
            raise ConfigError(
                f"--shard must be K/N with 1 <= K <= N <= {MAX_SHARDS} (e.g. 1/2), "
                f"got {text[:40]!r}"
            )
        if not 1 <= int(k) <= int(n):
            raise ConfigError(
                f"--shard {text}: shards are numbered from 1 to {int(n)}, "
                f"so K = {int(k)} is not one of them"
            )
        return cls(int(k) - 1, int(n))

    @property
    def label(self) -> str:
        """`K/N` as the user typed it (1-based)."""
        return f"{self.index + 1}/{self.count}"

    def owns(self, question_id: str) -> bool:
        # sha256, not hash(): Python salts str hashes per process, workers must agree.
        digest = hashlib.sha256(question_id.encode("utf-8")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index


class Remote(Protocol):
    """Object storage behind the local results folder of a run (`storage.StagedRun`)."""

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
    stands in for object storage (`storage.StagedRun`)."""

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


def judge_columns(
    judge: Judge,
    inp: JudgeInput,
    answerable: bool,
    ranks: list[int | None],
    thresholds: FailureThresholds,
) -> dict[str, Any]:
    """The columns of a row the judge decides: claims, faithfulness, answer correctness,
    refusal, the judge's cost and error, and the failure type that follows from them.

    Shared by `rageval run` and `rageval rescore`, so a rescored row is exactly what a run
    with that judge would have written. answer_correctness of an unanswerable question is
    1.0 when the pipeline declined and 0.0 when it answered: declining is its reference.
    """
    judgement = _judge(judge, inp)
    refused = None if judgement.error else judgement.refused
    correctness = judgement.answer_correctness
    if not answerable and refused is not None:
        correctness = 1.0 if refused else 0.0
    return {
        "claims": [c.to_dict() for c in judgement.claims],
        "unsupported_claims": list(judgement.unsupported_claims),
        "faithfulness": judgement.faithfulness,
        "answer_correctness": correctness,
        "refused": refused,
        "judge_cost_usd": judgement.cost_usd,
        "judge_error": judgement.error,
        "failure_type": classify_failure(
            error=None,
            answerable=answerable,
            # An unknown refusal (judge error) is judged on retrieval alone, not as declined.
            refused=bool(refused),
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


def evaluate_question(ctx: _Context, q: GoldenQuestion) -> dict[str, Any]:
    """The result row of one question (schema `results.question_schema`), redacted."""
    answered: Answered = ctx.ask(q.question)
    out, error, wall_ms = answered.output, answered.error, answered.wall_ms
    if out is not None:
        try:
            out = ctx.redactor.output(out)
            scores = _declared_scores(ctx.config.metrics, out, q)
        except Exception as exc:
            out, error = None, f"{type(exc).__name__}: {exc}"
    ks = ctx.config.ks
    row: dict[str, Any] = {
        "run_id": ctx.run_id,
        "question_id": q.id,
        "question": q.question,
        "reference_answer": q.reference_answer,
        "answerable": q.answerable,
        "tags": list(q.tags),
        "gold_ids": list(q.gold_chunk_ids),
        "error": error,
        "judge_error": None,
    }
    if out is None:
        row.update(
            # Nothing was retrieved: 0 for an answerable question (NULL would drop the
            # crash from the means and flatter a pipeline that fails on hard questions).
            retrieval_metrics([], q.gold_chunk_ids, ks),
            failure_type="error",
            claims=[],
            unsupported_claims=[],
            retrieved_ids=[],
            retrieved_texts=[],
            retrieved_scores=[],
            gold_ranks=[None] * len(q.gold_chunk_ids),
            total_ms=wall_ms,
        )
        return ctx.redactor.row(row)

    ids = [c.id for c in out.retrieved]
    ranks = gold_ranks(ids, q.gold_chunk_ids)
    row.update(retrieval_metrics(ids, q.gold_chunk_ids, ks))
    row.update(_timings(out, wall_ms))
    row.update(scores)
    row.update(
        answer=out.answer,
        retrieved_ids=ids,
        retrieved_texts=[c.text for c in out.retrieved],
        retrieved_scores=[c.score for c in out.retrieved],
        gold_ranks=ranks,
        input_tokens=out.input_tokens,
        output_tokens=out.output_tokens,
        cost_usd=ctx.config.prices.cost(out.input_tokens, out.output_tokens),
    )
    inp = JudgeInput(q.question, out.answer, out.retrieved, q.reference_answer)
    row.update(judge_columns(ctx.judge, inp, q.answerable, ranks, ctx.config.failure_thresholds))
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


# ---------------------------------------------------------------------------- the run folder


def git_commit(cwd: Path | None = None) -> str | None:
    """HEAD of the git repository around `cwd`, or None (not a repo, no git, any failure)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _create_json_if_absent(path: Path, value: Any) -> bool:
    """Write `value` to `path` atomically unless it exists; False when another won.

    A hard link of a complete temporary file is atomic and fails if the name is taken, so
    two shard workers starting together cannot both write (or half-write) the manifest.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    results.atomic_write_json(tmp, value)
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)


def _totals(rows: Iterable[Mapping[str, Any]], duration_s: float) -> dict[str, Any]:
    rows = list(rows)

    def total(col: str) -> float:
        return round(sum(r.get(col) or 0.0 for r in rows), 8)

    return {
        "n_questions": len(rows),
        "n_errors": sum(1 for r in rows if r.get("error")),
        "n_judge_errors": sum(1 for r in rows if r.get("judge_error")),
        "cost_usd": total("cost_usd"),
        "judge_cost_usd": total("judge_cost_usd"),
        "duration_s": round(duration_s, 3),
    }


def _cannot_write(folder: _RunFolder, exc: OSError) -> ResultsError:
    """Not a folder, read-only, disk full: a user's setup, said in one line."""
    return ResultsError(
        f"cannot write run {folder.run_id} in {folder.path.parent}: {exc.strerror or exc}"
    )


def _relative(path: Path) -> str:
    """A path as the user would type it: relative to cwd when below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class _RunFolder:
    """Paths and writes of one run folder (or of one shard of it)."""

    def __init__(self, results_dir: str, run_id: str, shard: Shard | None):
        if results.is_remote(results_dir):
            raise ConfigError(f"--results {results_dir}: runs are written to a local folder")
        self.path = Path(results_dir) / results.validate_run_id(run_id)
        self.run_id = run_id
        self.shard = shard
        k = shard.index if shard else None
        self.journal = self.path / results.journal_name(k)
        self.parquet = self.path / results.parquet_name(k)
        self.manifest = self.path / results.MANIFEST
        self.shard_status = self.path / f"shard-{k}.json" if shard else None

    def read_manifest(self) -> RunManifest | None:
        if not self.manifest.exists():
            return None
        try:
            data = json.loads(self.manifest.read_text(encoding="utf-8"))
        except OSError as exc:  # a folder, no permission: the user's files, not our bug
            raise ResultsError(f"{self.manifest}: cannot read ({exc.strerror or exc})") from exc
        except ValueError as exc:
            raise ResultsError(f"{self.manifest}: not valid JSON ({exc})") from exc
        return results.manifest_from_dict(data, str(self.manifest))

    def write_manifest(self, manifest: RunManifest) -> None:
        results.atomic_write_json(self.manifest, results.manifest_to_dict(manifest))

    def done_rows(self) -> list[dict[str, Any]]:
        """Rows already recorded for this shard: final Parquet, else the journal."""
        if self.parquet.exists():
            try:
                # Through a file handle: pyarrow would read a folder as an (empty) dataset.
                with open(self.parquet, "rb") as fh:
                    return pq.read_table(fh).to_pylist()
            except (OSError, ValueError, pa.ArrowException) as exc:
                reason = " ".join(str(getattr(exc, "strerror", None) or exc).split())
                raise ResultsError(
                    f"{self.parquet}: unreadable Parquet ({type(exc).__name__}: {reason})"
                ) from exc
        if not self.journal.exists():
            return []
        rows, problems = results.read_journal(str(self.journal))
        for p in problems:
            print(f"rageval run: warning: {p} (that question will be run again)", file=sys.stderr)
        return rows


def write_rows(
    folder: _RunFolder,
    rows: list[dict[str, Any]],
    ks: Iterable[int],
    declared: tuple[DeclaredMetric, ...],
) -> None:
    """The final typed Parquet of `rows`, then the journal removed (the Parquet holds the
    same rows). Shared with `writer.RunWriter`, so both write the same files."""
    table = results.rows_to_table(rows, results.question_schema(ks, declared))
    results.write_parquet(folder.parquet, table)
    folder.journal.unlink(missing_ok=True)


def publish(folder: _RunFolder, final: RunManifest) -> None:
    """Write a finished run's manifest, after its `summary.json` when complete: the
    manifest goes last, so a reader never sees a complete run without its summary."""
    if final.status == "complete":
        info = results.inspect_run(str(folder.path.parent), folder.run_id)
        info.status, info.manifest = "complete", final
        results.atomic_write_json(folder.path / results.SUMMARY, summarize_run(info))
    folder.write_manifest(final)


# ---------------------------------------------------------------------------- the run


class Runner:
    """One run (or one shard of one) of a config; `run()` does the whole job.

    The writing — lease, manifest, journal, resume, the bounded pool with its progress bar
    and Ctrl-C, Parquet, summary, upload — is `_write`, shared with `rescore.Rescorer`,
    which judges a stored run's answers again instead of calling a pipeline.
    """

    command = "run"  # how messages name the command

    def __init__(self, config: RunConfig, options: RunOptions):
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
        return self.pinned or results.utc_now()

    # -- set-up

    def _run_id(self) -> str:
        if self.options.resume:
            if self.options.run_id and self.options.run_id != self.options.resume:
                raise ConfigError("--run-id and --resume name different runs; give one")
            return results.validate_run_id(self.options.resume)
        if self.options.run_id:
            return results.validate_run_id(self.options.run_id)
        if self.options.shard:
            raise ConfigError("--shard needs --run-id so every worker writes the same run")
        return results.default_run_id(self._default_name(), self.now())

    def _default_name(self) -> str:
        """What a default run id is made of, after the UTC time."""
        return self.config.name

    def _new_manifest(self, run_id: str, dataset: GoldenDataset, judge: Judge) -> RunManifest:
        config = self.config.to_manifest()
        config["concurrency"] = self.concurrency
        if not isinstance(self.options.engine, LocalEngine):
            # Absent means local: local runs' manifests stay as they were (byte-identical demo).
            config["engine"] = self.options.engine.name
        return RunManifest(
            run_id=run_id,
            status="running",
            created_at=results.iso(self.now()),
            config=self.redactor.value(config),
            dataset=DatasetRef(
                name=dataset.name,
                version=dataset.version,
                sha256=dataset.sha256,
                n_questions=len(dataset.questions),
                path=_relative(Path(dataset.path)),
            ),
            judge=judge.describe(),
            git_commit=None if self.pinned else git_commit(Path.cwd()),
            tags=self.config.tags,
            shards=self.options.shard.count if self.options.shard else 1,
            metrics=self.config.metrics,
        )

    def _check_same_run(self, old: RunManifest, new: RunManifest) -> None:
        """A resumed run or a second shard must evaluate exactly what the first started."""
        problems = []
        if old.dataset.sha256 != new.dataset.sha256:
            problems.append("the dataset changed (sha256 differs)")
        strip = ("concurrency", "engine")  # how a run is executed, not what it evaluates
        a = {k: v for k, v in old.config.items() if k not in strip}
        b = json.loads(json.dumps({k: v for k, v in new.config.items() if k not in strip}))
        if a != b:
            problems.append("the run config differs (pipeline, judge, prices, ks or thresholds)")
        if old.metrics != new.metrics:
            problems.append("the declared metrics differ")
        if old.source_run != new.source_run:
            problems.append(f"it rescores run {old.source_run}, not {new.source_run}")
        if old.shards != new.shards:
            problems.append(f"the run has {old.shards} shard(s), this worker says {new.shards}")
        if problems:
            raise ConfigError(f"run {old.run_id} was started with other settings", problems)

    def _open(self, folder: _RunFolder, manifest: RunManifest) -> RunManifest:
        """Create or re-open the run folder; the manifest the run continues under."""
        existing = folder.read_manifest()
        if self.options.resume:
            if existing is None:
                raise ResultsError(f"cannot resume {folder.run_id}: {folder.manifest} not found")
            self._check_same_run(existing, manifest)
            manifest = replace(existing, status="running", finished_at=None)
            if folder.shard_status is not None:
                folder.shard_status.unlink(missing_ok=True)  # back to running
            else:
                folder.write_manifest(manifest)
            return manifest
        if self.options.shard:
            if folder.journal.exists() or folder.parquet.exists():
                raise ResultsError(
                    f"shard {self.options.shard.label} of {folder.run_id} already started; "
                    f"use --resume {folder.run_id}"
                )
            folder.path.mkdir(parents=True, exist_ok=True)
            if not _create_json_if_absent(folder.manifest, results.manifest_to_dict(manifest)):
                # Another shard created it first: continue under its manifest.
                existing = folder.read_manifest() or manifest
                self._check_same_run(existing, manifest)
                return existing
            return manifest
        if existing is not None:
            raise ResultsError(
                f"run {folder.run_id} already exists in {folder.path.parent}; "
                f"use --resume {folder.run_id} or another --run-id"
            )
        folder.write_manifest(manifest)
        return manifest

    # -- the work

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
        journal: results.Journal,
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
        queue = iter(todo)
        abandoned = False
        try:
            while True:
                # A short queue keeps memory flat and lets Ctrl-C stop quickly.
                for item in queue:
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

    def run(self) -> RunResult:
        dataset = load_dataset(self.config.dataset_path)
        run_id = self._run_id()
        folder = _RunFolder(self.options.results, run_id, self.options.shard)
        judge = make_judge(self.config.judge)
        try:
            with self._sole_writer(folder), self._pipeline() as ask:
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
                    self.options.engine.open(source, self.concurrency, self.log)
                )
            except PipelineError as exc:  # user code's message may echo a secret
                raise PipelineError(self.redactor.text(exc.message)) from None
            yield ask

    def _run(self, folder: _RunFolder, dataset: GoldenDataset, judge: Judge, ask: Ask) -> RunResult:
        mine = {
            q.id: q
            for q in dataset.questions
            if self.options.shard is None or self.options.shard.owns(q.id)
        }
        ctx = _Context(folder.run_id, self.config, ask, judge, self.redactor)
        manifest = self._new_manifest(folder.run_id, dataset, judge)
        return self._write(folder, manifest, mine, partial(evaluate_question, ctx))

    def _write(
        self,
        folder: _RunFolder,
        manifest: RunManifest,
        mine: Mapping[str, Any],
        work: Callable[[Any], dict[str, Any]],
    ) -> RunResult:
        """Open (or resume) the run under `manifest`, turn every item of `mine` (question
        id -> item, in the order rows are written) not yet journalled into its row with
        `work`, and finish the run. Hold the lease (`_sole_writer`) around it."""
        try:
            manifest = self._open(folder, manifest)
        except OSError as exc:  # not a folder, read-only, disk full: a user's setup
            raise _cannot_write(folder, exc) from exc
        done_rows = folder.done_rows()
        done_ids = {r["question_id"] for r in done_rows}
        todo = [item for qid, item in mine.items() if qid not in done_ids]
        if done_rows:
            self.log(f"resuming {folder.run_id}: {len(mine) - len(todo)} of {len(mine)} done")
        order = list(mine)
        previous = float(manifest.totals.get("duration_s") or 0.0)
        with results.Journal(folder.journal) as journal:
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

    def _what(self, folder: _RunFolder) -> tuple[str, str]:
        """How messages name this writer's part of the run, and the command that resumes it."""
        shard = self.options.shard
        if shard is None:
            return f"run {folder.run_id}", f"rageval run CONFIG.yaml --resume {folder.run_id}"
        part = shard.label
        return (
            f"shard {part} of run {folder.run_id}",
            f"rageval run CONFIG.yaml --resume {folder.run_id} --shard {part}",
        )

    @contextmanager
    def _sole_writer(self, folder: _RunFolder) -> Iterator[None]:
        """Hold the lease of the run (or of this shard) for the block, renewed by a
        heartbeat; refuse when another writer holds it (lease.py). With object storage the
        bucket's lease comes first, the run is copied down only then, and it is uploaded
        (failed runs too) before the lease is let go."""
        remote = self.options.remote
        k = folder.shard.index if folder.shard else None
        leases: list[Lease] = []
        if remote is not None:
            bucket = remote.lease(folder.run_id, k)
            if bucket is None:
                self.log(
                    "warning: this object store has no conditional writes rageval uses, so "
                    "nothing stops a second writer of this run: start only one"
                )
            else:
                leases.append(bucket)
        leases.append(LocalLease(folder.path / lease_name(k)))
        what, resume = self._what(folder)
        with ExitStack() as held:
            for lease in leases:
                try:
                    holder = lease.acquire()
                except OSError as exc:
                    raise _cannot_write(folder, exc) from exc
                if holder is not None:
                    raise ConflictError(
                        f"{what} is already being written by {holder}; wait for it to "
                        f"finish, or stop it and run `{resume}`"
                    )
                held.callback(lease.release)
            held.enter_context(heartbeat(leases, heartbeat_s()))
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
        folder: _RunFolder,
        manifest: RunManifest,
        order: list[str],
        rows: list[dict[str, Any]],
        previous: float,
        failed: bool,
    ) -> RunResult:
        if failed:
            # Rows stay in the journal; totals count what it holds so far.
            rows = folder.done_rows()
        rank = {qid: i for i, qid in enumerate(order)}
        rows = sorted(rows, key=lambda r: rank.get(r["question_id"], len(rank)))
        totals = _totals(rows, self._duration(rows, previous))
        status = "failed" if failed else "complete"
        finished_at = results.iso(
            self.pinned + timedelta(seconds=totals["duration_s"]) if self.pinned else self.now()
        )
        if not failed:
            write_rows(folder, rows, self.config.ks, self.config.metrics)
        if folder.shard_status is not None:
            results.atomic_write_json(
                folder.shard_status,
                {"status": status, "finished_at": finished_at, "totals": totals},
            )
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
        publish(folder, final)
        return RunResult(folder.run_id, folder.path, status, totals, shard=folder.shard)

    @staticmethod
    def _shard_statuses(folder: _RunFolder, count: int) -> list[dict[str, Any] | None]:
        out = []
        for k in range(count):
            p = folder.path / f"shard-{k}.json"
            try:
                out.append(json.loads(p.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                out.append(None)
        return out

    def _missing_shards(self, folder: _RunFolder, count: int) -> tuple[str, ...]:
        """Labels (`2/3`) of the shards that have not reported complete."""
        return tuple(
            Shard(k, count).label
            for k, s in enumerate(self._shard_statuses(folder, count))
            if s is None or s.get("status") != "complete"
        )

    def _shard_totals(self, folder: _RunFolder, count: int) -> dict[str, Any]:
        parts = [s["totals"] for s in self._shard_statuses(folder, count) if s]
        summed = {k: sum(p.get(k) or 0 for p in parts) for k in parts[0]}
        # Shards run side by side: the run took as long as its slowest shard.
        summed["duration_s"] = max(p.get("duration_s") or 0 for p in parts)
        summed["cost_usd"] = round(summed["cost_usd"], 8)
        summed["judge_cost_usd"] = round(summed["judge_cost_usd"], 8)
        return summed


def run(config: RunConfig, options: RunOptions = RunOptions()) -> RunResult:
    """Run `config` and write the run under `options.results`; see the module docstring."""
    return Runner(config, options).run()
