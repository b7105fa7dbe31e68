"""Relative URLs of views for a table's link columns."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from urllib.parse import quote_plus

import pandas as pd

from rageval_core.links import ViewState, relative_url


def question_links(rows: pd.DataFrame, run_id: str | None = None) -> pd.Series:
    """Relative URL of each row's Question view (for a LinkColumn).

    The run is `run_id`, or each row's own `run_id` column when `run_id` is None.
    """
    runs = rows["run_id"].tolist() if run_id is None else [run_id] * len(rows)
    pairs = [(str(r), str(q)) for r, q in zip(runs, rows["question_id"].tolist(), strict=True)]
    # Once per distinct pair: a question × metric table names each question several times.
    once = list(set(pairs))
    urls = dict(zip(once, _urls("question", once), strict=True))
    return pd.Series([urls[p] for p in pairs], index=rows.index, dtype="object")


def run_links(run_ids: Iterable[str], page: str) -> list[str]:
    """Relative URL of each run's view on `page`."""
    return _urls(page, ((r, None) for r in run_ids))


def _urls(page: str, pairs: Iterable[tuple[object, object]]) -> list[str]:
    """`relative_url(page, ViewState(run=r, question=q))` of each (r, q); q may be None.

    The same text, built from the page's path and `quote_plus` of each value (what
    `urlencode` does): a ViewState and its twenty fields per row cost 50 ms a rerun on a
    1,000-row table.
    """
    path = relative_url(page, ViewState())
    part = functools.cache(  # one run on every row of a run's table: quoted once
        lambda key, value: (
            f"{key}={quote_plus(str(value))}" if value is not None and str(value) else ""
        )
    )
    out = []
    for run, question in pairs:
        query = "&".join(p for p in (part("run", run), part("question", question)) if p)
        out.append(f"{path}?{query}" if query else path)
    return out
