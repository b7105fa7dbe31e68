"""Judge a stored run's answers again with another judge (`rageval rescore`, docs/judges.md).

No pipeline is called: each question's answer, retrieved chunks (ids, texts, scores) and
reference come from the source run's rows. The new judge decides what a judge decides —
claims, faithfulness, answer correctness, refusal, its cost and error, and the failure type
that follows, and the reference-free verdicts (`scoring.judge_columns`, the rule every
door's rows follow, exactly as a run with that judge would have). All
else is the source's: retrieval metrics, latency, tokens, pipeline cost, declared scores
and pipeline errors (a question whose pipeline failed has nothing to judge).

The new run's manifest keeps the source's dataset (human labels join on its sha256) and
config, with the judge replaced, and names its `source_run` and its judge (`JudgeRef`).
Writing it is a `runs.job.RunJob`'s, as for `rageval run`: the lease, the journal, `--resume`, the
bounded pool with its progress bar and Ctrl-C, redaction, and the upload when the results
location is object storage behave as for `rageval run`; the judge's reply cache is the
user's, so a second rescore with the same judge makes no calls, into any location.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from rageval_core.catalogue import DEFAULT_KS
from rageval_core.config import DEFAULT_CONCURRENCY, PipelineSpec, RunConfig
from rageval_core.errors import ConfigError, ResultsError, shown
from rageval_core.job import RunJob, RunOptions, RunResult, git_commit
from rageval_core.judges import Judge, judge_problems, make_judge
from rageval_core.models import JudgeInput, RetrievedChunk, RunManifest
from rageval_core.origin import RunOrigin
from rageval_core.redact import Redactor
from rageval_core.runs.folder import RunFolder
from rageval_core.runs.layout import filesystem, iso
from rageval_core.runs.manifest import SCHEMA_VERSION, config_name
from rageval_core.runs.reading import read_run_rows
from rageval_core.scoring import judge_answer, judge_columns
from rageval_core.thresholds import FailureThresholds
from rageval_core.userfiles import load_yaml


def load_judge_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The judge mapping of JUDGE.yaml: the file itself (`kind: openai`, …) or the
    `judge:` mapping of a run config. Checked here, so a bad file is one ConfigError
    naming it before any run is read or written."""
    raw = load_yaml(path, "judge config", ConfigError)
    if isinstance(raw, Mapping) and isinstance(raw.get("judge"), Mapping):
        raw = raw["judge"]
    if not isinstance(raw, Mapping):
        found = "an empty file" if raw is None else f"a {type(raw).__name__}"
        raise ConfigError(
            f"{path}: a judge config is a mapping (kind: offline | openai, …), found {found}"
        )
    if problems := judge_problems(raw):
        raise ConfigError(f"{path}: invalid judge config", problems)
    return dict(raw)


@dataclass(frozen=True)
class Source:
    """The run a rescore reads: its manifest and rows by question id, in its order."""

    run_id: str
    manifest: RunManifest
    rows: Mapping[str, Mapping[str, Any]]
    ks: tuple[int, ...]


def read_source(location: str, run_id: str) -> Source:
    """The complete run `run_id` of `location`, with every answer a judge needs.

    A run that is unknown, not complete, or that kept no answers or chunk texts (some
    imports) cannot be rescored: a ConfigError naming the run and the first question that
    shows why. A damaged run stays a ResultsError (the files, not the argument, are wrong).
    """
    from rageval_core.query import ResultsStore, argument_run
    from rageval_core.runs.source import extra_ks

    with ResultsStore(location, read_only=True, refresh=False) as store:
        info = argument_run(store, run_id)
    if info.status != "complete" or info.manifest is None:
        raise ConfigError(
            f"run {run_id} is {info.status}, not complete: rescore a finished run "
            "(or finish this one with --resume first)"
        )
    table, problems = read_run_rows(info, filesystem(location)[0])
    if problems:
        raise ResultsError(f"run {run_id} cannot be read", problems)
    rows = {r["question_id"]: r for r in table.to_pylist()}
    for qid, row in rows.items():
        if why := _unjudgeable(row):
            raise ConfigError(
                f"run {run_id} cannot be rescored: question {shown(qid, 80)} {why}; "
                "rescore needs the questions, answers and retrieved chunks' texts a run kept"
            )
    ks = tuple(sorted(set(DEFAULT_KS) | extra_ks(table.column_names)))
    return Source(run_id, info.manifest, rows, ks)


def _unjudgeable(row: Mapping[str, Any]) -> str | None:
    """Why a judge cannot see this row again, or None. A pipeline error needs no judge."""
    if row.get("error"):
        return None
    if not row.get("question"):
        return "has no question text"
    if row.get("answer") is None:
        return "has no answer"
    ids, texts = row.get("retrieved_ids") or [], row.get("retrieved_texts") or []
    if len(ids) != len(texts):  # a writer's texts whose ids are unknown
        return "has retrieved chunks without ids"
    if ids and not any(texts):
        return "has no texts for its retrieved chunks"
    if not ids and row.get("answerable") is not False and row.get("mrr") is None:
        # Nothing retrieved scores 0 on an answerable question; NULL means not known, and
        # a judge shown no chunks would call every claim unsupported.
        return "kept no retrieved chunks (its retrieval is unknown)"
    return None


def rescore_row(
    judge: Judge,
    redactor: Redactor,
    thresholds: FailureThresholds,
    run_id: str,
    row: Mapping[str, Any],
) -> dict[str, Any]:
    """`row` of the source run judged again by `judge`, as a row of run `run_id`."""
    new = {**row, "run_id": run_id}
    if row.get("error"):
        return redactor.row(new)
    ids = row.get("retrieved_ids") or []
    scores = list(row.get("retrieved_scores") or []) + [None] * len(ids)
    # the places the source run found, so chunks adjacent in a document read as one text
    places = [row.get(k) or [] for k in ("retrieved_doc_ids", "retrieved_starts", "retrieved_ends")]
    places = [list(p) + [None] * len(ids) for p in places]
    chunks = tuple(
        RetrievedChunk(cid, redactor.text(text), score, doc, start, end)
        for cid, text, score, doc, start, end in zip(
            ids, row["retrieved_texts"], scores, *places, strict=False
        )
    )
    inp = JudgeInput(
        row["question"], redactor.text(row["answer"]), chunks, row.get("reference_answer")
    )
    # Gold unknown (an import without ids) or none given (no retrieval gold): the
    # retrieval steps are passed over, as the writer does, rather than read as a miss.
    gold = row.get("answerable") is not None and bool(row.get("gold_ids"))
    ranks = list(row.get("gold_ranks") or []) if gold else None
    # NULL answerable (a reference-free question, or an import's unknown gold) stays unknown
    judged = judge_answer(judge, inp)
    texts = [c.text for c in chunks]
    new.update(
        judge_columns(judged, inp.answer, None, row.get("answerable"), ranks, thresholds, texts)
    )
    return redactor.row(new)


def _source_config(source: Source, judge: Mapping[str, Any], judge_path: Path) -> RunConfig:
    """The source run's config as a RunConfig with the new judge: what the runner needs
    (name, ks, declared metrics, thresholds, concurrency, secrets to mask). Pipeline and
    prices are only recorded, never used: nothing is asked and no pipeline cost changes."""
    c = source.manifest.config
    pipeline = c.get("pipeline") if isinstance(c.get("pipeline"), Mapping) else {}
    params = pipeline.get("params")
    concurrency = c.get("concurrency")
    try:
        thresholds = FailureThresholds.recorded(c)
    except ConfigError as exc:
        raise ResultsError(
            f"run {source.run_id}: its manifest's failure_thresholds are invalid", exc.problems
        ) from None
    return RunConfig(
        name=config_name(source.manifest) or source.run_id,
        path=judge_path,
        dataset=source.manifest.dataset.path,
        pipeline=PipelineSpec(
            str(pipeline.get("factory") or ""), dict(params) if isinstance(params, Mapping) else {}
        ),
        judge=dict(judge),
        concurrency=concurrency
        if isinstance(concurrency, int) and not isinstance(concurrency, bool) and concurrency >= 1
        else DEFAULT_CONCURRENCY,
        tags=source.manifest.tags,
        ks=source.ks,
        failure_thresholds=thresholds,
        metrics=source.manifest.metrics,
    )


class Rescorer:
    """One rescore: stored answers judged again, written by a `RunJob`."""

    def __init__(
        self, source: Source, judge: Mapping[str, Any], judge_path: Path, options: RunOptions
    ):
        self.config = _source_config(source, judge, judge_path)
        self.options = options
        self.source = source
        self.job = RunJob("rescore", self.config, options)

    def _what(self, run_id: str) -> tuple[str, str]:
        return (
            f"rescore {run_id}",
            f"rageval rescore {self.source.run_id} --judge {self.config.path} --resume {run_id}",
        )

    def _manifest(self, run_id: str, judge: Judge) -> RunManifest:
        """The source's manifest for a new run: the judge replaced, the source named."""
        src, ref = self.source.manifest, judge.describe()
        origin = RunOrigin(
            "rescore", " ".join(filter(None, (ref.kind, ref.model))), source_run=src.run_id
        )
        config = {
            **src.config,
            "judge": dict(self.config.judge),
            "concurrency": self.job.concurrency,
            "origin": origin.to_dict(),  # the Runs table and Compare show where it came from
        }
        return RunManifest(
            run_id=run_id,
            status="running",
            created_at=iso(self.job.now()),
            config=self.job.redactor.value(config),
            dataset=src.dataset,
            judge=ref,
            schema_version=SCHEMA_VERSION,
            git_commit=git_commit(Path.cwd()),
            tags=src.tags,
            metrics=src.metrics,
            source_run=self.source.run_id,
        )

    def run(self) -> RunResult:
        if self.options.shard:
            raise ConfigError("rescore does not take --shard")
        run_id = self.job.run_id(f"{self.config.name}-rescore")
        folder = RunFolder(self.options.results, run_id)
        judge = make_judge(self.config.judge)
        try:
            with self.job.sole_writer(folder, *self._what(run_id)):
                thresholds = self.config.failure_thresholds
                work = partial(rescore_row, judge, self.job.redactor, thresholds, run_id)
                return self.job.write(folder, self._manifest(run_id, judge), self.source.rows, work)
        finally:
            judge.close()
