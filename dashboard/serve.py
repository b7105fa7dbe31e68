"""The dashboard's server process: Streamlit on the app, and the first page's imports
made while the first browser connects.

`rageval dashboard` runs `python -m dashboard.serve APP [STREAMLIT FLAGS]`. Streamlit
runs the app's script only when a browser opens a session, so a fresh server would pay
the imports the first page needs (pandas, DuckDB, plotly and its first figure, the query
layer: about as long as the page itself) after the visitor asked for it. Here a thread
makes them once the server is up, in the time the browser takes to start and load the
frontend; the script then finds them in `sys.modules` (or waits on Python's import lock
for the one in progress). What they built is then frozen out of the garbage collector's
full collections (`prepare`). docs/scale.md gives the figures.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import threading
import time
from typing import NoReturn

# What the app's entry script and the Runs page import, the heaviest first.
WARM_MODULES: tuple[str, ...] = (
    "pandas",
    "pyarrow",
    "duckdb",
    "plotly.graph_objects",
    "streamlit.elements.plotly_chart",  # sets Streamlit's plotly theme when imported
    "rageval_core.query",
    "rageval_core.charts",
    "dashboard.auth",
    "dashboard.data",
    "dashboard.ui",
    "dashboard.verdicts",
)
SERVER_WAIT_S = 60.0  # a server not up by then is left to warm itself on the first page


def _server_started() -> bool:
    """Streamlit's runtime is up: its cache storage exists, so `st.cache_*` decorators
    met while importing the app's modules bind to it (not to a stand-in for bare mode)."""
    from streamlit.runtime import Runtime, RuntimeState

    return Runtime.exists() and Runtime.instance().state != RuntimeState.INITIAL


def warm(modules: tuple[str, ...] = WARM_MODULES, wait_s: float = SERVER_WAIT_S) -> list[str]:
    """`prepare(modules)` once the server runs; nothing if it is not up within `wait_s`."""
    deadline = time.monotonic() + wait_s
    while not _server_started():
        if time.monotonic() > deadline:
            return []
        time.sleep(0.02)
    return prepare(modules)


def prepare(modules: tuple[str, ...] = WARM_MODULES) -> list[str]:
    """Import `modules`, draw one throwaway figure (plotly loads its validators at a first
    figure) and freeze what exists into the collector's permanent generation: modules live
    as long as the server, and a full collection walking their hundreds of thousands of
    objects again cost a restarted server's first page at 10,000 runs about 5% of its
    time (docs/scale.md). The modules imported; never raises: a module that fails here
    fails again, with its message, in the page that imports it."""
    done = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the page reports it where it matters
            continue
        done.append(name)
    if "plotly.graph_objects" in done:
        import plotly.graph_objects as go

        go.Figure().add_scatter(x=[0], y=[0], text=["x"]).update_layout(title="x").to_json()
    gc.collect()  # what the imports left as garbage is freed, not frozen
    gc.freeze()
    return done


def main(argv: list[str]) -> int:
    """`argv`: the app's path, then Streamlit's flags (what `streamlit run` takes)."""
    from streamlit.web import cli

    threading.Thread(target=warm, name="rageval-warm", daemon=True).start()
    try:
        code = cli.main(["run", *argv], prog_name="streamlit")
    except SystemExit as stopped:  # how Streamlit's command ends, stopped or not
        code = stopped.code
    code = code if isinstance(code, int) else 0 if code is None else 1
    data = sys.modules.get("dashboard.data")  # not imported: no session, no store thread
    if data is not None and data.store_work_running():
        leave_store_work(code)
    return code


def leave_store_work(code: int) -> NoReturn:
    """Exit now, leaving a listing or first build unfinished. Python's own exit would stop
    that thread inside DuckDB's C++ code, which aborts the process ("terminate called
    after throwing an instance of ''"); what the build wrote is the derived cache, which
    the next start brings up to date."""
    print(
        "rageval dashboard: stopped while the run folders were listed or summarised into "
        "the cache; the next start completes it.",
        file=sys.stderr,
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
