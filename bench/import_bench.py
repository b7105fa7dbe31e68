"""Import speed: each tool's fixture (tests/fixtures/imports, written by the real tools)
scaled to N questions, then `rageval import` of it, timed; and the writer alone (the same
rows handed to `RunWriter`, no file to parse) as the floor.

    .venv/bin/python bench/import_bench.py [--questions 10000] [--repeat 3]
    .venv/bin/python bench/import_bench.py --rss [--questions 1000000] [--kinds ...]

Prints seconds (median), questions per second and the ratio to the writer floor. With
`--rss` each import runs once in a child process of its own and the child's peak RSS is
printed beside its time, with the RSS of a child that only imports rageval (the floor),
and the growth per question: the figure docs/import.md bounds. `ragas .jsonl short` and
`ragas .csv short` are rows of about 100 bytes (the size issue 23 measured), written as a
stream, so a million-row file costs little disk.
Scaled files: question ids/texts made unique per copy; the Inspect `.eval` is written
with deflate (Python's zipfile cannot write zstd before 3.14), its `.json` as is.
Everything is written to a temporary folder.
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from timing import median_ms  # bench/timing.py: run as a script, bench/ is on the path

from rageval_core.importers import TOOLS, import_run
from rageval_core.importers.common import resolve_ids
from rageval_core.writer import RunWriter

FIX = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "imports"


def scale_promptfoo(n: int, out: Path) -> Path:
    data = json.loads((FIX / "promptfoo" / "results.json").read_text())
    base = data["results"]["results"]
    rows = []
    for i in range(n):
        r = copy.deepcopy(base[i % len(base)])
        r["vars"]["question_id"] = f"q{i:06d}"
        rows.append(r)
    data["results"]["results"] = rows
    path = out / "promptfoo.json"
    path.write_text(json.dumps(data))
    return path


def scale_deepeval(n: int, out: Path) -> Path:
    data = json.loads((FIX / "deepeval" / "latest_test_run.json").read_text())
    base = data["testRunData"]["testCases"]
    cases = []
    for i in range(n):
        c = copy.deepcopy(base[i % len(base)])
        c["name"] = c["metadata"]["question_id"] = f"q{i:06d}"
        cases.append(c)
    data["testRunData"]["testCases"] = cases
    path = out / "deepeval.json"
    path.write_text(json.dumps(data))
    return path


def _inspect_samples(n: int) -> tuple[dict, list[dict]]:
    log = json.loads((FIX / "inspect" / "fixture.json").read_text())
    base = log["samples"]
    samples = []
    for i in range(n):
        s = copy.deepcopy(base[i % len(base)])
        s["id"] = f"q{i:06d}"
        samples.append(s)
    return log, samples


def scale_inspect_json(n: int, out: Path) -> Path:
    log, samples = _inspect_samples(n)
    log["samples"] = samples
    path = out / "inspect.json"
    path.write_text(json.dumps(log))
    return path


def scale_inspect_eval(n: int, out: Path) -> Path:
    log, samples = _inspect_samples(n)
    header = {k: v for k, v in log.items() if k != "samples"}
    path = out / "inspect.eval"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps(header))
        for s in samples:
            z.writestr(f"samples/{s['id']}_epoch_1.json", json.dumps(s))
    return path


def _ragas_rows(n: int) -> tuple[list[str], list[dict]]:
    with open(FIX / "ragas" / "scores.csv", newline="") as fh:
        base = list(csv.DictReader(fh))
    rows = []
    for i in range(n):
        r = dict(base[i % len(base)])
        r["user_input"] = f"{r['user_input']} #{i}"
        rows.append(r)
    return list(base[0]), rows


def scale_ragas_csv(n: int, out: Path) -> Path:
    fields, rows = _ragas_rows(n)
    path = out / "ragas.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return path


def scale_ragas_parquet(n: int, out: Path) -> Path:
    table = pq.read_table(FIX / "ragas" / "scores.parquet")
    reps = -(-n // table.num_rows)
    big = pa.concat_tables([table] * reps).slice(0, n)
    texts = [f"{t} #{i}" for i, t in enumerate(big.column("user_input").to_pylist())]
    big = big.set_column(big.schema.get_field_index("user_input"), "user_input", pa.array(texts))
    path = out / "ragas.parquet"
    pq.write_table(big, path)
    return path


def _short_rows(n: int):
    for i in range(n):
        yield {
            "user_input": f"What is question number {i}?",
            "response": f"It is {i}.",
            "faithfulness": (i % 10) / 10,
            "answer_relevancy": (i % 7) / 7,
        }


def scale_ragas_jsonl_short(n: int, out: Path) -> Path:
    path = out / "ragas-short.jsonl"
    with open(path, "w") as fh:
        for r in _short_rows(n):
            fh.write(json.dumps(r) + "\n")
    return path


def scale_ragas_csv_short(n: int, out: Path) -> Path:
    path = out / "ragas-short.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(
            fh, fieldnames=["user_input", "response", "faithfulness", "answer_relevancy"]
        )
        w.writeheader()
        w.writerows(_short_rows(n))
    return path


KINDS = {
    "promptfoo": ("promptfoo", scale_promptfoo),
    "deepeval": ("deepeval", scale_deepeval),
    "inspect .eval": ("inspect", scale_inspect_eval),
    "inspect .json": ("inspect", scale_inspect_json),
    "ragas .csv": ("ragas", scale_ragas_csv),
    "ragas .parquet": ("ragas", scale_ragas_parquet),
    "ragas .jsonl short": ("ragas", scale_ragas_jsonl_short),
    "ragas .csv short": ("ragas", scale_ragas_csv_short),
}


def _child(tool: str, path: str, results: str) -> None:
    """One import in this process; prints seconds and peak RSS (MB) as JSON."""
    import resource

    start = time.perf_counter()
    if tool != "-":
        import_run(tool, path, results_dir=results, run_id="rss")
    took = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({"seconds": took, "rss_mb": peak}))


def _measure(tool: str, path: Path | str, results: Path) -> dict:
    import subprocess

    cmd = [sys.executable, __file__, "--child", tool, str(path), str(results)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


ALL_IN_MEMORY = {"ragas .jsonl short": (290.0, 4800.0)}
"""Seconds and peak RSS (MB) of the writer that held every row, at 1,000,000 questions
(issue 23); the ratios printed are against these."""


def rss(n: int, kinds: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="rageval-import-rss-") as d:
        root = Path(d)
        floor = _measure("-", "-", root)["rss_mb"]
        print(f"peak RSS of one import of {n:,} questions, own process each, {sys.platform}")
        print(f"floor (python + rageval imported): {floor:.0f} MB")
        print(
            f"{'file':20} {'size MB':>8} {'seconds':>8} {'RSS MB':>8} {'KB/question':>12}"
            f" {'vs all-in-memory':>17}"
        )
        for kind in kinds:
            tool, scale = KINDS[kind]
            path = scale(n, root)
            got = _measure(tool, path, root / f"results-{len(list(root.iterdir()))}")
            size = path.stat().st_size / 1e6
            per = (got["rss_mb"] - floor) * 1024 / n
            old = ALL_IN_MEMORY.get(kind) if n == 1_000_000 else None
            ratio = (
                f"{old[0] / got['seconds']:.1f}x time, {old[1] / got['rss_mb']:.1f}x RSS"
                if old
                else "-"
            )
            print(
                f"{kind:20} {size:8.1f} {got['seconds']:8.1f} {got['rss_mb']:8.0f} {per:12.2f}"
                f" {ratio:>17}",
                flush=True,
            )
            path.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--questions", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rss", action="store_true", help="peak RSS per import, one child each")
    ap.add_argument("--kinds", nargs="+", choices=list(KINDS), default=list(KINDS))
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return
    n = args.questions
    if args.rss:
        rss(n, args.kinds)
        return
    with tempfile.TemporaryDirectory(prefix="rageval-import-bench-") as d:
        root = Path(d)
        files = {kind: (tool, scale(n, root)) for kind, (tool, scale) in KINDS.items()}
        counter = iter(range(10**6))

        def importer(tool: str, path: Path):
            return lambda: import_run(
                tool, path, results_dir=root / "results", run_id=f"r{next(counter)}"
            )

        # The floor: the promptfoo rows, already parsed, through the writer alone.
        imported = TOOLS["promptfoo"](files["promptfoo"][1])
        records = list(resolve_ids(imported.records, None, "bench"))

        def writer_only() -> None:
            with RunWriter(
                "bench",
                results_dir=root / "writer",
                metrics=imported.metrics,
                run_id=f"w{next(counter)}",
                durable=False,
            ) as w:
                for r in records:
                    w.add(**r)

        floor = median_ms(writer_only, args.repeat) / 1000
        print(f"import of a {n:,}-question file (median of {args.repeat}), {sys.platform}")
        print(f"{'file':16} {'size MB':>8} {'seconds':>8} {'q/s':>9} {'× writer':>9}")
        print(f"{'writer alone':16} {'':>8} {floor:8.2f} {n / floor:9,.0f} {1.0:9.2f}")
        for kind, (tool, path) in files.items():
            t = median_ms(importer(tool, path), args.repeat) / 1000
            size = path.stat().st_size / 1e6
            print(f"{kind:16} {size:8.1f} {t:8.2f} {n / t:9,.0f} {t / floor:9.2f}")
        w = floor / n * 1000
        print(f"writer: {w:.3f} ms per question; a durable writer adds one fsync per question")


if __name__ == "__main__":
    main()
