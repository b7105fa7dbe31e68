"""Human labels against the judges: the Judge page's reports, the Runs/Diagnose label
coverage, the review queue and `rageval calibrate` all read these functions, so they show
the same figures (the joins: `_label_join.py`).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter

import duckdb
import numpy as np
import pyarrow as pa

from rageval_core.errors import ConfigError, ResultsError
from rageval_core.labels import QUESTION_LABELS, VERDICTS, HumanLabel, LabelSet, claim_key
from rageval_core.labels.agreement import Agreement, agreement_from_counts, kappas
from rageval_core.labels.model import RELEVANCE
from rageval_core.labels.store import label_table
from rageval_core.labels.verdict import FAITHFUL_MIN, check_faithful_min
from rageval_core.query import _sql as sql
from rageval_core.query._label_join import (
    JOINABLE,
    KEY,
    JudgeId,
    Pair,
    Tally,
    claims_files,
    claims_source,
    judge_of,
    kept_tally,
    key_of,
    known_runs,
    label_rows,
    pairs_by_judge,
)
from rageval_core.runs.reading import RunInfo
from rageval_core.runs.source import bind, reading_results
from rageval_core.runs.summary import run_thresholds
from rageval_core.store.claims import CLAIMS_SCHEMA, registered
from rageval_core.store.results import ResultsStore, gc_paused
from rageval_core.thresholds import answer_relevant


@dataclass(frozen=True)
class Disagreement:
    """A label the judge did not agree with; `run_id` is the newest run of the judge
    that judged this claim so (the link), `runs` how many did."""

    run_id: str
    question_id: str
    claim: str | None
    human: str
    judge: str
    reviewer: str
    note: str
    runs: int = 1


@dataclass(frozen=True)
class JudgeReport:
    judge: JudgeId
    runs: tuple[str, ...]  # every run of this judge
    claims: Agreement
    questions: Agreement
    disagreements: tuple[Disagreement, ...]
    unmatched: tuple[HumanLabel, ...] = ()  # labels on its datasets no run of it judged


@dataclass(frozen=True)
class RunCoverage:
    run_id: str
    claims: int  # claims the judge gave a verdict in the run
    checked: int  # of those, claims people labelled
    kappa: float | None  # human x judge on the checked claims (every reviewer's label)


@dataclass(frozen=True)
class QueueItem:
    question_id: str
    reason: str


@dataclass
class _JudgeTally(Tally):
    """What `judge_reports` counts of the labels held, per judge: pair counts (claims,
    questions), the labels with a pair, the disagreements in their order, each entry
    (order, a unique number, the disagreement) so that a save's few are placed and taken
    out by bisection."""

    kinds = JOINABLE
    judges: dict[tuple, JudgeId] = field(default_factory=dict)  # one object per judge
    pairs: dict[int, list[Pair]] = field(default_factory=dict)  # label id -> its pairs
    counts: dict[tuple[JudgeId, bool], Counter[tuple[str, str]]] = field(default_factory=dict)
    matched: dict[JudgeId, set[int]] = field(default_factory=dict)
    disagreements: dict[JudgeId, list[tuple]] = field(default_factory=dict)
    own: dict[int, list[tuple[JudgeId, tuple]]] = field(default_factory=dict)  # label id ->
    seq: Iterator[int] = field(default_factory=itertools.count)

    def take_back(self, gone: Iterable[HumanLabel]) -> None:
        for lab in gone:
            for p in self.pairs.pop(id(lab), ()):
                self.counts[(p.judge, lab.kind == "claim")][(lab.value, p.value)] -= 1
                self.matched[p.judge].discard(id(lab))
            for judge, entry in self.own.pop(id(lab), ()):
                held = self.disagreements[judge]
                del held[bisect.bisect_left(held, entry[:2])]

    def count(self, pairs: list[Pair]) -> None:
        fresh: dict[JudgeId, list[tuple]] = {}
        for p in pairs:
            lab = p.label
            self.pairs.setdefault(id(lab), []).append(p)
            key = (p.judge, lab.kind == "claim")
            self.counts.setdefault(key, Counter())[(lab.value, p.value)] += 1
            self.matched.setdefault(p.judge, set()).add(id(lab))
            if lab.value != p.value:
                d = Disagreement(
                    p.run_id,
                    lab.question_id,
                    lab.claim,
                    lab.value,
                    p.value,
                    lab.reviewer,
                    lab.note,
                    p.runs,
                )
                entry = (_disagreement_order(d), next(self.seq), d)
                self.own.setdefault(id(lab), []).append((p.judge, entry))
                fresh.setdefault(p.judge, []).append(entry)
        for judge, entries in fresh.items():
            held = self.disagreements.setdefault(judge, [])
            if len(entries) > len(held) // 8:  # many (a first count): one sort
                held.extend(entries)
                held.sort(key=lambda e: e[:2])
            else:  # a save's few: each placed (a sort of 40,000 cost 0.1 s)
                for e in entries:
                    held.insert(bisect.bisect_left(held, e[:2]), e)


def judge_reports(
    store: ResultsStore,
    labels: LabelSet,
    runs: Sequence[str | RunInfo] | None = None,
    *,
    faithful_min: float = FAITHFUL_MIN,
    n_boot: int = 1000,
) -> list[JudgeReport]:
    """One report per judge seen in `runs` (default: every run of the store), by label;
    those without a verdict on a labelled question last."""
    check_faithful_min(faithful_min)
    with gc_paused():  # 78,000 pairs and 40,000 disagreements at 50,000 labels
        return _judge_reports(store, labels, known_runs(store, runs), faithful_min, n_boot)


def _judge_reports(
    store: ResultsStore,
    labels: LabelSet,
    infos: list[RunInfo],
    faithful_min: float,
    n_boot: int,
) -> list[JudgeReport]:
    by_judge: dict[JudgeId, list[RunInfo]] = {}
    for info in infos:
        by_judge.setdefault(judge_of(info), []).append(info)  # type: ignore[arg-type]
    if not infos:
        return []
    with store.cursor() as cur:
        no_rows = ([], CLAIMS_SCHEMA.empty_table(), None)  # no labels: no claims to read
        paths, live, key = claims_files(store, cur, infos) if labels.labels else no_rows
        with kept_tally(key and ("judge", key, float(faithful_min)), _JudgeTally) as tally:
            gone, new = tally.changes(labels)
            tally.take_back(gone)
            tally.count(pairs_by_judge(cur, paths, live, infos, new, faithful_min, tally.judges))
    reports = []
    for judge, judged in sorted(by_judge.items(), key=lambda kv: kv[0].label()):
        # by identity: the tally holds the set's own label objects (hashing 50,000 labels'
        # fields cost half a second)
        matched = tally.matched.get(judge, set())
        shas = {i.manifest.dataset.sha256 for i in judged}  # type: ignore[union-attr]
        unmatched = tuple(
            lab
            for lab in labels.labels
            if lab.dataset_sha256 in shas and id(lab) not in matched and lab.kind in JOINABLE
        )
        counts = [+tally.counts.get((judge, claims), Counter()) for claims in (True, False)]
        reports.append(
            JudgeReport(
                judge=judge,
                runs=tuple(sorted(i.run_id for i in judged)),
                claims=agreement_from_counts(counts[0], VERDICTS, n_boot=n_boot),
                questions=agreement_from_counts(counts[1], QUESTION_LABELS, n_boot=n_boot),
                disagreements=tuple(map(itemgetter(2), tally.disagreements.get(judge, ()))),
                unmatched=unmatched,
            )
        )
    # judges with verdicts on labelled questions first (an importer's "none" has none)
    return sorted(reports, key=lambda r: not (r.claims.n or r.questions.n))


def _disagreement_order(d: Disagreement) -> tuple:
    return (d.question_id, d.claim is not None, d.claim or "", d.reviewer, d.judge)


@dataclass
class _CoverageTally(Tally):
    """What `run_coverage` counts of the claim labels held: how many hold each claim key,
    per run the claims they checked and the human x judge matrix."""

    kinds = ("claim",)
    keys: Counter[tuple[str, str, str | None]] = field(default_factory=Counter)
    checked: Counter[str] = field(default_factory=Counter)
    matrices: dict[str, np.ndarray] = field(default_factory=dict)

    def count(
        self,
        cur: duckdb.DuckDBPyConnection,
        claims: str,
        gone: list[HumanLabel],
        new: list[HumanLabel],
    ) -> None:
        """`gone` taken back, `new` counted: only their claims rows are queried."""
        touched = {key_of(lab) for lab in (*gone, *new)}
        before = {k for k in touched if self.keys[k] > 0}
        self.keys.subtract(key_of(lab) for lab in gone)
        self.keys.update(key_of(lab) for lab in new)
        after = {k for k in touched if self.keys[k] > 0}
        for k in touched - after:
            del self.keys[k]
        for sign, keys, labs in ((-1, before - after, gone), (1, after - before, new)):
            if keys:  # a claim key no label held before, or none holds now
                cols = list(zip(*keys, strict=True))
                table = pa.table(
                    {n: pa.array(c, pa.string()) for n, c in zip(KEY, cols, strict=True)}
                )
                with registered(cur, labels=table) as t:
                    q = sql.RUN_CLAIM_CHECKED.format(claims=claims, labels=t["labels"])
                    for run_id, n in cur.execute(q).fetchall():
                        self.checked[run_id] += sign * n
            if labs:
                with registered(cur, labels=label_table(labs, (*KEY, "value"))) as t:
                    q = sql.RUN_CLAIM_PAIRS.format(claims=claims, labels=t["labels"])
                    for run_id, human, judge, n in cur.execute(q).fetchall():
                        m = self.matrices.get(run_id)
                        if m is None:
                            m = self.matrices[run_id] = np.zeros((len(VERDICTS),) * 2, np.int64)
                        m[_VERDICT_INDEX[human], _VERDICT_INDEX[judge]] += sign * n


_VERDICT_INDEX = {v: i for i, v in enumerate(VERDICTS)}


def run_coverage(
    store: ResultsStore, labels: LabelSet, runs: Sequence[str] | None = None
) -> dict[str, RunCoverage]:
    """Per run (of `runs`, default every run): judged claims, how many people checked,
    the judge's kappa on those. A table of the newest 1,000 runs names them: every run's
    claims file read took 4-5 s at 10,000 runs. With no labels at all, nothing: the
    claims counts alone say nobody checked anything, and they cost a read of every run's
    claims (a third of a restarted server's first page at 10,000 runs)."""
    infos = known_runs(store, runs) if labels.labels else []
    if not infos:
        return {}
    with store.cursor() as cur:
        paths, live, key = claims_files(store, cur, infos)
        with kept_tally(key and ("coverage", key), _CoverageTally) as tally:
            gone, new = tally.changes(labels)
            rows = label_rows(cur, paths, live, gone + new, True)
            with rows as (claims, totals):
                tally.count(cur, claims, gone, new)
            checked, matrices = dict(tally.checked), dict(tally.matrices)
    shown = [r for r in (totals or {}) if r in matrices]
    # one call for every run's matrix: a call per run was 50 ms at 1,000 runs
    stacked = np.array([matrices[r] for r in shown], np.int64).reshape(
        -1, len(VERDICTS), len(VERDICTS)
    )
    of_run = dict(zip(shown, kappas(stacked).tolist(), strict=True))
    out = {}
    for run_id, n_claims in (totals or {}).items():
        kappa = of_run.get(run_id, math.nan)
        out[run_id] = RunCoverage(
            run_id, int(n_claims), int(checked.get(run_id, 0)), None if math.isnan(kappa) else kappa
        )
    return out


def judge_reasons(
    store: ResultsStore, disagreements: Sequence[Disagreement]
) -> dict[tuple[str, str, str | None], str]:
    """Why the judge gave each claim verdict a person disagreed with, from the run each
    disagreement names: (run id, question id, claim key) -> the judge's reason. One query
    per run (the claims cache holds no reasons); a run that cannot be read gives none,
    which leaves every figure as it is."""
    wanted: dict[str, set[str]] = {}
    for d in disagreements:
        if d.claim is not None:
            wanted.setdefault(d.run_id, set()).add(d.question_id)
    out: dict[tuple[str, str, str | None], str] = {}
    for run_id, question_ids in wanted.items():
        try:
            with store.cursor() as cur, store.run_source(cur, run_id) as src:
                q = sql.QUESTION_CLAIMS.format(src=src.sql)
                params = {**src.params, "question_ids": sorted(question_ids)}
                with reading_results(run_id):
                    rows = cur.execute(q, bind(q, params)).fetchall()
        except ResultsError:
            continue
        for question_id, claims in rows:
            for c in claims or ():
                if c.get("reason"):
                    out.setdefault((run_id, question_id, claim_key(c.get("text"))), c["reason"])
    return out


def review_queue(
    store: ResultsStore, run: str | RunInfo, labels: LabelSet, size: int, seed: int = 0
) -> list[QueueItem]:
    """The questions of `run` whose labels would teach the most about its judge.

    Up to a third of `size` each: claims where a run of another judge on the same dataset
    version gave another verdict ("judges disagree with run X"), then claims the judge
    marked unsupported on answers that are correct ("unsupported on a correct answer"),
    the rest a sample stratified by the question's worst verdict, strata taking turns.
    Questions anyone labelled already (on this dataset version) are left out, so the same
    call after a round proposes new ones; pass `LabelSet()` to get the round's list again.
    The order is a seeded pseudo-random draw: the same inputs, the same queue.
    """
    if size < 1:
        raise ConfigError(f"queue size must be at least 1, got {size}")
    info = store.run(run)
    judge = judge_of(info)
    if judge is None or not info.readable:
        return []
    sha = info.manifest.dataset.sha256  # type: ignore[union-attr]
    others = [
        o
        for o in known_runs(store, None)
        if o.run_id != info.run_id and judge_of(o) != judge and o.manifest.dataset.sha256 == sha  # type: ignore[union-attr]
    ]
    done = pa.table(
        {
            "question_id": sorted(
                {lab.question_id for lab in labels.labels if lab.dataset_sha256 == sha}
            )
        },
        schema=pa.schema([("question_id", pa.string())]),
    )
    with store.cursor() as cur:
        with (
            claims_source(store, cur, [info]) as (mine, mine_params),
            claims_source(store, cur, others, "other_files") as (theirs, their_params),
        ):
            with registered(cur, done=done) as t:
                q = sql.REVIEW_CANDIDATES.format(mine=mine, others=theirs, done=t["done"])
                params = {
                    **mine_params,
                    **their_params,
                    "correct_min": run_thresholds(info)[0].correctness_min,
                    "seed": int(seed),
                }
                rows = cur.execute(q, params).fetchall()
    return _fill_queue(rows, size)


_WORST = ("supported", "unsupported", "contradicted")  # REVIEW_CANDIDATES' `worst` 0, 1, 2


def _fill_queue(rows: list[tuple], size: int) -> list[QueueItem]:
    """Pick from candidate rows (question_id, worst, flagged_correct, other run), in
    their (seeded) order: up to a third each of disagreements and flagged correct
    answers, then the strata take turns, worst verdict first."""
    share = math.ceil(size / 3)
    picked: dict[str, str] = {}

    def take(reason_of: Callable[[int, bool, str | None], str | None], limit: int) -> None:
        for qid, worst, flagged, other in rows:
            if len(picked) >= size or limit <= 0:
                return
            reason = reason_of(worst, flagged, other)
            if reason and qid not in picked:
                picked[qid] = reason
                limit -= 1

    take(lambda w, f, o: o and f"judges disagree with run {o}", share)
    take(lambda w, f, o: "unsupported on a correct answer" if f else None, share)
    strata: dict[int, list[str]] = {}
    for qid, worst, _, _ in rows:
        if qid not in picked:
            strata.setdefault(worst, []).append(qid)
    turns = [(w, strata[w]) for w in sorted(strata, reverse=True)]
    while len(picked) < size and any(qs for _, qs in turns):
        for worst, qs in turns:
            if qs and len(picked) < size:
                picked[qs.pop(0)] = f"stratified: {_WORST[worst]}"
    return [QueueItem(q, r) for q, r in picked.items()]


RELEVANCE_METRICS: tuple[str, str] = ("chunk relevance", "answer relevancy")


def relevance_agreement(
    store: ResultsStore,
    labels: LabelSet,
    runs: Sequence[str | RunInfo],
    *,
    n_boot: int = 1000,
) -> dict[str, Agreement]:
    """Per metric of `RELEVANCE_METRICS`, people's relevance labels against the judge of
    `runs` (one judge's runs): a chunk label meets the row's `chunk_verdicts[].relevant`
    of that chunk id, an answer label whether the row's `answer_relevancy` reads as relevant
    (`thresholds.answer_relevant`) when the answer
    is its text (matched as claims are). Each label counts once, from the first run of
    `runs` that judged it; a run without the verdict columns gives no pairs."""
    counts: dict[str, Counter[tuple[str, str]]] = {m: Counter() for m in RELEVANCE_METRICS}
    todo = {id(lab): lab for lab in labels.labels if lab.kind in ("chunk", "answer")}
    for info in known_runs(store, runs):
        sha = info.manifest.dataset.sha256  # type: ignore[union-attr]
        mine = [lab for lab in todo.values() if lab.dataset_sha256 == sha]
        if not mine:
            continue
        try:
            with store.cursor() as cur, store.run_source(cur, info) as src:
                q = sql.RELEVANCE_ROWS.format(src=src.sql)
                params = {**src.params, "question_ids": sorted({lab.question_id for lab in mine})}
                with reading_results(info.run_id):
                    rows = cur.execute(q, bind(q, params)).fetchall()
        except (ResultsError, duckdb.Error):
            continue
        judged: dict[tuple, str] = {}
        for question_id, answer, chunks, relevancy in rows:
            for c in chunks or ():
                if isinstance(c, Mapping) and isinstance(c.get("relevant"), bool):
                    judged[(question_id, ("chunk", c.get("chunk_id")))] = RELEVANCE[c["relevant"]]
            if relevancy is not None and answer:
                subject = ("answer", claim_key(answer))
                judged[(question_id, subject)] = RELEVANCE[bool(answer_relevant(relevancy))]
        for lab in mine:
            value = judged.get((lab.question_id, lab.subject))
            if value is not None:
                metric = RELEVANCE_METRICS[lab.kind == "answer"]
                counts[metric][(lab.value, value)] += 1
                del todo[id(lab)]
    return {
        m: agreement_from_counts(counts[m], RELEVANCE, n_boot=n_boot) for m in RELEVANCE_METRICS
    }
