"""Entry point of the dashboard: access check, navigation and the shared sidebar.

Run with `rageval dashboard` (which sets RAGEVAL_RESULTS). Pages live in `app_pages/`;
this file only wires them up. The sidebar's page links are drawn after the page ran, so
they carry the run context the page just wrote to the URL. A page that meets a damaged
run (a `RagevalError`) ends in one error line here, never an exception.
"""

from __future__ import annotations

from collections import defaultdict

import streamlit as st

from dashboard import data
from dashboard.auth import require_access
from dashboard.pages import PAGES
from dashboard.shaping import problems_markdown, stale_note, stale_questions_note
from dashboard.ui import link, read_url, say, view_state
from rageval_core.errors import RagevalError
from rageval_core.links import DEFAULT_PAGE, md_escape
from rageval_core.page_states import RunContext

OPENS_WHILE_BUILDING = "runs"  # the run list, from the manifests (`data.build_progress`)

st.set_page_config(page_title="rageval", page_icon=":material/troubleshoot:", layout="wide")

# Navigation before the gate: it resolves the page the browser asked for (/question), so a
# deep link's page and query parameters survive the sign-in form instead of falling back
# to the default page. The gate still stops before any page or data is drawn.
app_pages = {
    p.key: st.Page(
        p.path, title=p.title, url_path=p.url_path, icon=p.icon, default=p.key == DEFAULT_PAGE
    )
    for p in PAGES.values()
}
current = st.navigation(list(app_pages.values()), position="hidden")
require_access()
read_url()

runs = data.runs()
broken: dict[str, list[str]] = defaultdict(list)
for p in data.problems():
    broken[p.run_id or "(cache)"].append(p.message)

with st.sidebar:
    st.header("rageval")
    nav = st.container()
    st.divider()
    st.caption("Results")
    st.code(data.location(), language=None, wrap_lines=True)
    st.write(f"{len(runs)} run{'s' if len(runs) != 1 else ''}")
    for r in runs:
        if r.stale:
            st.warning(stale_note(r), icon=":material/warning:")
        elif r.status == "running":
            st.info(f"In progress: `{r.run_id}`", icon=":material/hourglass_top:")

if broken:
    st.warning(
        f"{len(broken)} run{'s' if len(broken) != 1 else ''} could not be read completely "
        "and may be missing from the views:\n\n" + problems_markdown(broken),
        icon=":material/warning:",
    )

url = RunContext.of(view_state())
for note in stale_questions_note(runs, [url.run, *url.runs]):
    say("warning", note, icon=":material/history:")


@st.fragment(run_every=1.0)
def build_bar() -> None:
    """How far the first build is, redrawn each second; the whole app again once it is
    done, so the page that showed the runs without figures shows them with."""
    build = data.build_progress()
    if build is None:
        st.rerun()
    if build.failed:
        data.start_build()  # again, once REFRESH_S has passed
        st.error(
            f"The figures could not be summarised: {md_escape(build.failed)}. It is tried "
            "again every few seconds; the run list and each run's own pages work meanwhile.",
            icon=":material/error:",
        )
        return
    st.progress(
        build.done / build.total,
        text=f"Summarising {build.total:,} runs into the cache: {build.done:,} done. "
        "The run list and each run's own pages work meanwhile; figures over all runs "
        "appear when it is done.",
    )


building = data.build_progress() is not None
if building:
    build_bar()

try:
    if building and current.url_path != app_pages[OPENS_WHILE_BUILDING].url_path:
        # the other pages read figures over every run or the per-question rows
        st.title(current.title)
        st.info("This page opens when the figures are summarised (above).")
    else:
        current.run()
except RagevalError as exc:
    # A file that became unreadable after the listing (a run deleted, rewritten or damaged
    # where only this view reads it): one line naming it, the navigation and other pages
    # stay. Anything else is a bug and keeps Streamlit's exception box.
    st.error(f"This view cannot be shown: {md_escape(exc.one_line())}", icon=":material/error:")
finally:  # also after st.stop() in a page, so the empty state still has navigation
    data.after_page()
    shared = RunContext.of(view_state())
    with nav:
        for page in PAGES.values():
            link(page.key, page.title, shared)
