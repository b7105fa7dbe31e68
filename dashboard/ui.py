"""The page skeleton and the widgets every page shares (run pickers, links, tables).

A page starts with `start(key)`: its title, its own state type parsed from the URL
(`rageval_core/page_states.py`; bad values shown as errors) and a slot for the copy-link
control; it ends its controls with `Page.publish(state)`, which writes the state back
to the URL. Links between pages carry the state with `st.page_link` / `st.switch_page`
query parameters (the built-in sidebar navigation would drop them). Nothing here caches
or queries: data comes from `data`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from dashboard import data
from dashboard.pages import PAGES
from dashboard.shaping import Mark, marked_block, question_links, run_label
from rageval_core import numbers
from rageval_core.catalogue import Catalogue, Metric
from rageval_core.links import UrlProblem, ViewState, escape_word, md_escape, relative_url
from rageval_core.page_states import QuestionState, RunContext, state_of

DELTA_COLORS = {"better": "normal", "worse": "inverse", "same": "off", None: "off"}

QUESTION_COLUMNS = ["question_id", "question", "failure_type"]


@dataclass(frozen=True)
class Page:
    key: str
    state: Any  # the page's own type (`page_states.STATES`); `start` picks it
    link_slot: DeltaGenerator

    def publish(self, state: RunContext) -> None:
        """Make `state` the URL of this view and show it for copying."""
        url = state.url()
        st.query_params.from_dict(url.to_query_params())
        st.session_state[_VIEW] = (url, ())
        with self.link_slot.popover("Copy link", icon=":material/link:"):
            st.caption("Relative to the dashboard's address; anyone with access sees this view.")
            st.code(relative_url(self.key, url), language=None, wrap_lines=True)


_VIEW = "_rageval_view"
"""Session key of this rerun's (ViewState, URL problems): parsed once, updated by publish."""


def read_url() -> ViewState:
    """Parse the URL once per rerun (the app calls this before the page runs): every
    value is validated here and nowhere else; pages and the sidebar read the result."""
    params = {k: st.query_params.get_all(k) for k in st.query_params}
    data.list_for_link(p for k in ("run", "runs", "baseline") for p in params.get(k, ()))
    st.session_state[_VIEW] = ViewState.from_query_params(params, data.catalogue().declared_names)
    return st.session_state[_VIEW][0]


def view_state() -> ViewState:
    """The view's state as parsed this rerun, or as the page last published it."""
    return st.session_state[_VIEW][0] if _VIEW in st.session_state else read_url()


def start(key: str) -> Page:
    """Title, URL state (invalid parameters shown as errors) and the copy-link slot."""
    st.title(PAGES[key].title)
    link_slot = st.container()
    if _VIEW not in st.session_state:
        read_url()
    url, problems = st.session_state[_VIEW]
    for p in problems:
        say("error", url_problem(p))
    return Page(key, state_of(key, url), link_slot)


def url_problem(p: UrlProblem) -> str:
    """The sentence for a URL parameter a page ignored (plain text: `say` escapes it)."""
    value = "" if p.value is None else f" = {p.value!r}"
    return f"Ignored URL parameter '{p.parameter}'{value}: {p.why}."


def say(kind: Literal["error", "warning", "info"], text: str, icon: str | None = None) -> None:
    """Show a message as the text it is. Messages quote run ids, question ids, paths and URL
    values, so every character is escaped (`links.escape_word`): never a link, HTML, a
    directive (`:red[..]`, `:material/x:`) or an emoji code."""
    getattr(st, kind)(escape_word(text), icon=icon)


def require_runs() -> pd.DataFrame:
    """All runs, newest first; when there are none, say how to make some and stop."""
    runs = data.runs_overview()
    if runs.empty:
        loc = data.location()
        st.info(
            f"No runs yet in `{loc}`. Make the example runs with "
            f"`rageval demo --results {loc}`, or evaluate your own pipeline with "
            f"`rageval run CONFIG.yaml --results {loc}`; this page updates on its own."
        )
        st.stop()
    return runs


def link(page: str, label: str, state: RunContext | None = None) -> None:
    st.page_link(
        PAGES[page].path,
        label=label,
        icon=PAGES[page].icon,
        query_params=(state or RunContext()).url().to_query_params(),
    )


def go(page: str, state: RunContext) -> None:
    st.switch_page(PAGES[page].path, query_params=state.url().to_query_params())


def not_found(what: str, value: str) -> None:
    """A clear message for an id that names nothing, with a way back."""
    say("error", f"{what} '{value}' not found in {data.location()}.")
    link("runs", "Back to all runs")


def run_or_newest(runs: pd.DataFrame, current: str | None) -> str:
    """The URL's run when it exists (`data.find_run`, the one way to ask) and `runs` lists
    it, else the newest of `runs`."""
    ids = runs["run_id"].tolist()  # not list(): iterating an Arrow column is 100x slower
    known = current is not None and data.find_run(current) is not None
    return current if known and current in ids else ids[0]


def pick_run(runs: pd.DataFrame, current: str | None, *, key: str, label: str = "Run") -> str:
    """A run picker defaulting to `current` (from the URL), else the newest run."""
    ids = runs["run_id"].tolist()
    if current is not None and data.find_run(current) is None:
        say("error", f"Run '{current}' not found in {data.location()}; showing the newest run.")
    index = ids.index(run_or_newest(runs, current))
    labels = run_label(runs)
    return st.selectbox(label, ids, index=index, key=key, format_func=labels.__getitem__)


def pick_runs(
    runs: pd.DataFrame,
    current: Sequence[str],
    default: Sequence[str],
    *,
    key: str,
    label: str = "Runs",
) -> list[str]:
    """A multi-run picker defaulting to the URL's runs that exist, else `default`."""
    ids = runs["run_id"].tolist()  # not list(): iterating an Arrow column is 100x slower
    missing = [r for r in current if r not in ids]
    if missing:
        say("error", "Runs not found, left out: " + ", ".join(f"'{r}'" for r in missing))
    chosen = [r for r in current if r in ids] or list(default)
    labels = run_label(runs)
    return st.multiselect(label, ids, default=chosen, key=key, format_func=labels.__getitem__)


def previous_next(pos: int, n: int, *, key: str, keys: tuple[str, str] | None = None) -> int | None:
    """Previous / Next buttons over a queue of `n` at `pos` (`keys`: their shortcuts); the
    position a press asks for, else None."""
    c = st.columns([1, 1, 4])
    for col, text, target, enabled, short in (
        (c[0], "Previous", pos - 1, pos > 0, keys and keys[0]),
        (c[1], "Next", pos + 1, pos < n - 1, keys and keys[1]),
    ):
        if col.button(text, disabled=not enabled, key=f"{key}_{text.lower()}", shortcut=short):
            return target
    return None


def tile(
    where: DeltaGenerator,
    metric: Metric,
    value: object,
    delta: object = None,
    reading: str | None = None,
    label: str | None = None,
) -> None:
    """One metric tile: its value in the one number style, its definition as help, and
    its delta green / red by `reading` (`Metric.reading`), grey when within noise.

    Streamlit colours a delta by its text's leading "-"; ours begin with "−" or "+",
    which it reads as a rise, so the colour follows the reading and the arrow the sign.
    """
    shown = None if numbers.absent(delta) else float(delta)  # type: ignore[arg-type]
    arrow = "off" if not shown else ("up" if shown > 0 else "down")
    where.metric(
        label or metric.label,
        metric.fmt(value),
        None if shown is None else metric.fmt_delta(shown),
        delta_color=DELTA_COLORS[reading],
        delta_arrow=arrow,
        help=metric.help,
    )


def metric_columns(
    cat: Catalogue, columns: Sequence[str], per_question: bool = False
) -> dict[str, object]:
    """Column configs of the columns that are metrics: the catalogue's label, its
    definition as the header's tooltip and its number format."""
    out: dict[str, object] = {}
    for c in columns:
        m = cat.measures.get(c) if per_question else cat.metric(c)
        if m is not None:
            label = cat.question_label(c) if per_question else m.label
            out[c] = st.column_config.NumberColumn(label, help=m.help, format=m.column_format())
    return out


def question_table(
    rows: pd.DataFrame,
    columns: Sequence[str],
    *,
    key: str,
    run_id: str | None = None,
    config: dict | None = None,
    limit: int | None = None,
) -> None:
    """A table of questions: an `open` link column, and selecting a row opens the question.

    The run is `run_id`, or each row's own `run_id` column. With `limit`, only the first
    `limit` rows are drawn, and a caption says how many were left out: a table with row
    selection sends every row to the browser, and builds a link for each.
    """
    if limit is not None and len(rows) > limit:
        st.caption(f"The first {limit:,} of {len(rows):,} rows are shown, in this order.")
        rows = rows.iloc[:limit]
    shown = rows[list(columns)].copy()
    shown.insert(0, "open", question_links(rows, run_id))
    event = st.dataframe(
        shown,
        key=key,
        on_select="rerun",
        selection_mode="single-row",
        hide_index=True,
        width="stretch",
        column_config={
            "open": st.column_config.LinkColumn("open", display_text="open ↗"),
            **metric_columns(data.catalogue(), columns, per_question=True),
            **(config or {}),
        },
    )
    if event.selection.rows:
        row = rows.iloc[event.selection.rows[0]]
        del st.session_state[key]  # else the selection re-fires when the target is this page
        go(
            "question",
            QuestionState(run=run_id or str(row["run_id"]), question=str(row["question_id"])),
        )


def safe_text(text: str | None, marks: Sequence[Mark] = ()) -> list[Mark]:
    """Untrusted text drawn as escaped HTML with marks; returns the marks not found."""
    body, missed = marked_block(text, marks)
    st.markdown(body, unsafe_allow_html=True)
    return missed


def chart(fig, key: str, metrics: Sequence[Metric] = ()) -> None:
    """A figure, and under it the definition of each metric on its axes."""
    st.plotly_chart(fig, key=key, width="stretch")
    if metrics:
        st.caption(
            " · ".join(f"**{md_escape(m.label)}**: {m.help}" for m in dict.fromkeys(metrics))
        )


def banner_lines(
    title: str, lines: Sequence[str], kind: Literal["warning", "info"] = "warning"
) -> None:
    """A warning (or a note) with lines of untrusted text (chunk ids a pipeline returned)
    shown as plain text, never Markdown."""
    if kind == "warning":
        st.warning(title, icon=":material/warning:")
    else:
        st.info(title, icon=":material/info:")
    st.code("\n".join(lines), language=None, wrap_lines=True)
