"""Writing one run folder (or one shard of it): open or resume it under one "same run?"
rule, hold its lease, read back what it recorded, write its rows and publish it.

`rageval run`, `rageval rescore`, `RunWriter` and the importers all write through a
`RunFolder`, so every writer leaves the same files in the same order: the manifest first
(`running`), one journal line per question, then the Parquet, the summary and the
manifest as `complete` (or `failed`, resumable) last.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from rageval_core.errors import ConfigError, ConflictError, ResultsError
from rageval_core.models import DeclaredMetric, RunManifest
from rageval_core.runs.atomic import (
    atomic_write_json,
    create_json_if_absent,
    write_parquet,
    write_parquet_batches,
)
from rageval_core.runs.compact import SEQ, compacted_batches
from rageval_core.runs.journal import Journal, read_journal
from rageval_core.runs.layout import (
    MANIFEST,
    SUMMARY,
    Shard,
    is_remote,
    journal_name,
    lease_name,
    parquet_name,
    shard_status_name,
    validate_run_id,
)
from rageval_core.runs.lease import Lease, LocalLease, heartbeat, heartbeat_s
from rageval_core.runs.manifest import manifest_from_bytes, manifest_to_dict
from rageval_core.runs.reading import ShardStatus, inspect_run, shard_statuses
from rageval_core.runs.rows import question_schema, rows_to_table
from rageval_core.runs.summary import summarize_run

PART_ROWS = 2000
"""Rows per part file and per batch read back: memory a writer holds, whatever the run's size."""
_HOW_RUN = ("concurrency", "engine")  # how a run is executed, not what it evaluates


def same_run_problems(old: RunManifest, new: RunManifest) -> list[str]:
    """Why `new` is not the run `old` started (empty when it is): a resumed run, a second
    shard or a reopened writer must evaluate exactly what the first started."""
    problems = []
    if old.dataset.sha256 != new.dataset.sha256:
        problems.append("the dataset changed (sha256 differs)")
    a = {k: v for k, v in old.config.items() if k not in _HOW_RUN}
    b = {k: v for k, v in new.config.items() if k not in _HOW_RUN}
    b = json.loads(json.dumps(b, default=str))  # as the manifest file holds it
    if a != b:
        problems.append("the run config differs (pipeline, judge, prices, ks or thresholds)")
    if old.metrics != new.metrics:
        problems.append("the declared metrics differ")
    if old.source_run != new.source_run:
        problems.append(f"it rescores run {old.source_run}, not {new.source_run}")
    if old.shards != new.shards:
        problems.append(f"the run has {old.shards} shard(s), this worker says {new.shards}")
    return problems


def run_totals(rows: Iterable[Mapping[str, Any]], duration_s: float) -> dict[str, Any]:
    """A run's (or a shard's) `totals`: counts and costs of its rows, and how long it took.
    One pass over `rows`, so a run read batch by batch is never held whole. A cost is the
    sum over the rows that have one, `n_<cost>` of them: None when none has (`known_cost`)."""
    n = errors = judge_errors = cut = 0
    costs = {k: [0.0, 0] for k in ("cost_usd", "judge_cost_usd")}  # sum, questions
    retrieval = _RetrievalTotals()
    for r in rows:
        n += 1
        errors += bool(r.get("error"))
        judge_errors += bool(r.get("judge_error"))
        cut += r.get("n_chars_cut") or 0
        for k, c in costs.items():
            if r.get(k) is not None:
                c[0] += r[k]
                c[1] += 1
        retrieval.add(r)
    return {
        "n_questions": n,
        "n_errors": errors,
        "n_judge_errors": judge_errors,
        **{k: round(total, 8) if known else None for k, (total, known) in costs.items()},
        **{f"n_{k}": known for k, (_, known) in costs.items()},
        "duration_s": round(duration_s, 3),
        **retrieval.totals(),
        **({"n_chars_cut": cut} if cut else {}),  # only when the size limit cut some
    }


def known_cost(totals: Mapping[str, Any], key: str) -> float | None:
    """`totals`' cost `key` (`cost_usd`, `judge_cost_usd`), None when no question had one
    (shards' totals are summed, so an unknown cost is told by its count, `n_<key>`)."""
    value = totals.get(key)
    return None if value is None or totals.get(f"n_{key}", 1) == 0 else float(value)


MAX_NAMED = 20
"""How many unplaced chunk ids (or unknown document ids) a manifest names (all are in the rows)."""
NAMED_TOTALS = ("unplaced_ids", "unknown_doc_ids")
"""The totals that are lists of names, merged (not summed) across shards."""


class _RetrievalTotals:
    """What the run's retrieved ids and chunks did not match in the dataset (docs/metrics.md):
    `n_retrieved` distinct ids per question scored on ids, summed; `n_unknown_ids` of them
    not in the corpus (`n_unknown_span_ids` on questions scored by spans, where the
    pipeline's own chunk ids are expected); `n_unplaced` chunks not placed in a document,
    and the first `unplaced_ids`; `n_offsets_mismatched` chunks placed by text because
    their offsets did not hold it, and the first `unknown_doc_ids` with
    `n_unknown_doc_placed`, each only when there are some.
    Empty for a run whose dataset has neither corpus nor documents (nothing checked), so
    the manifests of runs made before these checks stay as they were."""

    def __init__(self) -> None:
        self.checked = self.retrieved = self.unknown = self.span_unknown = 0
        self.placed = self.unplaced = self.mismatched = self.unknown_placed = 0
        self.names: dict[str, None] = {}
        self.unknown_docs: dict[str, None] = {}

    def add(self, r: Mapping[str, Any]) -> None:
        if r.get("n_unknown_ids") is not None and r.get("gold_spans"):
            # scored on the chunks' places: ids of the pipeline's own chunks are expected
            self.span_unknown += r["n_unknown_ids"]
        elif r.get("n_unknown_ids") is not None:
            self.checked += 1
            self.retrieved += len(set(r.get("retrieved_ids") or ()))
            self.unknown += r["n_unknown_ids"]
        if r.get("n_unplaced") is not None:
            self.placed += 1
            self.unplaced += r["n_unplaced"]
            ids, starts = r.get("retrieved_ids") or (), r.get("retrieved_starts") or ()
            for cid, start in zip(ids, starts, strict=False):
                if start is None and len(self.names) < MAX_NAMED:
                    self.names[cid] = None
            self.mismatched += r.get("n_offsets_mismatched") or 0
            self.unknown_placed += r.get("n_unknown_doc_placed") or 0
            for doc in r.get("unknown_doc_ids") or ():
                if len(self.unknown_docs) < MAX_NAMED:
                    self.unknown_docs[doc] = None

    def totals(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.checked:
            out["n_retrieved"], out["n_unknown_ids"] = self.retrieved, self.unknown
        if self.span_unknown:
            out["n_unknown_span_ids"] = self.span_unknown
        if self.placed:
            out["n_unplaced"], out["unplaced_ids"] = self.unplaced, list(self.names)
        if self.mismatched:
            out["n_offsets_mismatched"] = self.mismatched
        if self.unknown_docs:
            out["unknown_doc_ids"] = list(self.unknown_docs)
            out["n_unknown_doc_placed"] = self.unknown_placed
        return out


class RunFolder:
    """Paths and writes of one local run folder (or of one shard of it)."""

    def __init__(self, location: str | Path, run_id: str, shard: Shard | None = None):
        location = str(location)
        if is_remote(location):
            raise ConfigError(f"--results {location}: runs are written to a local folder")
        self.path = Path(location) / validate_run_id(run_id)
        self.run_id = run_id
        self.shard = shard
        k = shard.index if shard else None
        self.journal = self.path / journal_name(k)
        self.parquet = self.path / parquet_name(k)
        self.manifest = self.path / MANIFEST
        self.shard_status = self.path / shard_status_name(k) if shard else None
        self.lease = LocalLease(self.path / lease_name(k))
        self.parts = self.path / f".parts{'' if k is None else f'-{k}'}"

    def cannot_write(self, exc: OSError) -> ResultsError:
        """Not a folder, read-only, disk full: a user's setup, said in one line."""
        return ResultsError(
            f"cannot write run {self.run_id} in {self.path.parent}: {exc.strerror or exc}"
        )

    # -- the manifest

    def read_manifest(self) -> RunManifest | None:
        if not self.manifest.exists():
            return None
        try:
            data = self.manifest.read_bytes()
        except OSError as exc:  # a folder, no permission: the user's files, not our bug
            raise ResultsError(f"{self.manifest}: cannot read ({exc.strerror or exc})") from exc
        return manifest_from_bytes(data, str(self.manifest))

    def write_manifest(self, manifest: RunManifest) -> None:
        atomic_write_json(self.manifest, manifest_to_dict(manifest))

    def open(self, manifest: RunManifest, *, resume: bool, exists_hint: str) -> RunManifest:
        """Create the run folder, or re-open it to resume; the manifest the run continues
        under. A run already there is refused unless resumed (`exists_hint` says what to do
        instead); a resumed run, or a shard joining a run another shard created, must be
        the same run (`same_run_problems`), else ConfigError listing what differs."""
        try:
            return self._open(manifest, resume, exists_hint)
        except OSError as exc:
            raise self.cannot_write(exc) from exc

    def _open(self, manifest: RunManifest, resume: bool, exists_hint: str) -> RunManifest:
        existing = self.read_manifest()
        if resume:
            if existing is None:
                raise ResultsError(f"cannot resume {self.run_id}: {self.manifest} not found")
            self._check_same(existing, manifest)
            reopened = replace(existing, status="running", finished_at=None)
            if self.shard_status is not None:
                self.shard_status.unlink(missing_ok=True)  # back to running
            else:
                self.write_manifest(reopened)
            return reopened
        if self.shard is not None:
            if self.journal.exists() or self.parquet.exists():
                raise ResultsError(
                    f"shard {self.shard.label} of {self.run_id} already started; "
                    f"use --resume {self.run_id}"
                )
            self.path.mkdir(parents=True, exist_ok=True)
            if not create_json_if_absent(self.manifest, manifest_to_dict(manifest)):
                # Another shard created it first: continue under its manifest.
                existing = self.read_manifest() or manifest
                self._check_same(existing, manifest)
                return existing
            return manifest
        if existing is not None:
            raise ResultsError(
                f"run {self.run_id} already exists in {self.path.parent}; {exists_hint}"
            )
        self.write_manifest(manifest)
        return manifest

    def _check_same(self, old: RunManifest, new: RunManifest) -> None:
        if problems := same_run_problems(old, new):
            raise ConfigError(f"run {old.run_id} was started with other settings", problems)

    # -- one writer

    @contextmanager
    def hold(
        self, what: str, resume: str | None = None, first: Sequence[Lease] = ()
    ) -> Iterator[list[Lease]]:
        """Hold the leases `first` (a bucket's) and this folder's for the block, renewed by
        a heartbeat; yield them (a lost one means another writer took over). ConflictError
        naming the holder when another writer has one, and `resume`, the command that
        continues the run, once it is done."""
        leases = [*first, self.lease]
        with ExitStack() as held:
            for lease in leases:
                try:
                    holder = lease.acquire()
                except OSError as exc:
                    raise self.cannot_write(exc) from exc
                if holder is not None:
                    then = f"; wait for it to finish, or stop it and run `{resume}`"
                    raise ConflictError(
                        f"{what} is already being written by {holder}{then if resume else ''}"
                    )
                held.callback(lease.release)
            held.enter_context(heartbeat(leases, heartbeat_s()))
            yield leases

    # -- rows

    def journal_writer(self) -> Journal:
        return Journal(self.journal)

    def done_rows(self, warn: Callable[[str], None]) -> list[dict[str, Any]]:
        """Rows already recorded for this shard: final Parquet, else the journal. A damaged
        journal line is passed to `warn` (its question is asked again)."""
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
        rows, problems = read_journal(str(self.journal))
        for p in problems:
            warn(f"warning: {p} (that question will be run again)")
        return rows

    def write_rows(
        self, rows: list[dict[str, Any]], ks: Iterable[int], declared: tuple[DeclaredMetric, ...]
    ) -> None:
        """The final typed Parquet of `rows`, then the journal removed (the Parquet holds
        the same rows)."""
        write_parquet(self.parquet, rows_to_table(rows, question_schema(ks, declared)))
        self.journal.unlink(missing_ok=True)

    # -- rows in batches (RunWriter): memory independent of the run's size

    def clear_parts(self) -> None:
        """Drop the part files a killed writer left (its journal holds the same rows)."""
        shutil.rmtree(self.parts, ignore_errors=True)

    def write_part(
        self, rows: Sequence[Mapping[str, Any]], first_seq: int, schema: pa.Schema
    ) -> None:
        """One batch of rows, numbered from `first_seq` in the order they were added, as
        the next part file (`.parts/`, which no reader lists: only the final Parquet and the
        journal are a run's row files)."""
        self.parts.mkdir(parents=True, exist_ok=True)
        table = rows_to_table(rows, schema).append_column(
            SEQ, pa.array(range(first_seq, first_seq + len(rows)), pa.int64())
        )
        write_parquet(self.parts / f"{first_seq:012d}.parquet", table)

    @contextmanager
    def compacted(self, schema: pa.Schema, order: Sequence[str]) -> Iterator[Iterator[pa.Table]]:
        """Tables of `schema` holding every part's rows: each question's last write, in
        `order` (the dataset's question ids), else as first added; read as they are used."""
        files = sorted(str(p) for p in self.parts.glob("*.parquet")) if self.parts.exists() else []
        if not files:
            yield iter([rows_to_table([], schema)])
            return
        con, reader = compacted_batches(files, order, str(self.parts / "spill"), PART_ROWS)
        try:
            yield (pa.Table.from_batches([b]).select(schema.names).cast(schema) for b in reader)
        finally:
            con.close()

    def write_rows_from_parts(self, schema: pa.Schema, order: Sequence[str]) -> None:
        """The final typed Parquet of every part (`compacted`), written as it is read; then
        the parts and the journal removed (the Parquet holds the same rows)."""
        with self.compacted(schema, order) as tables:
            write_parquet_batches(self.parquet, schema, tables)
        self.clear_parts()
        self.journal.unlink(missing_ok=True)

    def iter_rows(self) -> Iterator[dict[str, Any]]:
        """The final Parquet's rows, one batch in memory at a time."""
        with open(self.parquet, "rb") as fh:
            for batch in pq.ParquetFile(fh).iter_batches(batch_size=PART_ROWS):
                yield from batch.to_pylist()

    def part_ids(self) -> Iterator[str]:
        """The question ids the part files hold (a resumed writer's `done`)."""
        for p in sorted(self.parts.glob("*.parquet")) if self.parts.exists() else ():
            with open(p, "rb") as fh:
                yield from pq.read_table(fh, columns=["question_id"]).column(0).to_pylist()

    # -- the end

    def write_shard_status(self, status: str, finished_at: str, totals: Mapping[str, Any]) -> None:
        """This shard's status marker (`shard_status` is set: the folder is a shard's)."""
        atomic_write_json(
            self.shard_status, {"status": status, "finished_at": finished_at, "totals": totals}
        )

    def shard_statuses(self, count: int) -> list[ShardStatus]:
        """Every shard's status marker as this folder holds it."""
        return shard_statuses(fsspec.filesystem("file"), str(self.path), count)

    def publish(self, final: RunManifest) -> None:
        """Write a finished run's manifest, after its `summary.json` when complete: the
        manifest goes last, so a reader never sees a complete run without its summary."""
        if final.status == "complete":
            info = inspect_run(str(self.path.parent), self.run_id)
            info.status, info.manifest = "complete", final
            atomic_write_json(self.path / SUMMARY, summarize_run(info))
        self.write_manifest(final)
