"""Many viewers on one dashboard server: each session's settled time and the server's RSS.

    python bench/sessions_bench.py --results /tmp/scale/r1000x1000 --xdg /tmp/scale/xdg-1000x1000
    python bench/sessions_bench.py --runs 1000 --questions 1000 --sessions 20

One `rageval dashboard` server (the derived cache built before it starts, or under
`--xdg` when already there) and Debian's chromium through Playwright (TESTING.md), one
browser context per session, i.e. one Streamlit session each:

1. sequential: session 1 opens Runs, then Diagnose; sessions 2 … N do the same one after
   the other and stay open. The server's RSS after each session shows what a session
   costs: the store and its query results are shared (`st.cache_resource` /
   `st.cache_data`), so an extra session should add its widget state, not the data.
2. concurrent: N new sessions open Runs at the same moment (what a team opening the
   link from a chat message does); each one's settled time.

The server's RSS is sampled every 0.25 s throughout (`/proc/PID/status`, VmRSS) and
printed as a timeline. A page is settled when its heading is visible, Streamlit marks
its script run finished and nothing on it is stale.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]  # synth.py, and tests/ for the browser flags
from synth import figure_log, generate  # noqa: E402  (bench/ is not a package)

CHROMIUM = "/usr/bin/chromium"
SETTLE_MS = 120_000
VIEWS = [("Runs", ""), ("Diagnose", "diagnose")]  # (heading, url path)


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process has used so far."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Sampler(threading.Thread):
    """The server's RSS every `every` seconds, with what the bench was doing then."""

    def __init__(self, pid: int, every: float = 0.25):
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.t0 = time.monotonic()
        self.phase = "idle"
        self.samples: list[tuple[float, str, float]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.samples.append((time.monotonic() - self.t0, self.phase, _rss_mb(self.pid)))
            except OSError:
                return
            self.stop.wait(self.every)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(
    results: str, env: dict[str, str], log: Path, cwd: Path = ROOT
) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    cmd = [sys.executable, "-m", "rageval_core.cli", "dashboard", "--results", results]
    cmd += ["--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 1800  # the command builds a missing cache first
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"dashboard exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.terminate()
            raise SystemExit(f"dashboard not healthy:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


SETTLED_JS = """() => {
  const h = [...document.querySelectorAll('h1')].some(e => e.textContent.trim() === TITLE);
  return h && document.querySelector('[data-testid="stApp"][data-test-script-state="notRunning"]')
           && !document.querySelector('[data-stale="true"]');
}"""


async def settle(page, url: str, title: str) -> float:
    """Open `url` and wait until the page titled `title` settled; seconds. Polled from
    here, not with in-page timers (which chromium throttles in pages nobody looks at)."""
    t0 = time.perf_counter()
    await page.goto(url, timeout=SETTLE_MS)
    check = SETTLED_JS.replace("TITLE", json.dumps(title))
    while not await page.evaluate(check):
        if time.perf_counter() - t0 > SETTLE_MS / 1000:
            raise SystemExit(f"{title} did not settle in {SETTLE_MS / 1000:.0f} s")
        await asyncio.sleep(0.05)
    if await page.locator('[data-testid="stException"]').count():
        raise SystemExit(f"{title} raised in the browser")
    return time.perf_counter() - t0


async def session(browser, base: str, views: list[tuple[str, str]]) -> tuple[object, list[float]]:
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await ctx.new_page()
    times = [await settle(page, f"{base}/{path}", title) for title, path in views]
    return ctx, times


async def drive(base: str, n: int, sampler: Sampler, log) -> dict:
    from playwright.async_api import async_playwright

    out: dict = {"sequential": [], "concurrent": []}
    async with async_playwright() as p:
        from tests.conftest import CHROMIUM_ARGS  # the flags the browser tests use

        browser = await p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        kept = []
        for i in range(n):
            sampler.phase = f"session {i + 1}"
            ctx, times = await session(browser, base, VIEWS)
            kept.append(ctx)
            await asyncio.sleep(1.0)  # the session's reruns done, memory settled
            rss = _rss_mb(sampler.pid)
            out["sequential"].append((times, rss))
            log(
                f"session {i + 1:2d}: "
                + ", ".join(f"{t:.2f} s" for t in times)
                + f"; RSS {rss:.0f} MB"
            )
        sampler.phase = f"{n} concurrent"
        t0, cpu0 = time.perf_counter(), _cpu_s(sampler.pid)
        results = await asyncio.gather(*(session(browser, base, VIEWS[:1]) for _ in range(n)))
        out["concurrent_wall_s"] = time.perf_counter() - t0
        out["concurrent_server_cpu_s"] = _cpu_s(sampler.pid) - cpu0
        out["concurrent"] = [times[0] for _, times in results]
        await asyncio.sleep(1.0)
        out["rss_after_concurrent"] = _rss_mb(sampler.pid)
        sampler.phase = "closing"
        for ctx in kept + [c for c, _ in results]:
            await ctx.close()
        await browser.close()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--results", help="an existing results location")
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--questions", type=int, default=1000)
    p.add_argument("--xdg", help="XDG_CACHE_HOME for the server (its derived cache)")
    p.add_argument("--sessions", type=int, default=20)
    p.add_argument("--log", help="a file the figures are also appended to, as they come")
    a = p.parse_args(argv)

    log = figure_log(a.log)

    results = a.results or f"/tmp/scale/r{a.runs}x{a.questions}"
    if not a.results and not Path(results).exists():
        generate(results, a.runs, a.questions, workers=os.cpu_count() or 1)
    xdg = a.xdg or f"{results}.xdg"
    env = {**os.environ, "XDG_CACHE_HOME": xdg, "PYTHONPATH": str(ROOT)}
    log(
        f"\n## sessions_bench {time.strftime('%Y-%m-%d %H:%M:%S')}: {results}, "
        f"{a.sessions} sessions"
    )
    t0 = time.perf_counter()
    proc, base = start_server(results, env, Path(xdg).with_suffix(".log"))
    log(
        f"server healthy after {time.perf_counter() - t0:.1f} s "
        "(the command builds a missing cache first)"
    )
    sampler = Sampler(proc.pid)
    sampler.start()
    try:
        idle = _rss_mb(proc.pid)
        out = asyncio.run(drive(base, a.sessions, sampler, log))
    finally:
        sampler.stop.set()
        proc.terminate()
        proc.wait(timeout=30)
    seq = out["sequential"]
    rss = [r for _, r in seq]
    first = [t for t, _ in seq]
    per_extra = (rss[-1] - rss[0]) / max(len(rss) - 1, 1)
    lines = [
        f"server RSS idle (store not open): {idle:.0f} MB; after session 1: {rss[0]:.0f} MB; "
        f"after {len(rss)} sessions: {rss[-1]:.0f} MB → {per_extra:.1f} MB per extra session",
        "sequential sessions, settled s (Runs / Diagnose): first "
        f"{first[0][0]:.2f} / {first[0][1]:.2f}; the others median "
        f"{statistics.median(t[0] for t in first[1:]):.2f} / "
        f"{statistics.median(t[1] for t in first[1:]):.2f}, max "
        f"{max(t[0] for t in first[1:]):.2f} / {max(t[1] for t in first[1:]):.2f}",
        f"{a.sessions} concurrent sessions opening Runs: settled s min "
        f"{min(out['concurrent']):.2f}, median {statistics.median(out['concurrent']):.2f}, "
        f"max {max(out['concurrent']):.2f} (wall {out['concurrent_wall_s']:.1f} s, of which "
        f"the server used {out['concurrent_server_cpu_s']:.1f} s of CPU: the rest is the "
        f"{a.sessions} browsers and the other jobs on the same cores); "
        f"server RSS after: {out['rss_after_concurrent']:.0f} MB",
        "each concurrent session, settled s: " + ", ".join(f"{t:.2f}" for t in out["concurrent"]),
        "server RSS timeline (s, phase, MB), one sample a second:",
    ]
    last = -1.0
    for t, phase, mb in sampler.samples:
        if t - last >= 1.0:
            lines.append(f"  {t:6.1f}  {phase:<14} {mb:7.0f}")
            last = t
    lines.append(f"peak server RSS: {max(mb for _, _, mb in sampler.samples):.0f} MB")
    for line in lines:
        log(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
