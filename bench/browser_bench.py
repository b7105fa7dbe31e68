"""What a reader waits for in the browser: every dashboard page's first paint, settled
time, bytes sent and element count, at each size, before and after a change.

    python bench/browser_bench.py --sizes 10x100,1000x1000 --out /tmp/scale
    python bench/browser_bench.py --results /tmp/mixed-20 --shots docs/screenshots/mixed-20
    python bench/browser_bench.py --sizes 10x100,1000x1000 --tree /tmp/before --tree .

Per results location (synthetic `OUT/rRUNSxQUESTIONS` from `bench/synth.py`, shared with
`bench/scale_bench.py`, or `--results`, e.g. the 20-run set of `bench/mixed_set.py`) and
per checkout (`--tree`: a before/after pair, one after the other; compare the two from one
invocation, the box is shared), one real `rageval dashboard` server with its derived cache
built before it starts, and Debian's chromium (Playwright) at 1,280 × 900, a new tab (one
Streamlit session) per visit:

- restart: the Runs page as the first visit after the server started;
- first: each page's first visit (the server's `st.cache_data` has no entry for it), in a
  new browser profile (nothing cached: the frontend's ~10 MB of scripts are loaded too —
  Streamlit serves them uncompressed and immutable, for the browser to keep);
- warm: the median of `--reps` further visits in one profile that has been there before
  (a returning reader: its browser holds the scripts, the server its queries).

A page a checkout does not have (an older one) is left out of its figures.

Each visit records: settled (seconds from navigation until the page's heading is drawn,
Streamlit marks its run finished, nothing is stale and every plotly chart and grid on it
has drawn — polled from here, not with in-page timers, which chromium throttles), first
contentful paint (the browser's own entry), websocket bytes and messages the server sent,
HTTP bytes the page loaded, the page's element count and the server's CPU seconds during
the visit (settled minus that is, roughly, the browser's and the wire's share).

The last table gives every page's figures at each size over the first size's (the goal:
warm and restart within 1.5× of 10 × 100 at 1,000 × 1,000). `--shots DIR` also writes a
full-page PNG of each page's first visit (the first tree only).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]
from sessions_bench import CHROMIUM, _cpu_s, start_server  # noqa: E402
from synth import figure_log, generate  # noqa: E402

from dashboard.pages import PAGES  # noqa: E402
from rageval_core.links import DEFAULT_PAGE  # noqa: E402

SETTLE_S = 60.0
VIEWPORT = {"width": 1280, "height": 900}
SETTLED_JS = """(title) => {
  const h = [...document.querySelectorAll('h1')].some(e => e.textContent.trim() === title);
  if (!h || !document.querySelector('[data-testid="stApp"][data-test-script-state="notRunning"]')
      || document.querySelector('[data-stale="true"]')) return false;
  // only what is on show: a grid in a tab or an expander not opened, or below the fold,
  // is never drawn (Compare's "identical settings" grid sits in a closed expander)
  const shown = sel => [...document.querySelectorAll(sel)].filter(
      e => e.offsetParent !== null && !e.closest('details:not([open])')
           && e.getBoundingClientRect().top < window.innerHeight);
  const charts = shown('[data-testid="stPlotlyChart"]');
  const grids = shown('[data-testid="stDataFrame"]');
  return charts.every(c => c.querySelector('.main-svg'))
      && grids.every(g => g.querySelector('canvas'));
}"""
MEASURE_JS = """() => {
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  const loaded = performance.getEntriesByType('resource').concat(
      performance.getEntriesByType('navigation'));
  return {
    fcp_ms: paint ? paint.startTime : null,
    elements: document.getElementsByTagName('*').length,
    http_bytes: loaded.reduce((n, e) => n + (e.transferSize || 0), 0),
  };
}"""


@dataclass(frozen=True)
class Visit:
    settled_s: float
    fcp_ms: float | None
    ws_bytes: int
    ws_messages: int
    http_bytes: int
    elements: int
    server_cpu_s: float


def address(base: str, key: str) -> str:
    return base + "/" + ("" if key == DEFAULT_PAGE else PAGES[key].url_path)


def visit(ctx, base: str, key: str, pid: int, shot: Path | None = None) -> Visit:
    """One new session (a new tab of browser context `ctx`) opening page `key`, until it
    settled."""
    page = ctx.new_page()
    sent = [0, 0]

    def frame(payload: str | bytes) -> None:
        sent[0] += len(payload)
        sent[1] += 1

    page.on("websocket", lambda ws: ws.on("framereceived", frame))
    cpu0, t0 = _cpu_s(pid), time.perf_counter()
    page.goto(address(base, key), timeout=SETTLE_S * 1000)
    title = PAGES[key].title
    while not page.evaluate(SETTLED_JS, title):
        if time.perf_counter() - t0 > SETTLE_S:  # said, and the other pages still measured
            print(f"{title} did not settle in {SETTLE_S:.0f} s at {page.url}", file=sys.stderr)
            break
        time.sleep(0.05)
    settled, cpu = time.perf_counter() - t0, _cpu_s(pid) - cpu0
    if page.locator('[data-testid="stException"]').count():
        raise SystemExit(f"{title} raised in the browser at {page.url}")
    measured = page.evaluate(MEASURE_JS)
    if shot is not None:
        from tests.e2e.conftest import screenshot  # the browser tests' full-page shot

        screenshot(page, key, shot)
    page.close()
    return Visit(
        settled,
        measured["fcp_ms"],
        sent[0],
        sent[1],
        measured["http_bytes"],
        measured["elements"],
        cpu,
    )


def measure(
    tree: Path, results: str, xdg: str, reps: int, shots: Path | None, pages: list[str]
) -> dict:
    """Every page of one server of `tree` over `results`: restart, first and warm visits."""
    from playwright.sync_api import sync_playwright

    from tests.conftest import CHROMIUM_ARGS

    # labels of its own: the default, `labels` beside the results, may hold anyone's
    env = {**os.environ, "XDG_CACHE_HOME": xdg, "PYTHONPATH": str(tree)}
    env.setdefault("RAGEVAL_LABELS", str(Path(xdg) / "labels"))
    proc, base = start_server(results, env, Path(xdg) / "browser-bench-server.log", cwd=tree)
    out: dict = {"first": {}, "warm": {}}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            returning = browser.new_context(viewport=VIEWPORT)
            out["restart"] = visit(returning, base, DEFAULT_PAGE, proc.pid)
            for key in [k for k in pages if (tree / "dashboard" / PAGES[k].path).exists()]:
                new = browser.new_context(viewport=VIEWPORT)
                out["first"][key] = visit(new, base, key, proc.pid, shots)
                new.close()
                out["warm"][key] = [visit(returning, base, key, proc.pid) for _ in range(reps)]
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return out


def _median(visits: list[Visit]) -> Visit:
    def mid(name: str):
        values = [getattr(v, name) for v in visits if getattr(v, name) is not None]
        return statistics.median(values) if values else None

    return Visit(**{name: mid(name) for name in asdict(visits[0])})


def _row(name: str, v: Visit) -> str:
    fcp = "–" if v.fcp_ms is None else f"{v.fcp_ms:.0f}"
    return (
        f"| {name} | {v.settled_s:.2f} | {fcp} | {v.ws_bytes / 1024:.0f} | {v.ws_messages:.0f} "
        f"| {v.http_bytes / 1024:.0f} | {v.elements:.0f} | {v.server_cpu_s:.2f} |"
    )


HEADER = (
    "| page | settled s | first paint ms | ws KB | ws msgs | http KB | elements | server CPU s |\n"
    "|---|---|---|---|---|---|---|---|"
)


def table(fig: dict) -> list[str]:
    lines = [HEADER, _row("restart: runs", fig["restart"])]
    lines += [_row(f"first: {k}", v) for k, v in fig["first"].items()]
    lines += [_row(f"warm: {k}", _median(v)) for k, v in fig["warm"].items()]
    return lines


def ratios(figs: dict[str, dict]) -> list[str]:
    """Settled time at each location over the first location's, per page."""
    names = list(figs)
    base = figs[names[0]]
    lines = [
        "| page | " + " | ".join(f"{n} / {names[0]}" for n in names[1:]) + " |",
        "|---" * len(names) + "|",
    ]

    def settled(fig: dict, kind: str, key: str) -> float:
        got = fig[kind] if kind == "restart" else fig[kind][key]
        return _median(got).settled_s if isinstance(got, list) else got.settled_s

    keys = [k for k in base["first"] if all(k in f["first"] for f in figs.values())]
    rows = [("restart", "runs")] + [(kind, k) for kind in ("first", "warm") for k in keys]
    for kind, key in rows:
        cells = [
            f"{settled(figs[n], kind, key) / settled(base, kind, key):.2f}×" for n in names[1:]
        ]
        lines.append(f"| {kind}: {key} | " + " | ".join(cells) + " |")
    return lines


def locations(a: argparse.Namespace) -> dict[str, tuple[str, str]]:
    """Name → (results location, XDG cache folder), generating synthetic sizes if missing."""
    if a.results:
        return {Path(a.results).name: (a.results, f"{a.results.rstrip('/')}.xdg")}
    got = {}
    for size in a.sizes.split(","):
        runs, questions = (int(n) for n in size.split("x"))
        results = Path(a.out) / f"r{runs}x{questions}"
        if not results.exists():
            generate(results, runs, questions, workers=os.cpu_count() or 1)
        got[size] = (str(results), str(Path(a.out) / f"xdg-{size}"))
        build_cache(*got[size])
    return got


def build_cache(results: str, xdg: str) -> None:
    """The derived cache brought up to date before any server starts (a no-op when it is):
    else a first start over 100 runs or more builds it in the background while the pages
    are timed."""
    env = {**os.environ, "XDG_CACHE_HOME": xdg, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(HERE / "scale_bench.py"), "--child", "build", results]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="10x100,1000x1000", help="RUNSxQUESTIONS,…")
    p.add_argument("--out", default="/tmp/scale", help="where synthetic sizes are kept")
    p.add_argument("--results", help="one existing results location instead of --sizes")
    p.add_argument("--tree", action="append", type=Path, help="checkout(s) to time")
    p.add_argument("--reps", type=int, default=3, help="warm visits per page (median)")
    p.add_argument("--pages", default=",".join(PAGES), help="page keys, comma-separated")
    p.add_argument("--shots", type=Path, help="write each page's PNG here (first tree)")
    p.add_argument("--log", help="a file the figures are also appended to")
    a = p.parse_args(argv)
    log = figure_log(a.log)
    trees = [t.resolve() for t in (a.tree or [ROOT])]
    if a.shots:
        os.environ["RAGEVAL_SCREENSHOTS"] = "1"
    load = os.getloadavg()[0]
    log(f"\n## browser_bench {time.strftime('%Y-%m-%d %H:%M:%S')}, load {load:.2f}")
    for tree in trees:
        figs: dict[str, dict] = {}
        for name, (results, xdg) in locations(a).items():
            Path(xdg).mkdir(parents=True, exist_ok=True)
            shots = a.shots if tree == trees[0] else None
            figs[name] = measure(tree, results, xdg, a.reps, shots, a.pages.split(","))
            log(f"\n### {tree} — {name} ({results})\n")
            for line in table(figs[name]):
                log(line)
        if len(figs) > 1:
            log(f"\n### {tree}: settled time over {next(iter(figs))}\n")
            for line in ratios(figs):
                log(line)
    log(f"\nload after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
