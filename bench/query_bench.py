"""Time the query layer on synthetic results: cache build, every query cold and warm, naive pandas.

    python bench/query_bench.py --runs 100 --questions 500 --out /tmp/rq-small
    python bench/query_bench.py --results /tmp/rq-big      # reuse generated results
    python bench/query_bench.py --results /tmp/rq-big --fold   # Compare's per-question fold

Cold = a new Python process: open the store (cache already built) + the first call, imports
excluded (reported separately). Warm = median of repeated calls on an open store. Naive =
what a dashboard without this layer does for the runs overview: pandas reads every run's
Parquet, concatenates and groups (also in a new process). Targets (1,000 × 1,000, 2 cores):
warm ≤ 200 ms, overview cold ≤ 2 s, ≥ 10× faster than naive.

`--fold` times only Compare's per-question fold at 2 and 20 runs: the SQL fold
(`compare.fold_changes`, inside `compare_runs`) against the per-question pandas loop it
replaced, kept as the test reference in tests/core/query/changes_reference.py, on the same
change rows in the same process.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from timing import median_ms  # bench/timing.py: run as a script, bench/ is on the path

HERE = Path(__file__).resolve().parent
REFERENCE = HERE.parent / "tests" / "core" / "query" / "changes_reference.py"


def _calls(store, run_ids):
    from rageval_core import query as q

    newest, prev = run_ids[0], run_ids[1]
    return {
        "runs_overview": lambda: q.runs_overview(store),
        "runs_overview(tag filter)": lambda: q.runs_overview(store, tags=["release"]),
        "metric_trend": lambda: q.metric_trend(store, "recall_at_5"),
        "question_rows(page)": lambda: q.question_rows(store, newest, limit=50),
        "question_rows(filter+search)": lambda: q.question_rows(
            store,
            newest,
            q.QuestionFilter(
                failure_types=("unfaithful", "incorrect"),
                search="hybrid",
                metric_ranges={"faithfulness": (0.0, 0.7)},
            ),
            sort="faithfulness",
            limit=50,
            offset=50,
        ),
        "bottom_questions": lambda: q.bottom_questions(store, newest, "faithfulness"),
        "rerank_candidates": lambda: q.rerank_candidates(store, newest),
        "recall_curve": lambda: q.recall_curve(store),
        "cost_quality": lambda: q.cost_quality(store),
        "question_detail": lambda: q.question_detail(store, newest, "q00001"),
        "question_history": lambda: q.question_history(store, "q00001"),
        "flaky_questions": lambda: q.flaky_questions(store),
        # the scan itself, as after a change (flaky_questions keeps its answer per state)
        "flaky_questions(recompute)": lambda: _flaky_uncached(store),
        "failure_counts": lambda: q.failure_counts(store),
        "metric_distribution": lambda: q.metric_distribution(store, newest, "answer_correctness"),
        "compare_runs(2)": lambda: q.compare_runs(store, [prev, newest]),
        "check_run": lambda: q.check_run(
            store,
            newest,
            baseline=prev,
            thresholds=q.parse_thresholds({"recall_at_5": {"min": 0.5, "max_drop": 0.05}}),
        ),
    }


def _flaky_uncached(store):
    from rageval_core.query import _flaky

    return _flaky._flaky(store, None, None, 0.5, 2)


def _run_ids(results: str) -> list[str]:
    ids = sorted(p.name for p in Path(results).iterdir() if (p / "manifest.json").exists())
    return ids[::-1]  # synth ids sort by time


def worker(results: str, name: str) -> None:
    """Child process: report import, open and first-call times for one function."""
    t0 = time.perf_counter()
    from rageval_core.query import ResultsStore

    t1 = time.perf_counter()
    store = ResultsStore(results)
    t2 = time.perf_counter()
    _calls(store, _run_ids(results))[name]()
    t3 = time.perf_counter()
    print(
        json.dumps(
            {"import_ms": (t1 - t0) * 1e3, "open_ms": (t2 - t1) * 1e3, "query_ms": (t3 - t2) * 1e3}
        )
    )


NAIVE_METRICS = ["recall_at_5", "recall_at_20", "mrr", "faithfulness", "answer_correctness"]


def naive_worker(results: str, slim: bool = False) -> None:
    """Child process: the runs overview the naive way (pandas over every file).

    `slim` reads only the columns the overview needs (the kindest naive variant).
    """
    t0 = time.perf_counter()
    import pandas as pd

    t1 = time.perf_counter()
    cols = ["run_id", *NAIVE_METRICS, "total_ms"] if slim else None
    files = sorted(Path(results).glob("*/questions*.parquet"))
    frames = [pd.read_parquet(p, columns=cols) for p in files]
    df = pd.concat(frames, ignore_index=True)
    metrics = NAIVE_METRICS
    g = df.groupby("run_id")
    out = g[metrics].mean().join(g[metrics].quantile(0.1), rsuffix="_p10")
    out = out.join(g["total_ms"].quantile(0.95).rename("total_ms_p95"))
    out["n"] = g.size()
    t2 = time.perf_counter()
    assert len(out) > 0
    print(json.dumps({"import_ms": (t1 - t0) * 1e3, "query_ms": (t2 - t1) * 1e3}))


def _child(args: list[str]) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench(
    results: str, repeat: int = 7, runs: int | None = None, questions: int | None = None
) -> str:
    sys.path.insert(0, str(HERE))
    import synth

    from rageval_core.query import ResultsStore

    res = Path(results)
    n_runs = len(_run_ids(results))
    n_q = questions or 0
    lines = []
    shutil.rmtree(res / ".rageval", ignore_errors=True)
    t = time.perf_counter()
    store = ResultsStore(results)
    build = time.perf_counter() - t
    t = time.perf_counter()
    store.refresh()
    noop = time.perf_counter() - t
    # one more run, then the incremental update
    n_q = n_q or int(store.runs()[0].manifest.dataset.n_questions)
    new_id = synth.generate(results, 1, n_q, start=n_runs)[0]
    t = time.perf_counter()
    store.refresh()
    incr = time.perf_counter() - t
    shutil.rmtree(res / new_id)
    t = time.perf_counter()
    store.refresh()
    incr_rm = time.perf_counter() - t
    lines.append(f"results: {n_runs} runs × {n_q} questions = {n_runs * n_q:,} rows at {results}")
    lines.append(
        f"cache build from scratch: {build * 1e3:,.0f} ms; refresh, nothing new: "
        f"{noop * 1e3:,.0f} ms; after adding one run: {incr * 1e3:,.0f} ms; "
        f"after deleting it: {incr_rm * 1e3:,.0f} ms"
    )
    ids = _run_ids(results)
    calls = _calls(store, ids)
    naive = _child(["--naive-worker", results])
    slim = _child(["--naive-worker", results, "--slim"])
    rows = []
    for name, fn in calls.items():
        fn()
        warm = median_ms(fn, repeat)
        cold = _child(["--worker", name, results])
        rows.append((name, cold, warm))
    lines.append("")
    lines.append(
        "| query | cold ms (open + first call) | warm ms (median) | naive ms | "
        "naive / cold | naive / warm |"
    )
    lines.append("|---|---:|---:|---:|---:|---:|")
    for name, cold, warm in rows:
        c = cold["open_ms"] + cold["query_ms"]
        if name == "runs_overview":
            for label, nv in (
                ("all columns", naive["query_ms"]),
                ("needed cols", slim["query_ms"]),
            ):
                lines.append(
                    f"| {name} vs naive ({label}) | {c:,.0f} ({cold['open_ms']:,.0f} + "
                    f"{cold['query_ms']:,.0f}) | {warm:,.1f} | {nv:,.0f} | {nv / c:,.1f}× | "
                    f"{nv / warm:,.0f}× |"
                )
        else:
            lines.append(
                f"| {name} | {c:,.0f} ({cold['open_ms']:,.0f} + {cold['query_ms']:,.0f})"
                f" | {warm:,.1f} | | | |"
            )
    lines.append("")
    lines.append(
        f"imports (not in cold): query layer {cold['import_ms']:,.0f} ms, "
        f"pandas {naive['import_ms']:,.0f} ms"
    )
    worst = max(w for _, _, w in rows)
    lines.append(f"slowest warm query: {worst:,.1f} ms")
    return "\n".join(lines)


def fold_bench(results: str, sizes: tuple[int, ...] = (2, 20), repeat: int = 7) -> str:
    """Compare's per-question fold alone, SQL against the pandas reference, per run count."""
    import importlib.util

    import pandas as pd

    from rageval_core.query import ResultsStore, compare_runs, fold_changes

    spec = importlib.util.spec_from_file_location("changes_reference", REFERENCE)
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    store = ResultsStore(results)
    ids = _run_ids(results)
    lines = [
        "| runs compared | change rows | question rows | compare_runs ms (fold included) "
        "| fold, SQL ms | fold, pandas ms | pandas / SQL |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in (k for k in sizes if k <= len(ids)):
        picked = ids[:n][::-1]  # the n newest, oldest (the baseline) first
        t = time.perf_counter()
        c = compare_runs(store, picked)
        compare_ms = (time.perf_counter() - t) * 1e3
        cur = store.cursor()
        try:
            times = []
            for _ in range(repeat):
                t = time.perf_counter()
                fold_changes(cur, c.changes, c.run_ids, list(c.metrics["metric"].unique()))
                times.append((time.perf_counter() - t) * 1e3)
        finally:
            cur.close()
        t = time.perf_counter()
        slow = reference.pandas_question_changes(c)  # seconds: timed once
        pandas_ms = (time.perf_counter() - t) * 1e3
        pd.testing.assert_frame_equal(c.questions, slow)
        sql_ms = statistics.median(times)
        lines.append(
            f"| {n} | {len(c.changes):,} | {len(c.questions):,} | {compare_ms:,.0f} "
            f"| {sql_ms:,.1f} | {pandas_ms:,.0f} | {pandas_ms / sql_ms:,.0f}× |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--results", help="existing results location to benchmark")
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--questions", type=int, default=500)
    p.add_argument("--out", help="generate synthetic results here first")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--fold", action="store_true", help="time only Compare's per-question fold")
    p.add_argument("--worker", nargs=2, metavar=("NAME", "RESULTS"), help=argparse.SUPPRESS)
    p.add_argument("--naive-worker", metavar="RESULTS", help=argparse.SUPPRESS)
    p.add_argument("--slim", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        worker(a.worker[1], a.worker[0])
        return 0
    if a.naive_worker:
        naive_worker(a.naive_worker, a.slim)
        return 0
    results = a.results
    if not results:
        if not a.out:
            p.error("give --results DIR or --out DIR to generate")
        sys.path.insert(0, str(HERE))
        import synth

        t = time.perf_counter()
        synth.generate(a.out, a.runs, a.questions, progress=True)
        print(f"generated {a.runs} × {a.questions} in {time.perf_counter() - t:.1f} s")
        results = a.out
    if a.fold:
        print(fold_bench(results, repeat=a.repeat))
    else:
        print(bench(results, a.repeat, questions=a.questions if a.out else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
