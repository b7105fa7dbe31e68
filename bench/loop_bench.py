"""Time the daily loop's additions on synthetic results (bench/synth.py): the headline at the
end of `rageval run`, `rageval runs`, flaky questions of one config series, compare with
and without flaky marking, one answer diff, and what the first refresh's progress callback
costs. Prints figures (median ms) and ratios; asserts nothing.

    python bench/loop_bench.py --runs 100 --questions 500 --out /tmp/loop-small
    python bench/loop_bench.py --results /tmp/rq-big        # reuse generated results
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from timing import median_ms  # bench/timing.py: run as a script, bench/ is on the path

HERE = Path(__file__).resolve().parent


def bench(results: str, repeat: int) -> str:
    from rageval_core.query import (
        ResultsStore,
        answer_diff,
        compare_runs,
        run_flaky,
        run_headline,
        run_lines,
    )
    from rageval_core.query import _compare as compare_mod

    lines = []
    with tempfile.TemporaryDirectory() as cache:
        store = ResultsStore(results, read_only=True, cache_dir=cache, refresh=False)
        t = time.perf_counter()
        store.refresh()
        plain = (time.perf_counter() - t) * 1000
    with tempfile.TemporaryDirectory() as cache:
        calls = []
        store = ResultsStore(results, read_only=True, cache_dir=cache, refresh=False)
        t = time.perf_counter()
        store.refresh(lambda *a: calls.append(a))
        reported = (time.perf_counter() - t) * 1000
        lines.append(
            f"first refresh (cache build): {plain:,.0f} ms; with progress: {reported:,.0f} ms "
            f"({reported / plain:.2f}×, {len(calls)} reports)"
        )
        ids = [r.run_id for r in sorted(store.runs(), key=lambda r: r.manifest.created_at)]
        newest = ids[-1]
        same = [r for r in ids if r.split("-", 2)[2] == newest.split("-", 2)[2]]
        base = same[-2]
        qid = "q00001"
        cold = median_ms(lambda: run_flaky(store, newest), 1)
        figures = {
            "run_headline (end of rageval run)": median_ms(
                lambda: run_headline(store, newest), repeat
            ),
            "run_lines (rageval runs, cache built)": median_ms(lambda: run_lines(store), repeat),
            "run_flaky (one config series, memoised)": median_ms(
                lambda: run_flaky(store, newest), repeat
            ),
            "answer_diff (one question, two runs)": median_ms(
                lambda: answer_diff(store, base, newest, qid), repeat
            ),
        }
        with_flaky = median_ms(lambda: compare_runs(store, [base, newest], n_resamples=200), repeat)
        real = compare_mod.mark_flaky
        compare_mod.mark_flaky = lambda store, infos, q: q
        try:
            without = median_ms(
                lambda: compare_runs(store, [base, newest], n_resamples=200), repeat
            )
        finally:
            compare_mod.mark_flaky = real
        lines.append(f"runs: {len(ids):,}; series of {newest}: {len(same):,} runs")
        lines += [f"{name:<44} {v:>9,.1f} ms" for name, v in figures.items()]
        lines.append(f"{'run_flaky (first call: scans the series)':<44} {cold:>9,.1f} ms")
        lines.append(
            f"{'compare_runs(2) with flaky marking':<44} {with_flaky:>9,.1f} ms "
            f"({with_flaky / without:.2f}× of {without:,.1f} ms without)"
        )
        store.close()
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--results", help="existing results folder")
    p.add_argument("--out", help="generate synthetic results here")
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--questions", type=int, default=500)
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args(argv)
    results = a.results
    if not results:
        if not a.out:
            p.error("give --results DIR or --out DIR to generate")
        sys.path.insert(0, str(HERE))
        import synth

        synth.generate(a.out, a.runs, a.questions)
        results = a.out
    print(bench(results, a.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
