"""Human labels joined to what the judges said of the same claims and questions.

A human's verdict on a claim is compared with the judge's verdict of the same claim text
(`claim_key`) on the same dataset version and question, in every run of that judge; a
question's pass/fail with the judge's by the rule of `labels/verdict.py`. The claims come
from the derived cache's claims table (`store/claims.py`); labels are an Arrow table
registered on the query's cursor; every join runs in DuckDB. Tallies over a join are
remembered per claims file set, so a page rerun after a save counts only the new labels.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import duckdb
import pyarrow as pa

from rageval_core.labels import HumanLabel, LabelSet
from rageval_core.labels.store import label_table
from rageval_core.labels.verdict import FAITHFUL_MIN
from rageval_core.query import _sql as sql
from rageval_core.runs.reading import RunInfo
from rageval_core.store.claims import CLAIMS_SCHEMA, ClaimsCache, registered
from rageval_core.store.results import ResultsStore


@dataclass(frozen=True)
class JudgeId:
    """A judge as runs record it: kind, model and prompt version (`JudgeRef.version`)."""

    kind: str
    model: str | None
    prompt: str | None

    def label(self) -> str:
        return " · ".join(p for p in (self.kind, self.model, self.prompt) if p)


def judge_of(info: RunInfo) -> JudgeId | None:
    m = info.manifest
    return None if m is None else JudgeId(m.judge.kind, m.judge.model, m.judge.version)


def _runs_table(runs: Sequence[RunInfo]) -> pa.Table:
    rows = []
    for info in runs:
        judge = judge_of(info)
        if judge is not None:
            rows.append(
                {
                    "run_id": info.run_id,
                    "dataset_sha256": info.manifest.dataset.sha256,  # type: ignore[union-attr]
                    "judge_kind": judge.kind,
                    "judge_model": judge.model,
                    "judge_prompt": judge.prompt,
                }
            )
    names = ("run_id", "dataset_sha256", "judge_kind", "judge_model", "judge_prompt")
    return pa.Table.from_pylist(rows, schema=pa.schema([(n, pa.string()) for n in names]))


@contextmanager
def claims_source(
    store: ResultsStore,
    cur: duckdb.DuckDBPyConnection,
    runs: Sequence[RunInfo],
    param: str = "claim_files",
) -> Iterator[tuple[str, dict[str, Any]]]:
    """FROM text over the claims of `runs` (cached files + live rows) and its params
    (`param` names the file list, so two sources can share one statement)."""
    paths, live = ClaimsCache(store).sources(cur, runs)
    with registered(cur, live_claims=live) as names:
        parts = [f"SELECT * FROM {names['live_claims']}"]
        params: dict[str, Any] = {}
        if paths:
            parts.insert(0, f"SELECT * FROM read_parquet(${param})")
            params[param] = paths
        yield "(" + " UNION ALL BY NAME ".join(parts) + ")", params


@dataclass
class Joined:
    """The claims rows of one set of claims files that labels met so far (`covered`: their
    keys): what a save's rerun reuses, scanning the files only for keys it has not seen."""

    covered: set[tuple[str, str, str | None]]
    rows: pa.Table
    totals: dict[str, int] | None = None  # judged claims per run (RUN_CLAIM_TOTALS)


JOINED_KEPT = 4  # claims file sets remembered (a new or changed run makes a new set)
_joined: OrderedDict[tuple[str, ...], Joined] = OrderedDict()
_joined_lock = threading.Lock()


def key_of(lab: HumanLabel) -> tuple[str, str, str | None]:
    """What a label meets claims rows on (`KEY`)."""
    return (lab.dataset_sha256, lab.question_id, lab.claim_key)


def _need(labels: Iterable[HumanLabel]) -> set[tuple[str, str, str | None]]:
    return {key_of(lab) for lab in labels}


@contextmanager
def label_rows(
    cur: duckdb.DuckDBPyConnection,
    paths: list[str],
    live: pa.Table,
    labels: Iterable[HumanLabel],
    totals: bool = False,
) -> Iterator[tuple[str, dict[str, int] | None]]:
    """FROM text over the claims rows (cached files `paths`, `live` rows of running runs)
    that `labels` can meet (the files read once per new label key, live rows each time),
    and the judged claims per run when `totals`. Joins over it give what they give over
    every claims row, for these labels and any met before."""
    need = _need(labels)
    with _joined_lock:
        key = tuple(sorted(paths))
        memo = _joined.pop(key, None) or Joined(set(), CLAIMS_SCHEMA.empty_table())
        _joined[key] = memo
        while len(_joined) > JOINED_KEPT:
            _joined.popitem(last=False)
        missing = need - memo.covered
        if missing and paths:
            cols = list(zip(*missing, strict=True))
            want = pa.table({n: pa.array(c, pa.string()) for n, c in zip(KEY, cols, strict=True)})
            with registered(cur, need=want) as t:
                q = sql.CLAIMS_FOR_KEYS.format(claims="read_parquet($paths)", need=t["need"])
                found = cur.sql(q, params={"paths": paths}).to_arrow_table()
            rows = pa.concat_tables([memo.rows, found.cast(CLAIMS_SCHEMA)])
            memo.rows = rows.combine_chunks()  # one chunk per column: joins scan it faster
        memo.covered |= missing
        if totals and memo.totals is None:
            q = sql.RUN_CLAIM_TOTALS.format(claims="read_parquet($paths)")
            memo.totals = dict(cur.execute(q, {"paths": paths}).fetchall()) if paths else {}
        rows = memo.rows
        per_run = dict(memo.totals or {})
    if totals:
        with registered(cur, live=live) as t:
            q = sql.RUN_CLAIM_TOTALS.format(claims=t["live"])
            per_run.update(cur.execute(q).fetchall())
    with registered(cur, rows=pa.concat_tables([rows, live])) as t:
        yield t["rows"], per_run if totals else None


KEY = ("dataset_sha256", "question_id", "claim_key")


@dataclass
class Tally:
    """A view's figures over the labels it has counted (`held`, by identity: a set the
    store loads after a save holds the same objects for the labels it kept), kept per
    claims file set so that a save's rerun counts only the labels the save added or
    replaced and takes back the ones it replaced (issue 23's rule stays: a new set of
    label files is a new set of labels, only cheaper to count)."""

    kinds: ClassVar[tuple[str, ...]]  # the kinds of label the view counts
    held: dict[int, HumanLabel] = field(default_factory=dict)
    serial: int = 0  # `LabelSet.serial` of the set counted last
    kept: bool = True  # False once it met one label object twice (a set made by hand)

    def changes(self, labels: LabelSet) -> tuple[list[HumanLabel], list[HumanLabel]]:
        """(gone, new) of the kinds counted: the labels held but not in `labels`, those of
        `labels` not held; `held` becomes `labels`'. From the set's own `change` when it
        was loaded after the set counted last, else by comparing both (a full reload)."""
        if labels.serial == self.serial:
            return [], []
        change = labels.change
        if self.serial and change is not None and change.before == self.serial:
            gone = [lab for lab in change.gone if lab.kind in self.kinds]
            new = [lab for lab in change.new if lab.kind in self.kinds]
        else:
            mine = [lab for lab in labels.labels if lab.kind in self.kinds]
            now = {id(lab) for lab in mine}
            self.kept = len(now) == len(mine)
            gone = [lab for i, lab in self.held.items() if i not in now]
            new = [lab for lab in mine if id(lab) not in self.held] if self.held else mine
        for lab in gone:
            del self.held[id(lab)]
        self.held.update((id(lab), lab) for lab in new)
        self.serial = labels.serial
        return gone, new


TALLIES_KEPT = 8  # (view, claims file set, runs) remembered
_tallies: OrderedDict[tuple, Tally] = OrderedDict()


T = TypeVar("T", bound=Tally)


@contextmanager
def kept_tally(key: tuple | None, fresh: Callable[[], T]) -> Iterator[T]:
    """The tally of `key` (a fresh one when None: live rows change every call), given
    back once updated. Taken out while in use: a session updating it at the same time
    starts from a fresh one."""
    with _joined_lock:
        state = _tallies.pop(key, None) if key is not None else None
    state = state if state is not None else fresh()
    yield state  # type: ignore[misc]
    if key is not None and state.kept:  # not after an exception: a half-counted tally
        with _joined_lock:
            _tallies[key] = state
            while len(_tallies) > TALLIES_KEPT:
                _tallies.popitem(last=False)


def claims_files(
    store: ResultsStore, cur: duckdb.DuckDBPyConnection, infos: Sequence[RunInfo]
) -> tuple[list[str], pa.Table, tuple | None]:
    """(claims files, live rows, the key a tally over them is kept by: None with live rows)."""
    paths, live = ClaimsCache(store).sources(cur, infos)
    return paths, live, None if live.num_rows else tuple(sorted(paths))


JOINABLE = ("claim", "question")
"""The kinds of label the joins take: relevance labels have a None `claim_key` too, which
the joins would read as a question label."""


def known_runs(store: ResultsStore, runs: Sequence[str | RunInfo] | None) -> list[RunInfo]:
    infos = store.runs() if runs is None else [store.run(r) for r in runs]
    return [i for i in infos if i.manifest is not None and i.readable]


@dataclass(frozen=True)
class Pair:
    """A human label and one value a judge gave its claim (or answer): `runs` runs of
    the judge gave it, `run_id` is the newest of them."""

    judge: JudgeId
    label: HumanLabel
    value: str
    run_id: str
    runs: int


def label_pairs(
    store: ResultsStore,
    labels: LabelSet,
    runs: Sequence[str | RunInfo] | None = None,
    *,
    faithful_min: float = FAITHFUL_MIN,
) -> list[Pair]:
    """Every (label, judge value) pair in `runs` (default: all), claims then questions."""
    infos = known_runs(store, runs)
    if not labels.labels or not infos:
        return []
    with store.cursor() as cur:
        paths, live, _ = claims_files(store, cur, infos)
        joinable = [lab for lab in labels.labels if lab.kind in JOINABLE]
        return pairs_by_judge(cur, paths, live, infos, joinable, faithful_min, {})


def pairs_by_judge(
    cur: duckdb.DuckDBPyConnection,
    paths: list[str],
    live: pa.Table,
    infos: Sequence[RunInfo],
    labels: Sequence[HumanLabel],
    faithful_min: float,
    judges: dict[tuple, JudgeId],
) -> list[Pair]:
    """The pairs of `labels` (claim and question labels) in the claims of `infos`;
    `judges` holds one object per judge (pairs group on it cheaply)."""
    if not labels:
        return []
    out = []
    table = label_table(labels)
    with label_rows(cur, paths, live, labels) as (claims, _):
        with registered(cur, labels=table, runs=_runs_table(infos)) as t:
            for q, kind in (
                (sql.LABEL_CLAIM_PAIRS, "claim"),
                (sql.LABEL_QUESTION_PAIRS, "question"),
            ):
                if not any(lab.kind == kind for lab in labels):
                    continue  # a save of claim labels only: no scan for question pairs
                text = q.format(claims=claims, labels=t["labels"], runs=t["runs"])
                extra = {"faithful_min": float(faithful_min)} if "$faithful_min" in q else {}
                for *who, idx, value, run_id, n in cur.execute(text, extra).fetchall():
                    judge = judges.get(tuple(who)) or judges.setdefault(tuple(who), JudgeId(*who))
                    out.append(Pair(judge, labels[idx], value, run_id, n))
    return out
