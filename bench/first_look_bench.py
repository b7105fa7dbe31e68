"""Where a fresh server's first Runs page goes: imports, first queries, first charts.

    python bench/first_look_bench.py                         # 14 runs × 500 questions
    python bench/first_look_bench.py --tree /tmp/other-checkout --results /tmp/fig-14

Each sample is a new Python process (a fresh server: nothing imported, no cache_data
entry, the store not open), with the derived cache already built as `rageval dashboard`
builds it before the server starts. It times each library's import in turn, then the
Runs page's first run (Streamlit AppTest) with the inclusive time of every `data.*`,
`charts.*` and drawing call. `--tree` times another checkout (a before/after pair on
one machine: the box is shared, so compare ratios from one invocation, not across).

    python bench/first_look_bench.py --first-start --runs 1000 --questions 1000 \
        --tree /work/main --tree .

`--first-start`: `rageval dashboard` over a location without a derived cache (a new
`XDG_CACHE_HOME` per sample), then Debian's chromium (Playwright) on the Runs page:
seconds until the server is healthy, until the Runs page first settled (its heading
drawn, the script run finished) and until it shows the figures (no build progress left).
`--first-page-only` stops each sample at the first page (minutes sooner: the build is not
waited out).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import dashboard_bench  # noqa: E402  (bench/ is not a package: run as a script)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
IMPORTS = (
    "pandas",
    "pyarrow",
    "duckdb",
    "plotly.graph_objects",
    "streamlit",
    "streamlit.testing.v1",
    "rageval_core.query",
    "rageval_core.charts",
    "dashboard.data",
    "dashboard.ui",
)


def child(tree: Path) -> dict:
    imports = {}
    for name in IMPORTS:
        t0 = time.perf_counter()
        importlib.import_module(name)
        imports[name] = (time.perf_counter() - t0) * 1000
    sys.path.insert(0, str(HERE))
    import streamlit as st
    from streamlit import config, env_util
    from streamlit.testing.v1 import AppTest

    from dashboard import data, ui
    from rageval_core import charts

    # what a local server has that AppTest lacks: its address (else the public-dashboard
    # banner is drawn), and no bare-mode check (it walks the stack: 0.8 s per first run)
    config.set_option("server.address", "127.0.0.1")
    env_util.is_repl = lambda: False

    calls = dashboard_bench.Calls()
    for name in (*data._QUERIES, "runs", "problems"):
        if hasattr(data, name):  # a query may be published under another name
            calls.wrap(data, name, f"data.{name}")
    for name in [n for n in dir(charts) if not n.startswith("_")]:
        if getattr(getattr(charts, name), "__module__", "") == charts.__name__:
            calls.wrap(charts, name, f"charts.{name}")
    calls.wrap(ui, "chart", "ui.chart (figure to browser)")
    calls.wrap(st, "dataframe", "st.dataframe")
    at = AppTest.from_file(str(tree / "dashboard" / "streamlit_app.py"), default_timeout=600)
    t0 = time.perf_counter()
    at.run()
    page_ms = (time.perf_counter() - t0) * 1000
    if at.exception or "Runs" not in [t.value for t in at.title]:
        raise SystemExit(f"Runs did not render: {[e.message for e in at.exception]}")
    return {"imports": imports, "page_ms": page_ms, "parts": dict(calls.ms)}


def _sample(tree: Path, results: str) -> dict:
    return dashboard_bench._child(["--child", "--tree", str(tree)], results, __file__, tree=tree)


def _ensure(results: Path, runs: int, questions: int) -> None:
    if not results.exists():
        subprocess.run(
            [
                sys.executable,
                str(HERE / "synth.py"),
                "--runs",
                str(runs),
                "--questions",
                str(questions),
                "--out",
                str(results),
            ],
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    sys.path.insert(0, str(ROOT))
    from rageval_core.query import ResultsStore

    with ResultsStore(str(results)):  # the derived cache, as `rageval dashboard` builds it
        pass


FIGURES_JS = """() => !document.querySelector('[data-testid="stProgress"]')
  && [...document.querySelectorAll('[data-testid="stMetricValue"]')].some(
       e => /[0-9]/.test(e.textContent))"""


def _cpu_s(pid: int) -> tuple[float, float]:
    """CPU seconds of process `pid` itself and of its children it has waited for (the
    build's workers, once their pool is shut down), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return (utime + stime) / tick, (cutime + cstime) / tick


def first_start(tree: Path, results: str, scratch: Path, figures: bool = True) -> dict:
    """One first start of `tree`'s dashboard over `results` (no cache): seconds to each
    step, measured from the command's start, and the server's CPU seconds at each (the
    wall times on a shared machine are other jobs' too; its CPU time is its own)."""
    import asyncio
    import tempfile

    from sessions_bench import CHROMIUM, settle, start_server

    xdg = tempfile.mkdtemp(prefix="xdg-", dir=scratch)
    env = {**os.environ, "XDG_CACHE_HOME": xdg, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    proc, url = start_server(results, env, Path(xdg) / "server.log", cwd=tree)
    healthy = time.perf_counter() - t0

    cpu: dict[str, float] = {}

    async def browse() -> tuple[float, float]:
        from playwright.async_api import async_playwright

        from tests.conftest import CHROMIUM_ARGS

        async with async_playwright() as p:
            browser = await p.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            page = await browser.new_page(viewport={"width": 1400, "height": 1000})
            await settle(page, url, "Runs")
            first = time.perf_counter() - t0
            cpu["first_page_cpu_s"] = _cpu_s(proc.pid)[0]
            if not figures:
                await browser.close()
                return first, math.nan
            while not await page.evaluate(FIGURES_JS):
                await asyncio.sleep(0.1)
            done = time.perf_counter() - t0
            cpu["figures_cpu_s"], cpu["workers_cpu_s"] = _cpu_s(proc.pid)
            await browser.close()
        return first, done

    try:
        first, shown = asyncio.run(browse())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # busy writing a segment of the build
            proc.kill()
            proc.wait()
    cpu.setdefault("figures_cpu_s", math.nan)
    cpu.setdefault("workers_cpu_s", math.nan)
    return {"healthy_s": healthy, "first_page_s": first, "figures_s": shown, **cpu}


def main_first_start(trees: list[Path], results: str, reps: int, figures: bool = True) -> None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="rageval-first-start-") as d:
        samples: dict[Path, list[dict]] = {t: [] for t in trees}
        for _ in range(reps):  # interleaved, as above
            for t in trees:
                samples[t].append(first_start(t, results, Path(d), figures))
                print(f"{t}: {samples[t][-1]}", file=sys.stderr)
    for t, got in samples.items():
        med = {k: statistics.median(s[k] for s in got) for k in got[0]}
        spread = {k: f"{min(s[k] for s in got):.1f}–{max(s[k] for s in got):.1f}" for k in med}
        figures = (
            f", its figures {med['figures_s']:.1f} s ({spread['figures_s']})"
            if not math.isnan(med["figures_s"])
            else ""
        )
        cpu = (
            f", at its figures {med['figures_cpu_s']:.1f} s (+ workers "
            f"{med['workers_cpu_s']:.1f} s)"
            if figures
            else ""
        )
        print(
            f"\n{t}: first start (median of {reps}): healthy {med['healthy_s']:.1f} s "
            f"({spread['healthy_s']}), Runs page {med['first_page_s']:.1f} s "
            f"({spread['first_page_s']}){figures}; server CPU at the Runs page "
            f"{med['first_page_cpu_s']:.1f} s ({spread['first_page_cpu_s']}){cpu}"
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=14)
    p.add_argument("--questions", type=int, default=500)
    p.add_argument("--results", help="results to open (default /tmp/rageval-first-RxQ)")
    p.add_argument("--tree", action="append", help="checkout(s) to time (default: this one)")
    p.add_argument("--reps", type=int, default=3, help="fresh processes per tree (median)")
    p.add_argument("--first-start", action="store_true", help="time a first start (see above)")
    p.add_argument(
        "--first-page-only", action="store_true", help="--first-start: stop at the first page"
    )
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    trees = [Path(t).resolve() for t in a.tree or [str(ROOT)]]
    if a.child:
        print(json.dumps(child(trees[0])))
        return 0
    results = Path(a.results or f"/tmp/rageval-first-{a.runs}x{a.questions}")
    if a.first_start:
        sys.path.insert(0, str(ROOT))  # tests/conftest.py: the browser flags
        main_first_start(trees, str(results), a.reps, not a.first_page_only)
        return 0
    _ensure(results, a.runs, a.questions)
    totals = {}
    # interleaved, so a burst of load on the shared box hits every tree alike
    samples: dict[Path, list[dict]] = {t: [] for t in trees}
    for _ in range(a.reps):
        for t in trees:
            samples[t].append(_sample(t, str(results)))
    for t, got in samples.items():
        imports = {n: statistics.median(s["imports"][n] for s in got) for n in IMPORTS}
        page = statistics.median(s["page_ms"] for s in got)
        parts = {
            n: statistics.median(s["parts"].get(n, 0.0) for s in got)
            for n in {n for s in got for n in s["parts"]}
        }
        total = sum(imports.values()) + page
        totals[t] = total
        print(f"\n{t}: fresh server to first Runs render {total:,.0f} ms (median of {a.reps})")
        print(
            f"  imports {sum(imports.values()):,.0f} ms: "
            + ", ".join(f"{n} {ms:,.0f}" for n, ms in imports.items())
        )
        print(f"  Runs page first run {page:,.0f} ms; slowest parts:")
        for n, ms in sorted(parts.items(), key=lambda kv: -kv[1])[:8]:
            print(f"    {n:<40} {ms:>8,.0f} ms")
    if len(trees) > 1:
        first = totals[trees[0]]
        for t in trees[1:]:
            print(f"\n{t} / {trees[0]}: {totals[t] / first:.2f}× the first tree's time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
