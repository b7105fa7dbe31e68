"""A run's manifest (`manifest.json`) to and from its typed `RunManifest`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from rageval_core.bounded_json import BadJSON, loads
from rageval_core.catalogue import declared_to_spec, parse_declared
from rageval_core.errors import ConfigError, ResultsError, shown
from rageval_core.models import DatasetRef, JudgeRef, RunManifest
from rageval_core.runs.layout import (
    MAX_SHARDS,
    validate_run_id,
)

SCHEMA_VERSION = 1


def config_name(m: RunManifest) -> str:
    """The name of the config a run was made with (its config's `name`), "" when it has
    none: the one rule for the Runs table, the previous run and the flaky series."""
    return str(m.config.get("name") or "")


NOT_SETTINGS = frozenset(
    {"name", "tags", "concurrency", "engine", "origin", "thresholds", "prices", "dataset"}
)
"""Config keys that do not change what a run's rows say: its name and labels, how it was
run (threads, engine, who wrote it), the CI gate's thresholds, prices (cost only) and the
dataset's path (the dataset is its content hash instead)."""


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """Nested mappings as dotted keys; leaves rendered as compact JSON."""
    if isinstance(value, Mapping) and value:
        out: dict[str, str] = {}
        for k in sorted(value, key=str):
            out.update(flatten(value[k], f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: json.dumps(value, sort_keys=True, default=str)}


def settings(m: RunManifest) -> dict[str, str]:
    """What decides a run's rows, as dotted keys: its config without `NOT_SETTINGS`, the
    judge it used and the dataset's content. Two runs with equal settings ran the same
    pipeline on the same questions: a question that flips between them is noise."""
    config = {k: v for k, v in m.config.items() if k not in NOT_SETTINGS}
    return flatten({"config": config, "judge": asdict(m.judge), "dataset": m.dataset.sha256})


def config_fingerprint(m: RunManifest) -> str:
    """A short hash of `settings`: equal for runs of the same pipeline, config and data.

    Kept on the manifest once computed (it is frozen): a flaky series asks it of every
    run of a config, 2,000 runs and 0.4 s on a restarted server's first page at 10,000."""
    known = m.__dict__.get(_FINGERPRINT)
    if known is None:
        text = json.dumps(settings(m), sort_keys=True)
        known = hashlib.sha256(text.encode()).hexdigest()[:16]
        object.__setattr__(m, _FINGERPRINT, known)  # not a field: not compared, not written
    return known


_FINGERPRINT = "_config_fingerprint"


def settings_changes(before: RunManifest, after: RunManifest) -> list[str]:
    """`config.pipeline.params.chunk_size 64 → 256`, one line per setting that differs
    (the keys as `settings` spells them, a missing one `–`; each key and value one bounded
    line: a prompt as a setting stays a glimpse); empty when equal."""
    a, b = settings(before), settings(after)

    def cut(text: str) -> str:
        return shown(text, SETTING_CHARS, bare=True)

    return [
        f"{cut(k)} {cut(a.get(k, '–'))} → {cut(b.get(k, '–'))}"
        for k in sorted(a.keys() | b.keys())
        if a.get(k) != b.get(k)
    ]


SETTING_CHARS = 80
"""How much of a changed setting's key or value a change line shows."""


def manifest_to_dict(m: RunManifest) -> dict[str, Any]:
    d = asdict(m)
    d["tags"] = list(m.tags)
    d["config"] = dict(m.config)
    d["totals"] = dict(m.totals)
    # only a run with declarations has `metrics`, only a rescored run `source_run`: other
    # manifests stay as they were written
    d.pop("metrics")
    if m.metrics:
        d["metrics"] = {x.name: declared_to_spec(x) for x in m.metrics}
    if m.source_run is None:
        d.pop("source_run")
    # only a run that left stale questions out has `stale_questions`
    d["stale_questions"] = dict(m.stale_questions)
    if not m.stale_questions:
        d.pop("stale_questions")
    # a judge's `metrics` is written as chosen; manifests of judges without one stay as they were
    if m.judge.metrics is None:
        d["judge"].pop("metrics")
    else:
        d["judge"]["metrics"] = list(m.judge.metrics)
    return d


def _judge_metrics(value: object) -> tuple[str, ...] | None:
    """A manifest's `judge.metrics`: None when absent (written before the choice existed)."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise TypeError("judge.metrics must be a list of metric names")
    return tuple(value)


def _stale(value: object) -> dict[str, str]:
    """A manifest's `stale_questions` (question id -> reason); {} when absent."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise TypeError("stale_questions must map question ids to reasons")
    return dict(value)


def _opt_str(value: object, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{name} must be a string, not {type(value).__name__}")


def manifest_from_bytes(
    data: bytes, source: str = "manifest.json", problems: list[str] | None = None
) -> RunManifest:
    """A manifest file's bytes parsed (`manifest_from_dict`): UTF-8 JSON only, through the
    bounded reader, so bytes in another encoding are "not UTF-8 JSON", not a decoder's
    guess at UTF-16 and its UnicodeDecodeError."""
    try:
        value = loads(data)
    except BadJSON as exc:
        why = exc.why
        if why.startswith("not UTF-8"):
            why = f"not UTF-8 JSON {why.removeprefix('not UTF-8 ')}"
        elif why.startswith("nested deeper"):
            why = "not valid JSON (nested too deeply)"
        elif not why.startswith("not valid JSON"):
            why = f"not valid JSON ({why})"
        raise ResultsError(f"{source}: {why}") from None
    return manifest_from_dict(value, source, problems)


def manifest_from_dict(
    d: Mapping[str, Any], source: str = "manifest.json", problems: list[str] | None = None
) -> RunManifest:
    """Parse a manifest; raise ResultsError naming the file and the bad field.

    Every field that reaches a table or a page is type-checked here, so a hand-edited or
    damaged manifest is one problem on its run instead of an error deep in a view.

    Invalid declared metrics (`metrics:`) do not make the manifest invalid: the run is
    still a run. With a `problems` list they are dropped and the reason appended there
    (the reader lists the run with that problem); without one they raise ResultsError.
    """
    try:
        declared = parse_declared(d.get("metrics") if isinstance(d, Mapping) else None, source)
    except ConfigError as exc:
        if problems is None:
            raise ResultsError(exc.message) from None
        problems.append(f"{exc.message}; the run's declared metrics are ignored")
        declared = ()
    try:
        if not isinstance(d, Mapping):
            raise TypeError(f"expected an object, not {type(d).__name__}")
        ds = d.get("dataset") or {}
        jd = d.get("judge") or {}
        status = d["status"]
        if status not in ("running", "complete", "failed"):
            raise ValueError(f"status {shown(status, 40)}")
        shards = int(d.get("shards", 1))
        if not 1 <= shards <= MAX_SHARDS:
            raise ValueError(f"shards {shards} not in 1..{MAX_SHARDS}")
        return RunManifest(
            run_id=validate_run_id(d["run_id"]),
            status=status,
            created_at=str(d["created_at"]),
            config=dict(d.get("config") or {}),
            dataset=DatasetRef(
                name=str(ds.get("name", "")),
                version=str(ds.get("version", "")),
                sha256=str(ds.get("sha256", "")),
                n_questions=int(ds.get("n_questions", 0)),
                path=str(ds.get("path", "")),
            ),
            judge=JudgeRef(
                kind=str(jd.get("kind", "")),
                model=_opt_str(jd.get("model"), "judge.model"),
                version=_opt_str(jd.get("version"), "judge.version"),
                prompt_hash=_opt_str(jd.get("prompt_hash"), "judge.prompt_hash"),
                metrics=_judge_metrics(jd.get("metrics")),
            ),
            schema_version=int(d.get("schema_version", 0)),
            finished_at=_opt_str(d.get("finished_at"), "finished_at"),
            git_commit=_opt_str(d.get("git_commit"), "git_commit"),
            tags=tuple(str(t) for t in d.get("tags") or ()),
            totals=dict(d.get("totals") or {}),
            shards=shards,
            metrics=declared,
            source_run=_opt_str(d.get("source_run"), "source_run"),
            stale_questions=_stale(d.get("stale_questions")),
        )
    except ResultsError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise ResultsError(f"{source}: invalid manifest ({shown(exc)})") from exc
