"""Results of other tools as ordinary runs (docs/import.md): RAGAS, DeepEval, promptfoo, Inspect,
and OpenTelemetry traces.

Each tool module reads its files with the standard library (and pyarrow for Parquet) —
never the tool's own package, bar llama-index-core, which the OTel import uses when
installed to count the tokens of LlamaIndex calls the trace does not report — into an
`Imported`: one `writer.QuestionRecord`-shaped dict per question, the tool's other
numeric metrics to declare, the config to record. The file is read and checked as the run
is written (a streamed file, RAGAS, is never held whole): `writer.RunWriter` writes into a
hidden staging folder, renamed into place only once every record passed, so a bad file
(one `SourceError` naming the file and the first field that did not fit) or a crash
leaves no half-written run. The field mapping per tool is in docs/import.md.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from rageval_core.dataset import load_dataset
from rageval_core.errors import ConfigError, ResultsError, SourceError
from rageval_core.importers import deepeval, inspect_log, otel, promptfoo, ragas
from rageval_core.importers.common import Imported, resolve_ids
from rageval_core.job import RunResult
from rageval_core.models import GoldenDataset
from rageval_core.origin import RunOrigin
from rageval_core.runs.layout import default_run_id, validate_run_id
from rageval_core.writer import RunWriter

Reader = Callable[[Path], Imported]
TOOLS: dict[str, Reader] = {
    "ragas": ragas.read,
    "deepeval": deepeval.read,
    "promptfoo": promptfoo.read,
    "inspect": inspect_log.read,
    "otel": otel.read,
}
STAGING = ".rageval/import-staging"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def import_run(
    tool: str,
    file: str | os.PathLike[str],
    *,
    results_dir: str | os.PathLike[str],
    run_id: str | None = None,
    dataset: str | os.PathLike[str] | GoldenDataset | None = None,
    name: str | None = None,
    provider: str | None = None,
    log: Callable[[str], None] | None = None,
) -> RunResult:
    """Read `file` as a results file of `tool` and write it as one complete run in the
    local folder `results_dir`; see the module docstring. `provider` picks one
    provider's results of a promptfoo file; `log` hears the reader's notes (what it left
    out)."""
    if tool not in TOOLS:
        raise ConfigError(f"unknown tool {tool!r}; choose one of: {', '.join(TOOLS)}")
    if provider is not None and tool != "promptfoo":
        raise ConfigError("--provider applies to promptfoo files only")
    path = Path(file)
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    ds = load_dataset(dataset) if isinstance(dataset, str | os.PathLike) else dataset
    if provider:
        imported = promptfoo.read(path, provider)
    elif tool == "otel":  # traces hold questions beyond the dataset's: it picks them
        imported = otel.read(path, ds)
    else:
        imported = TOOLS[tool](path)
    for note in imported.notes:
        (log or print)(note)
    config_name = name or imported.name or path.stem
    run_id = validate_run_id(run_id or default_run_id(f"{tool}-{config_name}"))
    root = Path(results_dir)
    target = root / run_id
    if target.exists():
        raise ConfigError(f"run {run_id} already exists in {root}; choose another --run-id")
    staging = root / STAGING
    staging.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f"{run_id}.", dir=staging))
    try:
        origin = RunOrigin("import", tool, path.name, _sha256(path), imported.tool_version)
        writer = RunWriter(
            config_name,
            results_dir=stage,
            dataset=ds,
            config=imported.config,
            metrics=imported.metrics,
            run_id=run_id,
            tags=("imported", tool),
            judge=imported.judge,
            origin=origin,
            durable=False,
        )
        with writer:
            count = 0
            for record in resolve_ids(imported.records, ds, str(path)):
                try:
                    writer.add(**record)
                except SourceError as exc:  # the writer names the question; add the file
                    raise SourceError(f"{path}: {exc.message}") from None
                count += 1
            if not count:
                raise SourceError(f"{path}: holds no questions")
        result = writer.close()  # already closed by the block: its outcome
        try:
            os.rename(stage / run_id, target)  # one step: the run appears whole or not at all
        except OSError as exc:
            raise ResultsError(f"cannot move the imported run into {target}: {exc}") from exc
        return RunResult(run_id, target, result.status, result.totals)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
