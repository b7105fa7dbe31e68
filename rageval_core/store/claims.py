"""The narrow claims table the label views join on: one small Parquet file per run.

A run's `claims` column is a list of structs with evidence and reasons; unnesting it for
every run on every view cost a minute at 1,000 runs. Here each finished run is unnested
once per file fingerprint into `<cache>/claims/<run id>-<fingerprint>.parquet` with only
what a comparison with human labels needs: per claim (question id, claim text, its
`claim_key`, the judge's verdict), and per question one row with no claim (faithfulness,
whether the judge failed, answer correctness, a hash of the answer: a question label is
about an answer, so it follows that answer into every run that gave it, a rescored
copy included). A running run is unnested in memory at each
call and never cached. A run whose rows cannot be read contributes no rows; the store
reports why (its problems). This module never writes into the results location.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rageval_core.labels.model import claim_key
from rageval_core.runs.atomic import write_parquet
from rageval_core.runs.reading import RunInfo
from rageval_core.runs.source import open_run
from rageval_core.store import sql
from rageval_core.store.results import Progress, ResultsStore

CLAIMS_VERSION = 2  # 2: the dataset version in every row
OUR_SQL = (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException)
"""Errors of the SQL written here, not of the files `open_run` projected: bugs, raised.
A batch read fails with these on files that differ, and is retried run by run."""
BATCH_RUNS = 128  # runs read by one query when their files allow it (64: 10% slower)
CLAIMS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("dataset_sha256", pa.string()),  # the run's dataset version: labels join on it
        ("question_id", pa.string()),
        ("claim", pa.string()),  # NULL on the question's own row
        ("claim_key", pa.string()),
        ("verdict", pa.string()),
        ("faithfulness", pa.float64()),
        ("judge_failed", pa.bool_()),
        ("answer_correctness", pa.float64()),
        ("answer_key", pa.string()),  # md5 of the answer: question labels follow the answer
    ]
)
_READ = ("question_id", "answer", "claims", "faithfulness", "judge_error", "answer_correctness")
_FILE = re.compile(r"^(?P<run>.+)-(?P<fp>[0-9a-f]{1,64})-v(?P<v>\d+)\.parquet$")


def claims_rows(rows: pa.Table) -> pa.Table:
    """The narrow claims table of runs' rows (run_id, dataset_sha256, question_id, claims
    [text, verdict],
    faithfulness, judge_failed, answer_correctness, answer_key): flattened in Arrow, one
    `claim_key` call per distinct claim text."""
    rows = rows.combine_chunks()
    n = rows.num_rows
    col = {
        name: rows.column(name).chunk(0) if n else rows.column(name) for name in rows.column_names
    }
    claims = col["claims"]
    parents = pc.list_parent_indices(claims)
    flat = pc.list_flatten(claims)
    texts = flat.field("text") if len(flat) else pa.array([], pa.string())
    keep = pc.is_valid(texts)  # a claim without text has nothing to match on
    parents, texts = parents.filter(keep), texts.filter(keep)
    verdicts = (flat.field("verdict") if len(flat) else pa.array([], pa.string())).filter(keep)
    distinct = pc.unique(texts)
    keys = pa.array([claim_key(t) for t in distinct.to_pylist()], pa.string())
    m = len(texts)
    per_question = pa.table(
        {
            "run_id": col["run_id"],
            "dataset_sha256": col["dataset_sha256"],
            "question_id": col["question_id"],
            "claim": pa.nulls(n, pa.string()),
            "claim_key": pa.nulls(n, pa.string()),
            "verdict": pa.nulls(n, pa.string()),
            "faithfulness": col["faithfulness"],
            "judge_failed": col["judge_failed"],
            "answer_correctness": col["answer_correctness"],
            "answer_key": col["answer_key"],
        },
        schema=CLAIMS_SCHEMA,
    )
    per_claim = pa.table(
        {
            "run_id": col["run_id"].take(parents),
            "dataset_sha256": col["dataset_sha256"].take(parents),
            "question_id": col["question_id"].take(parents),
            "claim": texts,
            "claim_key": keys.take(pc.index_in(texts, value_set=distinct)),
            "verdict": verdicts,
            "faithfulness": pa.nulls(m, pa.float64()),
            "judge_failed": col["judge_failed"].take(parents),
            "answer_correctness": pa.nulls(m, pa.float64()),
            "answer_key": pa.nulls(m, pa.string()),
        },
        schema=CLAIMS_SCHEMA,
    )
    return pa.concat_tables([per_question, per_claim])


@contextmanager
def registered(cur: duckdb.DuckDBPyConnection, **tables: Any) -> Iterator[dict[str, str]]:
    """Register Arrow tables under unique names on this cursor only (sessions querying at
    once never see each other's); yield the names, unregister on the way out."""
    names = {k: f"{k}_{uuid.uuid4().hex}" for k in tables}
    for k, t in tables.items():
        cur.register(names[k], t)
    try:
        yield names
    finally:
        for name in names.values():
            cur.unregister(name)


def _by_run(table: pa.Table) -> dict[str, pa.Table]:
    """`table` split by run id: one sort, then slices (a filter per run read it all again)."""
    codes = pc.dictionary_encode(table.column("run_id")).combine_chunks()
    order = np.argsort(codes.indices.to_numpy(zero_copy_only=False), kind="stable")
    ordered = table.take(pa.array(order))
    counts = np.bincount(
        codes.indices.to_numpy(zero_copy_only=False), minlength=len(codes.dictionary)
    )
    starts = np.concatenate([[0], np.cumsum(counts)])
    return {
        run_id: ordered.slice(int(starts[i]), int(counts[i]))
        for i, run_id in enumerate(codes.dictionary.to_pylist())
    }


def _sha(info: RunInfo) -> str | None:
    return info.manifest.dataset.sha256 if info.manifest else None


def _parquet_only(info: RunInfo) -> bool:
    """True when the run's Parquet files are all of its rows (no shard only journalled)."""
    stems = {p.rsplit("/", 1)[-1].rsplit(".", 1)[0] for p in info.parquet_files}
    journals = {j.rsplit("/", 1)[-1].rsplit(".", 1)[0] for j in info.journal_files}
    return bool(stems) and journals <= stems


class ClaimsCache:
    """The claims files of one store, under its cache folder (`store.cache_dir/claims`)."""

    def __init__(self, store: ResultsStore):
        self.store = store
        self.folder = Path(store.cache_dir) / "claims"

    def _path(self, run_id: str, fingerprint: str) -> Path:
        return self.folder / f"{run_id}-{fingerprint}-v{CLAIMS_VERSION}.parquet"

    def _read_run(self, cur: duckdb.DuckDBPyConnection, info: RunInfo) -> pa.Table:
        """One run through `open_run` (journals, missing columns, damaged shards)."""
        s = self.store
        with open_run(cur, info, fs=s.fs, to_url=s.to_url, columns=_READ) as src:
            q = sql.CLAIMS_READ.format(src=src.sql)
            try:
                params = {**src.params, "run_id": info.run_id, "sha": _sha(info)}
                rows = cur.sql(q, params=params)
                table = rows.to_arrow_table()
            except OUR_SQL:
                raise
            except duckdb.Error:  # a damaged file: the store's refresh reports it
                return CLAIMS_SCHEMA.empty_table()
        return claims_rows(table)

    def _read_batch(self, cur: duckdb.DuckDBPyConnection, batch: list[RunInfo]) -> pa.Table:
        """Runs whose Parquet files are all their rows, in one query (a query per run cost
        more than its reading); duckdb.Error when their files do not fit one projection."""
        paths, owners, shas = [], [], []
        for info in batch:
            for p in info.parquet_files:
                paths.append(self.store.to_url(p))
                owners.append(info.run_id)
                shas.append(_sha(info))
        files = pa.table({"filename": paths, "owner": owners, "sha": shas})
        with registered(cur, files=files) as t:
            q = sql.CLAIMS_BATCH.format(files=t["files"])
            return claims_rows(cur.sql(q, params={"paths": paths}).to_arrow_table())

    def _build(
        self,
        cur: duckdb.DuckDBPyConnection,
        todo: list[tuple[RunInfo, Path]],
        progress: Progress | None = None,
    ) -> None:
        """Write the claims file of each (run, path), BATCH_RUNS runs per query where the
        files allow it, else run by run; `progress(what, done, total)` after each."""
        report = progress or (lambda what, done, total: None)
        what = "claims cache (runs)"
        done = 0
        batchable = [t for t in todo if _parquet_only(t[0])]
        single = [t for t in todo if not _parquet_only(t[0])]
        # Files are written on threads (Arrow lets go of the GIL) while the next batch is
        # read: writing took as long as reading.
        with ThreadPoolExecutor(max_workers=2) as pool:
            writes = []
            for i in range(0, len(batchable), BATCH_RUNS):
                batch = batchable[i : i + BATCH_RUNS]
                try:
                    table = self._read_batch(cur, [info for info, _ in batch])
                except (duckdb.Error, pa.ArrowException):  # files that differ: run by run
                    single += batch
                    continue
                parts = _by_run(table)
                empty = CLAIMS_SCHEMA.empty_table()
                for info, path in batch:
                    writes.append(pool.submit(write_parquet, path, parts.get(info.run_id, empty)))
                done += len(batch)
                report(what, done, len(todo))
            for info, path in single:
                writes.append(pool.submit(write_parquet, path, self._read_run(cur, info)))
                done += 1
                report(what, done, len(todo))
            for w in writes:
                w.result()  # a failed write raises here

    def build(self, progress: Progress | None = None) -> int:
        """Bring the files of every finished run of the store up to date (`rageval
        dashboard` does it before the server starts, with `progress`): the first label
        view then only checks them. How many runs have their file."""
        done = [r for r in self.store.runs() if r.status != "running"]
        with self.store.cursor() as cur:
            return len(self.sources(cur, done, progress)[0])

    def sources(
        self,
        cur: duckdb.DuckDBPyConnection,
        runs: Iterable[RunInfo],
        progress: Progress | None = None,
    ) -> tuple[list[str], pa.Table]:
        """(cached files, live rows) holding the claims of `runs`; files of finished runs
        are built when missing or stale (their fingerprint changed). Files of runs the
        store no longer has (deleted folders) are removed."""
        self.folder.mkdir(parents=True, exist_ok=True)
        runs = list(runs)
        have = self._existing()
        if self.store.refreshed_at:  # a store never refreshed knows no runs: keep all
            known = {r.run_id for r in self.store.runs()} | {r.run_id for r in runs}
            for run_id in set(have) - known:
                for name in have.pop(run_id):
                    (self.folder / name).unlink(missing_ok=True)
        paths: list[str] = []
        rows: list[pa.Table] = [CLAIMS_SCHEMA.empty_table()]
        todo: list[tuple[RunInfo, Path]] = []
        for info in runs:
            if info.status == "running":
                rows.append(self._read_run(cur, info))
                continue
            path = self._path(info.run_id, self.store.run_fingerprint(info))
            if path.name not in have.get(info.run_id, ()):
                todo.append((info, path))
            paths.append(str(path))
        self._build(cur, todo, progress)
        for info, path in todo:
            for old in have.get(info.run_id, ()):
                if old != path.name:
                    (self.folder / old).unlink(missing_ok=True)
        return paths, pa.concat_tables(rows)

    def _existing(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        try:
            names = os.listdir(self.folder)
        except OSError:
            return found
        for name in names:
            m = _FILE.match(name)
            if m:
                found.setdefault(m.group("run"), []).append(name)
        return found
