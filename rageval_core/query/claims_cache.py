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
from collections.abc import Iterable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from rageval_core.labels.model import claim_key
from rageval_core.query import sql
from rageval_core.query.source import open_run
from rageval_core.query.store import ResultsStore
from rageval_core.results import RunInfo, write_parquet

CLAIMS_VERSION = 1
CLAIMS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
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


def claims_rows(run_id: str, rows: pa.Table) -> pa.Table:
    """The narrow claims table of one run from its rows (`_READ` columns): the flattening
    and the claim keys happen in Arrow, one `claim_key` call per distinct text."""
    n = rows.num_rows
    qids = rows.column("question_id").combine_chunks()
    claims = rows.column("claims").combine_chunks()
    parents = pc.list_parent_indices(claims)
    flat = pc.list_flatten(claims)
    texts = flat.field("text") if len(flat) else pa.array([], pa.string())
    verdicts = flat.field("verdict") if len(flat) else pa.array([], pa.string())
    distinct = pc.unique(texts)
    keys = pa.array([claim_key(t) for t in distinct.to_pylist()], pa.string())
    claim_keys = keys.take(pc.index_in(texts, value_set=distinct))
    m = len(flat)
    judge_failed = pc.is_valid(rows.column("judge_error")).combine_chunks()
    per_question = pa.table(
        {
            "run_id": pa.array([run_id] * n, pa.string()),
            "question_id": qids,
            "claim": pa.nulls(n, pa.string()),
            "claim_key": pa.nulls(n, pa.string()),
            "verdict": pa.nulls(n, pa.string()),
            "faithfulness": rows.column("faithfulness").combine_chunks(),
            "judge_failed": judge_failed,
            "answer_correctness": rows.column("answer_correctness").combine_chunks(),
            "answer_key": rows.column("answer_key").combine_chunks(),
        },
        schema=CLAIMS_SCHEMA,
    )
    per_claim = pa.table(
        {
            "run_id": pa.array([run_id] * m, pa.string()),
            "question_id": qids.take(parents),
            "claim": texts,
            "claim_key": claim_keys,
            "verdict": verdicts,
            "faithfulness": pa.nulls(m, pa.float64()),
            "judge_failed": judge_failed.take(parents),
            "answer_correctness": pa.nulls(m, pa.float64()),
            "answer_key": pa.nulls(m, pa.string()),
        },
        schema=CLAIMS_SCHEMA,
    )
    return pa.concat_tables([per_question, per_claim])


class ClaimsCache:
    """The claims files of one store, under its cache folder (`store.cache_dir/claims`)."""

    def __init__(self, store: ResultsStore):
        self.store = store
        self.folder = Path(store.cache_dir) / "claims"

    def _path(self, run_id: str, fingerprint: str) -> Path:
        return self.folder / f"{run_id}-{fingerprint}-v{CLAIMS_VERSION}.parquet"

    def _read_run(self, cur: duckdb.DuckDBPyConnection, info: RunInfo) -> pa.Table:
        s = self.store
        with open_run(cur, info, fs=s.fs, to_url=s.to_url, columns=_READ) as src:
            try:
                rows = cur.sql(sql.CLAIMS_READ.format(src=src.sql), params=src.params)
                table = rows.to_arrow_table()
            except duckdb.Error:
                return CLAIMS_SCHEMA.empty_table()
        return claims_rows(info.run_id, table)

    def sources(
        self, cur: duckdb.DuckDBPyConnection, runs: Iterable[RunInfo]
    ) -> tuple[list[str], pa.Table]:
        """(cached files, live rows) holding the claims of `runs`; files of finished runs
        are built when missing or stale (their fingerprint changed)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        have = self._existing()
        paths: list[str] = []
        live: list[pa.Table] = [CLAIMS_SCHEMA.empty_table()]
        for info in runs:
            if info.status == "running":
                live.append(self._read_run(cur, info))
                continue
            fp = self.store.run_fingerprint(info)
            path = self._path(info.run_id, fp)
            if path.name not in have.get(info.run_id, ()):
                write_parquet(path, self._read_run(cur, info))
                for old in have.get(info.run_id, ()):
                    (self.folder / old).unlink(missing_ok=True)
            paths.append(str(path))
        return paths, pa.concat_tables(live)

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
