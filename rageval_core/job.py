"""The writing of one run, or one shard of one, whose rows some `work` makes.

`RunJob` holds the lease, opens (or resumes) the manifest, journals each row as the
bounded pool finishes it, stops cleanly on Ctrl-C, writes the Parquet, summary and final
manifest and uploads to object storage. `runner.Runner` gives it a pipeline's answers and
`rescore.Rescorer` stored answers judged again; what a row holds is `scoring.py`'s
business, never this module's. `RunOptions`, `RunResult` and `git_commit` live here so the
writer, rescore and the importers need not import the runner.

Order of writes, which is what makes a run survive `kill -9`:

1. the manifest with status `running` (created only if absent when sharded, so
   concurrent shard workers never clobber each other's manifest);
2. one journal line per finished question, flushed and fsynced before the next is
   recorded — a killed run keeps every question whose line completed;
3. at the end the typed Parquet (rows in dataset order), then the journal is removed (the
   Parquet holds the same rows), the summary, and the manifest as `complete`. The
   files and their names are the run folder's (`runs.folder.RunFolder`, `runs.layout`).

`--resume RUN_ID` reads the journal back, skips the question ids already there and
finishes the rest. Ctrl-C stops submitting questions, records the ones in flight that
finish within `GRACE_S` (a hung pipeline or judge is left behind, unrecorded), marks
the run `failed` (resumable) and re-raises KeyboardInterrupt, which the CLI turns into
exit 130; a second Ctrl-C does the same at once, leaving the questions in flight
unrecorded.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from tqdm import tqdm

from rageval_core.config import RunConfig
from rageval_core.engines import RAY_TOKEN_ENV, Engine, LocalEngine
from rageval_core.errors import ConfigError, ConflictError
from rageval_core.models import RunManifest
from rageval_core.redact import Redactor
from rageval_core.runs.folder import MAX_NAMED, NAMED_TOTALS, RunFolder, run_totals
from rageval_core.runs.journal import Journal
from rageval_core.runs.layout import (
    Shard,
    default_run_id,
    iso,
    positive_env_seconds,
    utc_now,
    validate_run_id,
)
from rageval_core.runs.lease import Lease, stale_after_s

# After the first Ctrl-C, how long the questions in flight may take to finish.
GRACE_ENV = "RAGEVAL_INTERRUPT_GRACE_S"
GRACE_S = 10.0


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


def git_commit(cwd: Path | None = None) -> str | None:
    """HEAD of the git repository around `cwd`, or None (not a repo, no git, any failure)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


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
        self.redactor = Redactor.for_env(
            [*config.secret_env_names(), RAY_TOKEN_ENV], extra=config.secret_values()
        )
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
        finishes. Ctrl-C: stop submitting, record what is in flight and finishes within the
        grace (`GRACE_S`), then re-raise. A second
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
                # Queued ones never start; a cancelled future is not "done" for `wait`.
                running = [f for f in pending if not f.cancel()]
                grace = positive_env_seconds(GRACE_ENV, GRACE_S)
                self.log(
                    f"interrupted: finishing the questions in flight for up to {grace:g} s "
                    "(Ctrl-C again to abandon them now)"
                )
                finished, late = wait(running, timeout=grace)
                record(finished)
                if late:
                    # A hung pipeline or judge must not hold the run: leave them behind.
                    abandoned = True
                    self.log(
                        f"abandoned {len(late)} question(s) still running after {grace:g} s; "
                        "they are not recorded (--resume asks them again)"
                    )
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
        for key in ("cost_usd", "judge_cost_usd"):  # unknown in every shard: unknown, not 0
            known = any(p.get(key) is not None for p in parts)
            summed[key] = round(summed[key], 8) if known else None
        return summed
