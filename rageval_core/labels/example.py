"""The example labels: the hand labels of `example/labels.yaml` (the `memorising` demo run)
and `example/labels-never-refuse.yaml` (that run's answers, some irrelevant) in the
labels-location format, so the Judge page has figures on a first launch. The bundled
`labels/` beside `results/` holds exactly this file; `rageval demo` writes it beside the
runs it writes, only when it is absent."""

from __future__ import annotations

from pathlib import Path

from rageval_core.labels.model import HumanLabel
from rageval_core.labels.older_yaml import labels_from_yaml
from rageval_core.labels.store import safe_name, write_new
from rageval_core.runs.reading import inspect_run

_EXAMPLE = Path(__file__).resolve().parents[1] / "example"
EXAMPLE_RUN = "20261116-110000-memorising"
# Each file labels one run, and its labels name that run.
EXAMPLE_FILES = (
    (_EXAMPLE / "labels.yaml", EXAMPLE_RUN),
    (_EXAMPLE / "labels-never-refuse.yaml", "20261119-090000-never-refuse"),
)
EXAMPLE_REVIEWER = "rageval-example"
EXAMPLE_AT = "2026-11-20T00:00:00.000000Z"  # fixed: the demo's files are reproducible
EXAMPLE_FILE = "20261120T000000.000000Z-example.jsonl"


def example_labels(results_dir: str | Path) -> tuple[HumanLabel, ...]:
    """The example labels of the demo runs in `results_dir`, on their dataset version; a
    file whose run is absent gives none."""
    out: list[HumanLabel] = []
    for path, run_id in EXAMPLE_FILES:
        info = inspect_run(str(results_dir), run_id)
        if info.manifest is not None:
            found = labels_from_yaml(path, info, reviewer=EXAMPLE_REVIEWER, created_at=EXAMPLE_AT)
            out.extend(found.labels)
    return tuple(out)


def example_path(labels_dir: str | Path, dataset: str) -> Path:
    return Path(labels_dir, safe_name(dataset), safe_name(EXAMPLE_REVIEWER), EXAMPLE_FILE)


def write_example_labels(results_dir: str | Path) -> Path | None:
    """Write the example labels into `<results_dir>/../labels` unless the file is there;
    its path, or None when nothing was written (present already, or no demo run)."""
    labels = example_labels(results_dir)
    if not labels:
        return None
    path = example_path(Path(results_dir).resolve().parent / "labels", labels[0].dataset)
    if path.exists():
        return None
    write_new(path, "".join(lab.to_line() + "\n" for lab in labels).encode())
    return path
