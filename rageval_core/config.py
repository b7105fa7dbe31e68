"""Run configs (docs/pipeline.md): read a YAML file into a typed, validated `RunConfig`.

Every problem in a config is collected and raised as one ConfigError naming the file, so
a user fixes a config in one pass. Paths inside a config are relative to the config file,
never to the working directory, so a config means the same thing wherever it is run from.
This module reads the config file only: it does not load the dataset or import the
pipeline (the runner does, with their own errors).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval_core.catalogue import DEFAULT_KS, parse_declared
from rageval_core.errors import ConfigError, shown
from rageval_core.judges import judge_problems
from rageval_core.models import DeclaredMetric
from rageval_core.redact import env_names, secret_values
from rageval_core.thresholds import FailureThresholds
from rageval_core.userfiles import load_yaml

FACTORY_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
PRICE_KEYS = ("input_per_1k_tokens", "output_per_1k_tokens")
DEFAULT_CONCURRENCY = 4
KNOWN_KEYS = (
    "name",
    "dataset",
    "pipeline",
    "judge",
    "prices",
    "concurrency",
    "tags",
    "thresholds",
    "ks",
    "failure_thresholds",
    "metrics",
)


@dataclass(frozen=True)
class Prices:
    """USD per 1,000 tokens; cost of a question = tokens × these."""

    input_per_1k_tokens: float = 0.0
    output_per_1k_tokens: float = 0.0

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """None when the pipeline reported no token counts at all (unknown, not free)."""
        if input_tokens is None and output_tokens is None:
            return None
        return (input_tokens or 0) * self.input_per_1k_tokens / 1000 + (
            output_tokens or 0
        ) * self.output_per_1k_tokens / 1000


@dataclass(frozen=True)
class PipelineSpec:
    """`module:function` and the keyword arguments the function is called with."""

    factory: str
    params: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None
    """Seconds one question's pipeline call may take before it is that question's error
    (`--question-timeout` overrides it); None: no limit."""


@dataclass(frozen=True)
class RunConfig:
    """A validated run config. `dataset_path` is resolved against the config's folder."""

    name: str
    path: Path
    dataset: str
    pipeline: PipelineSpec
    judge: Mapping[str, Any] | None = None
    prices: Prices | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    tags: tuple[str, ...] = ()
    thresholds: Mapping[str, Any] = field(default_factory=dict)
    ks: tuple[int, ...] = DEFAULT_KS
    failure_thresholds: FailureThresholds = FailureThresholds()
    metrics: tuple[DeclaredMetric, ...] = ()
    """Per-question scores the pipeline returns (`PipelineOutput.scores`), recorded in the
    manifest so every view offers them like built-in metrics."""

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def dataset_path(self) -> Path:
        return (self.folder / self.dataset).resolve()

    def secret_env_names(self) -> list[str]:
        """Environment variables whose values must never reach a file (every `*_env`)."""
        return env_names({"judge": self.judge or {}, "params": self.pipeline.params})

    def secret_values(self) -> list[str]:
        """Strings written under secret-looking keys (`api_key: sk-…`): masked in the
        manifest by key, and scrubbed from rows and logs by value."""
        return secret_values(self.to_manifest())

    def to_manifest(self) -> dict[str, Any]:
        """The config as recorded in a manifest (before redaction, which the runner applies)."""
        return {
            "name": self.name,
            "dataset": self.dataset,
            "pipeline": {
                "factory": self.pipeline.factory,
                "params": dict(self.pipeline.params),
                **({"timeout_s": self.pipeline.timeout_s} if self.pipeline.timeout_s else {}),
            },
            "judge": dict(self.judge or {"kind": "offline"}),
            # no `prices:`, no prices: the cost is unknown, not $0 (recorded as absent)
            **(
                {"prices": {k: getattr(self.prices, k) for k in PRICE_KEYS}}
                if self.prices is not None
                else {}
            ),
            "concurrency": self.concurrency,
            "ks": list(self.ks),
            "failure_thresholds": {
                k: getattr(self.failure_thresholds, k)
                for k in FailureThresholds.__dataclass_fields__
            },
            "thresholds": dict(self.thresholds),
        }


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class _Reader:
    """Typed field access that records a problem instead of raising on the first one."""

    def __init__(self, raw: Mapping[str, Any]):
        self.raw = raw
        self.problems: list[str] = [
            f"unknown key {shown(k)} (expected one of: {', '.join(KNOWN_KEYS)})"
            for k in raw
            if k not in KNOWN_KEYS
        ]

    def text(self, key: str) -> str:
        v = self.raw.get(key)
        if not isinstance(v, str) or not v.strip():
            self.problems.append(f"{key} is required and must be a non-empty string")
            return ""
        return v

    def mapping(self, key: str) -> Mapping[str, Any] | None:
        v = self.raw.get(key)
        if v is None:
            return None
        if not isinstance(v, Mapping):
            self.problems.append(f"{key} must be a mapping, got {type(v).__name__}")
            return None
        return v

    def pipeline(self) -> PipelineSpec:
        p = self.mapping("pipeline")
        if p is None:
            self.problems.append("pipeline is required: {factory: module:function, params: {}}")
            return PipelineSpec("")
        factory, params = p.get("factory"), p.get("params") or {}
        if not isinstance(factory, str) or not FACTORY_RE.fullmatch(factory):
            self.problems.append(
                f"pipeline.factory must look like 'package.module:function', got {shown(factory)}"
            )
            factory = ""
        if not isinstance(params, Mapping):
            self.problems.append(f"pipeline.params must be a mapping, got {type(params).__name__}")
            params = {}
        timeout = p.get("timeout_s")
        if timeout is not None and not (_is_number(timeout) and 0 < timeout < math.inf):
            self.problems.append(
                f"pipeline.timeout_s must be a number of seconds > 0, got {shown(timeout)}"
            )
            timeout = None
        for k in p:
            if k not in ("factory", "params", "timeout_s"):
                self.problems.append(
                    f"unknown key pipeline.{shown(k, bare=True)} "
                    "(expected factory, params, timeout_s)"
                )
        return PipelineSpec(factory, dict(params), None if timeout is None else float(timeout))

    def judge(self) -> dict[str, Any] | None:
        j = self.mapping("judge")
        if j is None:
            return None
        self.problems += judge_problems(j)
        return dict(j)

    def prices(self) -> Prices | None:
        """The config's `prices:`; None without one: a cost nobody priced is unknown."""
        p = self.mapping("prices")
        if p is None:
            return None
        values = {}
        for k, v in p.items():
            if k not in PRICE_KEYS:
                self.problems.append(
                    f"unknown key prices.{shown(k, bare=True)} (expected {', '.join(PRICE_KEYS)})"
                )
            elif not _is_number(v) or v < 0:
                self.problems.append(f"prices.{k} must be a number >= 0, got {shown(v)}")
            else:
                values[k] = float(v)
        return Prices(**values)

    def concurrency(self) -> int:
        v = self.raw.get("concurrency", DEFAULT_CONCURRENCY)
        if not _is_int(v) or v < 1:
            self.problems.append(f"concurrency must be an integer >= 1, got {shown(v)}")
            return DEFAULT_CONCURRENCY
        return v

    def tags(self) -> tuple[str, ...]:
        v = self.raw.get("tags") or []
        if not isinstance(v, list) or not all(isinstance(t, str) for t in v):
            self.problems.append(f"tags must be a list of strings, got {shown(v)}")
            return ()
        return tuple(v)

    def ks(self) -> tuple[int, ...]:
        v = self.raw.get("ks") or []
        if not isinstance(v, list) or not all(_is_int(k) and k >= 1 for k in v):
            self.problems.append(f"ks must be a list of integers >= 1, got {shown(v)}")
            v = []
        # The public columns (docs/pipeline.md) are always filled; configured ks add to them.
        return tuple(sorted(set(DEFAULT_KS) | set(v)))

    def metrics(self, source: str) -> tuple[DeclaredMetric, ...]:
        try:
            return parse_declared(self.raw.get("metrics"), source)
        except ConfigError as exc:
            self.problems.append(exc.message.removeprefix(f"{source}: "))
            return ()

    def failure_thresholds(self) -> FailureThresholds:
        v = self.raw.get("failure_thresholds")
        if v is None:
            return FailureThresholds()
        try:
            return FailureThresholds.from_mapping(v)
        except ConfigError as exc:
            self.problems += [f"failure_thresholds: {p}" for p in exc.problems or [exc.message]]
            return FailureThresholds()


def parse_config(raw: Any, path: Path) -> RunConfig:
    """Validate a parsed config mapping; `path` is the file it came from (for paths, errors)."""
    if not isinstance(raw, Mapping):
        what = "the file is empty" if raw is None else f"found {type(raw).__name__}"
        raise ConfigError(f"{path}: invalid run config", [f"expected a mapping; {what}"])
    r = _Reader(raw)
    thresholds = r.mapping("thresholds") or {}
    config = RunConfig(
        name=r.text("name"),
        path=path,
        dataset=r.text("dataset"),
        pipeline=r.pipeline(),
        judge=r.judge(),
        prices=r.prices(),
        concurrency=r.concurrency(),
        tags=r.tags(),
        thresholds=dict(thresholds),
        ks=r.ks(),
        failure_thresholds=r.failure_thresholds(),
        metrics=r.metrics(str(path)),
    )
    if r.problems:
        raise ConfigError(f"{path}: invalid run config", r.problems)
    return config


def load_config(path: str | os.PathLike[str]) -> RunConfig:
    """Read and validate a run config file; one ConfigError lists every problem."""
    path = Path(path).resolve()
    return parse_config(load_yaml(path, "run config", ConfigError), path)
