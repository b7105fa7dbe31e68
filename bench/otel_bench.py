"""Trace import speed: one question traced by the real OpenInference instrumentation
(LlamaIndex and LangChain apps of tests/core/adapters/apps.py, offline), copied to N
traces with their own trace ids and question texts, then `rageval import otel` of the
file, timed; beside it the reading alone (`otel.read`: parse, group, make records) and the
writer alone (the same records handed to `RunWriter`) as the floor.

    .venv/bin/python bench/otel_bench.py [--questions 10000] [--repeat 3]

Prints seconds (median), questions per second and the ratio to the writer floor.
Everything is written to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]  # the repository (tests/), bench/ (not a package)

from import_bench import timed  # noqa: E402

from rageval_core.importers import import_run, otel  # noqa: E402
from rageval_core.importers.common import resolve_ids  # noqa: E402
from rageval_core.writer import RunWriter  # noqa: E402
from tests.core.importers.otel_traces import write_traces  # noqa: E402

QUESTION = "When does the office open in the morning?"


def scaled(framework: str, n: int, root: Path) -> Path:
    """N copies of one traced question: trace ids and the question made unique per copy."""
    template = write_traces(root / f"{framework}-one.jsonl", framework, [QUESTION])
    line = template.read_text().strip()
    trace_id = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    asked = json.dumps(QUESTION)[1:-1]
    path = root / f"{framework}.jsonl"
    with open(path, "w") as fh:
        for i in range(n):
            copy = line.replace(trace_id, f"{i:032x}").replace(asked, f"{asked} (copy {i})")
            fh.write(copy + "\n")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--questions", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = args.questions
    with tempfile.TemporaryDirectory(prefix="rageval-otel-bench-") as d:
        root = Path(d)
        counter = iter(range(10**6))
        print(f"import of {n:,} traced questions (median of {args.repeat}), {sys.platform}")
        print(f"{'file':22} {'size MB':>8} {'spans':>8} {'seconds':>8} {'q/s':>8} {'× writer':>9}")
        for framework in ("llamaindex", "langchain"):
            bench_one(framework, scaled(framework, n, root), root, args.repeat, counter)


def bench_one(framework: str, path: Path, root: Path, repeat: int, counter) -> None:
    """Time the writer alone, the reading alone and the whole import of one file."""
    records = resolve_ids(otel.read(path).records, None, "bench")
    n, spans = len(records), len(otel.read_spans(path))

    def writer_only() -> None:
        with RunWriter(
            "bench", results_dir=root / "w", run_id=f"w{next(counter)}", durable=False
        ) as w:
            for r in records:
                w.add(**r)

    def whole() -> None:
        import_run(
            "otel", path, results_dir=root / "r", run_id=f"r{next(counter)}", log=lambda _: None
        )

    floor = timed(writer_only, repeat)
    size = path.stat().st_size / 1e6
    for label, fn in (
        ("writer alone", None),
        ("read alone", lambda: otel.read(path)),
        ("import", whole),
    ):
        t = floor if fn is None else timed(fn, repeat)
        shown = f"{size:8.1f} {spans:8,}" if label == "import" else f"{'':>8} {'':>8}"
        print(f"{framework + ' ' + label:22} {shown} {t:8.2f} {n / t:8,.0f} {t / floor:9.2f}")


if __name__ == "__main__":
    main()
