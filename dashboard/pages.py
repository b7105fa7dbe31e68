"""The app's pages as `st.navigation` draws them: the file of each, its title and icon,
at the URL path the library's URL contract gives it (`rageval_core.links.PAGE_PATHS`)."""

from __future__ import annotations

from dataclasses import dataclass

from rageval_core.links import PAGE_PATHS


@dataclass(frozen=True)
class PageRef:
    """One page of the app: its file (relative to streamlit_app.py), title and URL path."""

    key: str
    path: str
    title: str
    url_path: str
    icon: str


_DRAWN = {
    "runs": ("Runs", ":material/list:"),
    "diagnose": ("Diagnose", ":material/troubleshoot:"),
    "tails": ("Tails", ":material/stacked_line_chart:"),
    "retrieval": ("Retrieval", ":material/search:"),
    "cost": ("Cost & latency", ":material/speed:"),
    "compare": ("Compare", ":material/compare_arrows:"),
    "question": ("Question", ":material/help:"),
    "review": ("Review", ":material/rate_review:"),
    "judge": ("Judge", ":material/balance:"),
    "candidates": ("Candidates", ":material/fact_check:"),
    "definitions": ("Definitions", ":material/menu_book:"),
}

PAGES: dict[str, PageRef] = {
    key: PageRef(key, f"app_pages/{key}.py", _DRAWN[key][0], url_path, _DRAWN[key][1])
    for key, url_path in PAGE_PATHS.items()
}
