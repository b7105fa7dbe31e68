"""Time every dashboard page's server-side run (Streamlit AppTest) on synthetic results.

    python bench/dashboard_bench.py --runs 1000 --questions 1000   # /tmp/rageval-dash-1000x1000
    python bench/dashboard_bench.py --runs 100 --questions 500 --out /tmp/r-small
    python bench/dashboard_bench.py --results /tmp/somewhere        # reuse existing results
    python bench/dashboard_bench.py --runs 20 --questions 1000 --compare 20 --pages Compare

Results come from `bench/synth.py` (generated once, reused when present). Measured, each
in a fresh Python process so Streamlit's in-memory caches start empty:

- cache build: `ResultsStore(location)` when `<results>/.rageval/` is missing (once);
  then opening the store with the cache built.
- cold: the page as the first page of a new session right after the server started,
  until it shows its figures (reruns while the first listing runs on its thread):
  libraries and dashboard modules already imported (reported apart), store not open,
  every `st.cache_data` query missing. One process per page.
- warm: median of `--reps` reruns of the page in one session after a first run (what a
  widget change or a second visitor costs); with the inclusive time of each `data.*`,
  `charts.*` and drawing call of a rerun, so a slow page names its slow part.

Compare opens on the `--compare` newest runs (the oldest of them the baseline) through its
URL, as a shared link would: 2 is the page's own default, 20 the most a URL may name.

Targets (SPEC §7, 2 shared cores): warm ≤ 1 s per page, cold ≤ 3 s.
AppTest runs the script exactly as the server does minus the websocket, so browser-side
drawing is not in these figures (see tests/e2e for the real browser).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ENTRY = ROOT / "dashboard" / "streamlit_app.py"
WARM_TARGET_MS = 1000
COLD_TARGET_MS = 3000
PAGE_TIMEOUT_S = 900  # generous: a slow page is the finding, not a reason to stop timing

# (label, page file relative to the entry, query params; "{newest}"/"{question}" filled in,
# a list value is one parameter per item: "{compare}" the runs compared, baseline first)
PAGES: list[tuple[str, str, dict[str, str]]] = [
    ("Runs", "app_pages/runs.py", {}),
    ("Diagnose", "app_pages/diagnose.py", {}),
    ("Tails", "app_pages/tails.py", {}),
    ("Retrieval", "app_pages/retrieval.py", {}),
    ("Cost & latency", "app_pages/cost.py", {}),
    ("Compare", "app_pages/compare.py", {"runs": ["{compare}"], "baseline": "{baseline}"}),
    ("Question (picker)", "app_pages/question.py", {}),
    (
        "Question (deep link)",
        "app_pages/question.py",
        {"run": "{newest}", "question": "{question}"},
    ),
    # Labels come from `labels/` beside the results (bench/labels_bench.py writes 50,000).
    ("Review", "app_pages/review.py", {"run": "{newest}", "size": "40"}),
    ("Judge", "app_pages/judge.py", {}),
]


# ---------------------------------------------------------------------------- child side


def _preimport() -> float:
    """Import what a running server has imported before its first session (its warm-up,
    `dashboard/serve.py`, where the checkout has one); return ms."""
    t0 = time.perf_counter()
    import streamlit  # noqa: F401
    from streamlit.testing.v1 import AppTest  # noqa: F401

    try:
        from dashboard.serve import prepare
    except ImportError:  # a checkout from before the warm-up: what its first page imported
        import duckdb  # noqa: F401
        import pandas  # noqa: F401
        import plotly.graph_objects  # noqa: F401
        import pyarrow  # noqa: F401

        import dashboard.data  # noqa: F401
        import dashboard.ui  # noqa: F401
        import rageval_core.charts  # noqa: F401
        import rageval_core.query  # noqa: F401
    else:
        prepare()
    return (time.perf_counter() - t0) * 1000


@dataclass(frozen=True)
class Target:
    """What the parameterised pages open on."""

    newest: str
    question: str
    compare: tuple[str, ...]  # baseline first

    def args(self) -> list[str]:
        return ["--newest", self.newest, "--question", self.question, "--ids", *self.compare]


def _params(page: int, t: Target) -> dict[str, str | list[str]]:
    fill = {"newest": t.newest, "question": t.question, "baseline": t.compare[0]}
    out: dict[str, str | list[str]] = {}
    for k, v in PAGES[page][2].items():
        out[k] = list(t.compare) if v == ["{compare}"] else v.format(**fill)
    return out


def _app(page: int, t: Target):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ENTRY), default_timeout=PAGE_TIMEOUT_S)
    # Every page's url_path is its file's stem, so switching before the first run opens
    # that page directly (TESTING.md: it would fall back to Runs otherwise).
    at.switch_page(PAGES[page][1])
    for k, v in _params(page, t).items():
        at.query_params[k] = v
    return at


def _check(at, page: int) -> None:
    if at.exception:
        raise SystemExit(f"{PAGES[page][0]} raised: {at.exception[0].message}")
    want = PAGES[page][0].split(" (")[0]
    titles = [t.value for t in at.title]
    if want not in titles:
        raise SystemExit(f"expected page {want!r}, AppTest rendered {titles}")


def _drawn(at) -> None:
    """Run the page until it is drawn with its figures: a new process lists the location
    on a thread after its first page (`data.start_build`), and until that is done every
    page but Runs shows only "opens when the figures are summarised", which is not what
    a cold or warm figure of that page means."""
    from dashboard import data

    at.run()
    deadline = time.monotonic() + PAGE_TIMEOUT_S
    while data.build_progress() is not None and time.monotonic() < deadline:
        time.sleep(0.05)
        at.run()


def child_cold(page: int, t: Target) -> dict:
    imports = _preimport()
    at = _app(page, t)
    t0 = time.perf_counter()
    _drawn(at)  # the first visitor waits for the figures too
    ms = (time.perf_counter() - t0) * 1000
    _check(at, page)
    return {"imports_ms": imports, "cold_ms": ms}


class Calls:
    """Inclusive wall time per wrapped function during one rerun."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = defaultdict(float)

    def wrap(self, module, name: str, label: str) -> None:
        fn = getattr(module, name)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.ms[label] += (time.perf_counter() - t0) * 1000

        setattr(module, name, timed)


def child_warm(pages: list[int], t: Target, reps: int) -> dict:
    _preimport()
    import streamlit as st

    from dashboard import data, ui
    from rageval_core import charts

    calls = Calls()
    for name in (*data._QUERIES, "runs", "problems"):
        if hasattr(data, name):  # a query may be published under another name
            calls.wrap(data, name, f"data.{name}")
    for name in [n for n in dir(charts) if not n.startswith("_") and callable(getattr(charts, n))]:
        if getattr(getattr(charts, name), "__module__", "") == charts.__name__:
            calls.wrap(charts, name, f"charts.{name}")
    for name in ("chart", "question_table", "safe_text"):
        calls.wrap(ui, name, f"ui.{name}")
    calls.wrap(st, "dataframe", "st.dataframe")

    out = {}
    for page in pages:
        at = _app(page, t)
        _drawn(at)  # fills the caches this page needs
        _check(at, page)
        times, breakdowns = [], []
        for _ in range(reps):
            calls.ms.clear()
            t0 = time.perf_counter()
            at.run()
            times.append((time.perf_counter() - t0) * 1000)
            breakdowns.append(dict(calls.ms))
            _check(at, page)
        names = {n for b in breakdowns for n in b}
        parts = {n: statistics.median(b.get(n, 0.0) for b in breakdowns) for n in names}
        out[PAGES[page][0]] = {"warm_ms": statistics.median(times), "parts": parts}
    return out


# ---------------------------------------------------------------------------- parent side


def _child(
    args: list[str],
    results: str,
    script: str = __file__,
    env: dict[str, str] | None = None,
    tree: Path = ROOT,
) -> dict:
    """Run `script` (this bench by default) with `args` over `results`; its last line's JSON.
    `env`: more variables (another bench sets where the derived cache lives); `tree`: the
    checkout whose code it runs (another bench times two side by side)."""
    env = {**os.environ, "RAGEVAL_RESULTS": results, "PYTHONPATH": str(tree), **(env or {})}
    proc = subprocess.run(
        [sys.executable, script, *args],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"child {args} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _store_times(results: str) -> dict:
    """Cache build (only when missing) and a plain open with the cache in place."""
    code = (
        "import json, time; t0 = time.perf_counter(); "
        "from rageval_core.query import ResultsStore; t1 = time.perf_counter(); "
        f"s = ResultsStore({results!r}); t2 = time.perf_counter(); "
        "print(json.dumps({'import_ms': (t1 - t0) * 1000, 'open_ms': (t2 - t1) * 1000}))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    built = (Path(results) / ".rageval").exists()

    def once() -> dict:
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    build = None if built else once()["open_ms"]
    return {"build_ms": build, "open_ms": once()["open_ms"]}


def _ensure_results(results: Path, runs: int, questions: int) -> None:
    have = (
        [p for p in results.iterdir() if (p / "manifest.json").exists()] if results.exists() else []
    )
    if have:
        print(f"reusing {len(have)} runs at {results}", file=sys.stderr)
        return
    sys.path.insert(0, str(HERE))
    from synth import generate

    t0 = time.perf_counter()
    print(f"generating {runs} runs × {questions} questions at {results} …", file=sys.stderr)
    generate(results, runs, questions, progress=True)
    print(f"generated in {time.perf_counter() - t0:.0f} s", file=sys.stderr)


def _run_ids(results: Path) -> list[str]:
    """Run ids, oldest first (synthetic ids sort by time)."""
    return sorted(p.name for p in results.iterdir() if (p / "manifest.json").exists())


def _first_question(results: Path, run_id: str) -> str:
    import pyarrow.parquet as pq

    table = pq.read_table(results / run_id / "questions.parquet", columns=["question_id"])
    return str(table.column("question_id")[0])


def _fmt(ms: float | None) -> str:
    return "–" if ms is None else f"{ms:,.0f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--questions", type=int, default=1000)
    p.add_argument("--out", help="where to generate (default /tmp/rageval-dash-RxQ)")
    p.add_argument("--results", help="existing results to time (nothing generated)")
    p.add_argument("--reps", type=int, default=5, help="warm reruns per page (median)")
    p.add_argument("--top", type=int, default=3, help="slowest parts shown per page")
    p.add_argument(
        "--compare", type=int, default=2, help="runs the Compare page compares (newest; ≤ 20)"
    )
    p.add_argument("--pages", help="comma-separated page labels to time (default: all)")
    p.add_argument("--child", choices=["cold", "warm"], help=argparse.SUPPRESS)
    p.add_argument("--page", type=int, help=argparse.SUPPRESS)
    p.add_argument("--newest", help=argparse.SUPPRESS)
    p.add_argument("--question", help=argparse.SUPPRESS)
    p.add_argument("--ids", nargs="*", help=argparse.SUPPRESS)
    p.add_argument("--only", type=int, nargs="*", help=argparse.SUPPRESS)
    a = p.parse_args(argv)

    if a.child:
        t = Target(a.newest, a.question, tuple(a.ids))
        out = child_cold(a.page, t) if a.child == "cold" else child_warm(a.only, t, a.reps)
        print(json.dumps(out))
        return 0

    results = Path(a.results or a.out or f"/tmp/rageval-dash-{a.runs}x{a.questions}")
    if not a.results:
        _ensure_results(results, a.runs, a.questions)
    ids = _run_ids(results)
    newest = ids[-1]
    question = _first_question(results, newest)
    if not 2 <= a.compare <= min(20, len(ids)):
        p.error(f"--compare takes 2 to {min(20, len(ids))} runs here")
    target = Target(newest, question, tuple(ids[-a.compare :]))
    wanted = {w.strip() for w in a.pages.split(",")} if a.pages else {lb for lb, _, _ in PAGES}
    # "Question" names both Question views; "Question (picker)" just that one
    pages = [i for i, (lb, _, _) in enumerate(PAGES) if {lb, lb.split(" (")[0]} & wanted]
    if not pages:
        p.error(f"--pages: none of {wanted} is a page label")
    loc = str(results)

    store = _store_times(loc)
    common = target.args()
    cold = {i: _child(["--child", "cold", "--page", str(i), *common], loc) for i in pages}
    only = ["--only", *map(str, pages)]
    warm = _child(["--child", "warm", "--reps", str(a.reps), *only, *common], loc)

    print(f"\nresults: {len(ids)} runs at {loc} (newest {newest}); Compare: {a.compare} runs")
    print(
        f"cache build: {_fmt(store['build_ms'])} ms"
        + (" (already built; delete .rageval/ to time it)" if store["build_ms"] is None else "")
        + f"; store open with cache: {_fmt(store['open_ms'])} ms; "
        f"imports before the first page (not in cold): {_fmt(cold[pages[0]]['imports_ms'])} ms\n"
    )
    print(
        f"| page | cold ms (≤ {COLD_TARGET_MS:,}) | warm ms (≤ {WARM_TARGET_MS:,}) "
        "| slowest parts of a warm rerun (ms, inclusive) |"
    )
    print("|---|---:|---:|---|")
    misses = []
    for i in pages:
        label, c = PAGES[i][0], cold[i]
        w = warm[label]
        parts = sorted(w["parts"].items(), key=lambda kv: -kv[1])[: a.top]
        flag_c = " ✗" if c["cold_ms"] > COLD_TARGET_MS else ""
        flag_w = " ✗" if w["warm_ms"] > WARM_TARGET_MS else ""
        if flag_c or flag_w:
            misses.append(label)
        print(
            f"| {label} | {_fmt(c['cold_ms'])}{flag_c} | {_fmt(w['warm_ms'])}{flag_w} | "
            + ", ".join(f"{n} {v:,.0f}" for n, v in parts)
            + " |"
        )
    print("\nall pages within target" if not misses else f"\nmissed target: {', '.join(misses)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
