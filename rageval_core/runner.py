"""Run a pipeline over a golden dataset and write the run (docs/pipeline.md), crash-safe.

`Runner` asks the pipeline each question (through its engine), has the answer judged and
scored (`scoring.py`, the one row builder every door shares) and hands the rows to a
`runs.job.RunJob`, which writes them: lease, manifest, fsynced journal, resume, the
bounded pool, Ctrl-C, Parquet, upload. Every string written goes through the run's
`Redactor` first.

The pipeline is the user's code: anything it raises for one question, or an output that
does not fit (`PipelineOutput.from_value`, the same checks for dicts and objects), becomes
that row's `error` (`Type: message`, failure type `error`) and the run goes on. Where it
is built and called is its engine's business (`engines.py`: this process, or Ray
workers); everything after the call — redaction, judge, metrics, journal — happens here,
the same for both.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from rageval_core.config import RunConfig
from rageval_core.dataset import load_dataset
from rageval_core.engines import Ask, LocalEngine, PipelineSource
from rageval_core.errors import PipelineError
from rageval_core.job import RunJob, RunOptions, RunResult, git_commit
from rageval_core.judges import Judge, make_judge
from rageval_core.models import DatasetRef, GoldenDataset, GoldenQuestion, JudgeInput, RunManifest
from rageval_core.redact import Redactor
from rageval_core.runs.folder import RunFolder
from rageval_core.runs.layout import iso
from rageval_core.scoring import Asked, Given, Judged, Scorer, judge_answer

__all__ = ["RunOptions", "RunResult", "Runner", "evaluate_question", "run"]
_DEFAULT_OPTIONS = RunOptions()


@dataclass(frozen=True)
class _Context:
    ask: Ask
    judge: Judge
    redactor: Redactor
    scorer: Scorer


def evaluate_question(ctx: _Context, q: GoldenQuestion) -> dict[str, Any]:
    """The result row of one question (schema `question_schema`), redacted."""
    answered = ctx.ask(q.question)
    out, error = answered.output, answered.error
    if out is not None:
        try:
            out = ctx.redactor.output(out)
            ctx.scorer.scores(q.id, out.scores)  # a bad score costs the row before judging
        except Exception as exc:
            out, error = None, f"{type(exc).__name__}: {exc}"
    if out is None:
        # Nothing was retrieved: 0 for an answerable question (NULL would drop the
        # crash from the means and flatter a pipeline that fails on hard questions).
        given, judged = Given(retrieved=(), wall_ms=answered.wall_ms, error=error), Judged()
    else:
        given = Given.output(out, answered.wall_ms)
        judged = judge_answer(
            ctx.judge,
            JudgeInput(
                q.question, out.answer, ctx.scorer.placed(out.retrieved), q.reference_answer
            ),
        )
    return ctx.redactor.row(ctx.scorer.row(Asked.of(q), given, judged))


def _relative(path: Path) -> str:
    """A path as the user would type it: relative to cwd when below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


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
            stale_questions={q.id: q.stale for q in dataset.questions if q.stale is not None},
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
        for warning in dataset.warnings:
            self.job.log(f"warning: {warning}")
        owned = [
            q
            for q in dataset.questions
            if self.options.shard is None or self.options.shard.owns(q.id)
        ]
        stale = [q.id for q in owned if q.stale is not None]
        if stale:
            self.job.log(
                f"left out {len(stale)} stale question(s), whose gold no longer matches the "
                f"documents (docs/datasets.md#refreshing-gold): {', '.join(stale[:10])}"
                + (f" and {len(stale) - 10} more" if len(stale) > 10 else "")
            )
        mine = {q.id: q for q in owned if q.stale is None}
        scorer = Scorer(
            folder.run_id,
            dataset,
            self.config.ks,
            self.config.failure_thresholds,
            self.config.metrics,
            self.config.prices,
        )
        ctx = _Context(ask, judge, self.job.redactor, scorer)
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


def run(config: RunConfig, options: RunOptions = _DEFAULT_OPTIONS) -> RunResult:
    """Run `config` and write the run under `options.results`; see the module docstring."""
    return Runner(config, options).run()
