"""`rageval_core.evaluate(pipeline, dataset, judge=...)`: a run from a notebook, no YAML.

Builds the run config `rageval run` would read from a file and runs it with the same
runner (so the run is crash-safe, judged and written exactly like a CLI run, and shows in
the dashboard), then returns its id with its rows as a DataFrame. The config's factory is
`registered` below, which hands back the callable registered under its `module:qualname`
in this process: the runner builds the pipeline from the config as always, and the
manifest names the callable.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from rageval_core.adapters import adapt
from rageval_core.catalogue import parse_declared
from rageval_core.config import DEFAULT_CONCURRENCY, PipelineSpec, Prices, RunConfig
from rageval_core.errors import ConfigError, PipelineError
from rageval_core.runner import RunOptions, run
from rageval_core.runs.layout import parquet_name, results_location

FACTORY = "rageval_core.notebook:registered"
_PIPELINES: dict[str, Callable[[str], Any]] = {}


def registered(pipeline: str, **params: Any) -> Callable[[str], Any]:
    """The factory of a run `evaluate` started: the callable it registered as `pipeline`
    (`params` are recorded for the config diff; the callable is already built)."""
    try:
        return _PIPELINES[pipeline]
    except KeyError:
        raise PipelineError(
            f"no pipeline {pipeline!r} registered in this process: a run made by "
            "rageval_core.evaluate is resumed with evaluate(..., resume=RUN_ID)"
        ) from None


@dataclass(frozen=True)
class Evaluation:
    """A finished run: its id, folder, status and one row per question."""

    run_id: str
    path: Path
    status: str
    rows: pd.DataFrame


def _factory_name(pipeline: Callable[..., Any]) -> str:
    """`module:qualname` of the callable: the name the manifest records it under."""
    module = getattr(pipeline, "__module__", None) or "__main__"
    name = getattr(pipeline, "__qualname__", None) or type(pipeline).__qualname__
    return f"{module}:{name}"


def evaluate(
    pipeline: Callable[[str], Any],
    dataset: str | os.PathLike[str],
    *,
    judge: Mapping[str, Any] | None = None,
    name: str | None = None,
    results: str | os.PathLike[str] | None = None,
    run_id: str | None = None,
    resume: str | None = None,
    params: Mapping[str, Any] | None = None,
    prices: Prices | None = None,
    metrics: Mapping[str, Any] | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    tags: Iterable[str] = (),
    progress: bool = True,
) -> Evaluation:
    """Run `pipeline` (question -> answer and retrieved chunks, docs/pipeline.md; or a LlamaIndex,
    LangChain or Haystack object, `adapters`) over the golden
    `dataset` and write the run under `results` (default $RAGEVAL_RESULTS, else
    results/). `judge` is a judge config as in a run config (default offline); `params`
    are recorded as the pipeline's parameters (what Compare's config diff shows);
    `resume=RUN_ID` finishes an interrupted run as `rageval run --resume` does."""
    given = pipeline
    pipeline = adapt(given)
    if not callable(pipeline):
        raise ConfigError(
            "pipeline must be a callable(question) or a LlamaIndex, LangChain or Haystack "
            f"object, got {type(given).__name__}"
        )
    name = name or getattr(given, "__name__", None) or type(given).__name__
    params = dict(params or {})
    if "pipeline" in params:
        raise ConfigError("params: 'pipeline' is the name evaluate() records the callable under")
    key = _factory_name(given)
    _PIPELINES[key] = pipeline
    config = RunConfig(
        name=name,
        path=Path.cwd() / "evaluate",  # no file: relative paths mean the working directory
        dataset=str(Path(dataset).resolve()),
        pipeline=PipelineSpec(FACTORY, {"pipeline": key, **params}),
        judge=dict(judge) if judge else None,
        prices=prices or Prices(),
        concurrency=concurrency,
        tags=tuple(tags),
        metrics=parse_declared(metrics, "metrics"),
    )
    result = run(
        config,
        RunOptions(
            results=results_location(results),
            run_id=run_id,
            resume=resume,
            progress=progress,
        ),
    )
    rows = pq.read_table(result.path / parquet_name()).to_pandas()
    return Evaluation(result.run_id, result.path, result.status, rows)
