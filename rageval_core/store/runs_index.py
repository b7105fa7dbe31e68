"""The runs index (`runs_index.parquet`): what `inspect_run` found in each cached run's
folder — its manifest, file names and problems — under the fingerprint it was cached with,
so a restarted process rebuilds its `RunInfo`s without opening every manifest again. It is
an optimisation: a row that does not parse, or a file that cannot be written, only costs
reading that folder again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rageval_core.errors import RagevalError
from rageval_core.models import DatasetRef, JudgeRef, RunManifest
from rageval_core.runs.atomic import write_parquet
from rageval_core.runs.layout import MANIFEST, RUNS_INDEX
from rageval_core.runs.manifest import manifest_from_dict, manifest_to_dict
from rageval_core.runs.reading import RunInfo
from rageval_core.store.schemas import INDEX_SCHEMA, is_current, versioned


class RunsIndex:
    """The runs index under one cache folder."""

    def __init__(self, cache_dir: Path):
        self.cache_dir = cache_dir

    def file(self) -> Path:
        return self.cache_dir / RUNS_INDEX

    def _read(self) -> pa.Table:
        """The runs index as written, or an empty one (missing, damaged, older version)."""
        try:
            t = pq.read_table(self.file())
            if is_current(t):
                return t.cast(INDEX_SCHEMA)
        except (OSError, pa.ArrowException, ValueError, KeyError):
            pass
        return INDEX_SCHEMA.empty_table()

    def run_infos(self, root: str) -> dict[str, tuple[str, RunInfo]]:
        """(fingerprint, RunInfo) of every run in the runs index, its folder under `root`:
        what `inspect_run` found there when the run was cached. A row that does not parse
        is left out (that folder is then inspected)."""
        t = self._read()
        out = {}
        # column by column: a row dict per run cost a third of a 10,000-run restart
        for rid, fp, status, text, parquet, journal, summary, problems in zip(
            *(t.column(c).to_pylist() for c in INDEX_SCHEMA.names), strict=True
        ):
            path = f"{root}/{rid}"
            try:
                # validated when cached: its problems then are kept, not found again
                manifest = _indexed_manifest(json.loads(text), f"{path}/{MANIFEST}")
            except (ValueError, TypeError, KeyError, RecursionError, RagevalError):
                continue
            info = RunInfo(
                run_id=rid,
                path=path,
                status=status,
                manifest=manifest,
                parquet_files=[f"{path}/{n}" for n in parquet],
                journal_files=[f"{path}/{n}" for n in journal],
                summary_file=f"{path}/{summary}" if summary else None,
                problems=list(problems),
            )
            out[rid] = (fp, info)
        return out

    def write(
        self, summary: pa.Table, finished: dict[str, tuple[RunInfo, str]], added: set[str]
    ) -> None:
        """The runs index of the runs in `summary`: the rows already there for runs not
        re-read (`added`), a new row for the others. An optimisation: failures ignored."""

        def name(p: str) -> str:
            return p.rsplit("/", 1)[-1]

        old = self._read()
        keys = pc.binary_join_element_wise(summary["run_id"], summary["fingerprint"], "\0")
        old_keys = pc.binary_join_element_wise(old["run_id"], old["fingerprint"], "\0")
        old = old.filter(
            pc.and_(
                pc.is_in(old_keys, keys),
                pc.invert(pc.is_in(old["run_id"], pa.array(sorted(added), pa.string()))),
            )
        )
        have = set(old.column("run_id").to_pylist())
        rows = []
        for rid, fp in zip(
            summary.column("run_id").to_pylist(),
            summary.column("fingerprint").to_pylist(),
            strict=True,
        ):
            info, seen = finished.get(rid, (None, None))
            if rid in have or info is None or info.manifest is None or seen != fp:
                continue
            rows.append(
                {
                    "run_id": rid,
                    "fingerprint": fp,
                    "status": info.status,
                    "manifest": json.dumps(manifest_to_dict(info.manifest), default=str),
                    "parquet_files": [name(p) for p in info.parquet_files],
                    "journal_files": [name(p) for p in info.journal_files],
                    "summary_file": name(info.summary_file) if info.summary_file else None,
                    "problems": list(info.problems),
                }
            )
        table = pa.concat_tables([old, pa.Table.from_pylist(rows, schema=INDEX_SCHEMA)])
        try:
            write_parquet(self.file(), versioned(table))
        except OSError:
            pass


def _indexed_manifest(d: dict[str, Any], source: str) -> RunManifest:
    """The manifest `RunsIndex.write` stored (`manifest_to_dict` of one validated when its
    run was cached), rebuilt without validating it again: that was a quarter of a
    10,000-run restart. Declared metrics are specs to parse (and a judge's metrics a list to
    make a tuple), so such a manifest is parsed in full; a row whose keys are not the
    manifest's fields raises TypeError (its folder is read)."""
    if "metrics" in d or "metrics" in d["judge"]:
        return manifest_from_dict(d, source, [])
    return RunManifest(
        **{
            **d,
            "dataset": DatasetRef(**d["dataset"]),
            "judge": JudgeRef(**d["judge"]),
            "tags": tuple(d["tags"]),
        }
    )
