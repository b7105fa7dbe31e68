"""The dashboard's URL contract: view state <-> query parameters, each page's address,
and the links the command line prints (`rageval run`, `rageval dashboard`).

Here and not in `dashboard/` so the CLI can print a link without importing the app.
Every selection a page makes lives in the URL so a copied link opens the same view for
anyone (docs/dashboard.md, "Deep-link parameters"). `ViewState.from_query_params` is the
only way a URL value reaches a page: run ids go through `validate_run_id`, question ids
through the pattern datasets validate them with (so every question of a valid dataset has
a working link), metrics, sort keys and failure types through the catalogue's whitelists. An
invalid value is dropped and reported as a `UrlProblem` (data: the parameter, the value, why;
`dashboard/ui.py` makes the one message from it, escaping the value), never raised.
Nothing here touches Streamlit or the results.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import urlencode

from rageval_core.catalogue import DEFINITIONS_PATH, QUESTION_METRICS, SORT_KEYS, TABLE_COLUMNS
from rageval_core.errors import ResultsError
from rageval_core.models import FAILURE_TYPES, QUESTION_ID_RE
from rageval_core.runs.layout import is_run_id, validate_run_id

TAG_RE = re.compile(r"^[^\x00-\x1f<>]{1,64}$")
CHARTS = ("ecdf", "histogram")
MAX_LIST = 20  # no view needs more; bounds the work a crafted URL can ask for
MAX_SEARCH = 200
REVIEW_SIZES = (10, 20, 40, 100)  # questions in a review queue (the Review page's choices)


PAGE_PATHS: dict[str, str] = {
    "runs": "runs",
    "diagnose": "diagnose",
    "tails": "tails",
    "retrieval": "retrieval",
    "cost": "cost",
    "compare": "compare",
    "question": "question",
    "review": "review",
    "judge": "judge",
    "candidates": "candidates",
    "definitions": DEFINITIONS_PATH,
}
"""Each page's key and its URL path under the dashboard's address, in navigation order
(`dashboard/pages.py` says which file draws it, under which title)."""

# st.navigation serves the default page at the app root: its url_path is not a valid address.
DEFAULT_PAGE = "runs"

# What travels with the sidebar navigation: the run context, not one page's filters.
SHARED_FIELDS = ("run", "runs", "baseline", "metric")


@dataclass(frozen=True)
class UrlProblem:
    """A URL parameter a page ignored: its name, the value it held (as typed, cut to 60
    characters; None when no one value is at fault) and why (this module's text, never the
    URL's). Data, not markdown: the page that shows it escapes the value."""

    parameter: str
    value: str | None
    why: str


class _Rejected(ValueError):
    def __init__(self, value: str | None, why: str) -> None:
        super().__init__(why)
        self.value = None if value is None else value[:60] + ("…" if len(value) > 60 else "")
        self.why = why


@dataclass(frozen=True)
class ViewState:
    """Everything a view's URL can say, validated: the URL codec. Empty fields are left
    out of the URL. Pages read and write it through their own state types
    (`rageval_core/page_states.py`), which name each field for what it means there.
    """

    run: str | None = None
    runs: tuple[str, ...] = ()
    baseline: str | None = None
    question: str | None = None
    metric: str | None = None
    failure_types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    ranges: tuple[tuple[str, float | None, float | None], ...] = ()
    search: str | None = None
    answerable: bool | None = None
    config: str | None = None
    dataset_version: str | None = None
    sort: str | None = None
    chart: str | None = None
    page: int = 0
    size: int | None = None
    pos: int = 0
    cols: tuple[str, ...] = ()
    batch: str | None = None
    candidate: str | None = None

    def to_query_params(self) -> dict[str, str | list[str]]:
        """The URL form: scalars as strings, tuples as repeated keys, defaults omitted."""
        out: dict[str, str | list[str]] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value in (None, (), "", 0) and not isinstance(value, bool):
                continue
            if f.name == "ranges":
                out["range"] = [f"{m}:{_num(lo)}:{_num(hi)}" for m, lo, hi in value]
            elif isinstance(value, tuple):
                out[f.name] = list(value)
            elif isinstance(value, bool):
                out[f.name] = "true" if value else "false"
            else:
                out[f.name] = str(value)
        return out

    @classmethod
    def from_query_params(
        cls, params: Mapping[str, str | Iterable[str]], declared: Iterable[str] = ()
    ) -> tuple[ViewState, list[UrlProblem]]:
        """Parse and validate a URL's parameters; invalid values are dropped and reported.

        `declared`: the metrics runs declare (validated names from their manifests), which
        a metric, range or sort may name besides the built-in ones.
        """
        lists = {k: [v] if isinstance(v, str) else [str(x) for x in v] for k, v in params.items()}
        errors: list[UrlProblem] = []
        parsed: dict[str, Any] = {}
        parsers = _PARSERS
        if declared := tuple(declared):
            metrics = (*QUESTION_METRICS, *declared)
            parsers = {
                **_PARSERS,
                "metric": _choice(metrics, "metric"),
                "ranges": lambda raw: _ranges(raw, metrics),
                "sort": _choice((*SORT_KEYS, *declared), "sort key"),
                "cols": _columns((*TABLE_COLUMNS, *declared)),
            }
        for name, parse in parsers.items():
            key = "range" if name == "ranges" else name  # the URL's name for it
            if not (raw := lists.get(key)):
                continue
            try:
                parsed[name] = parse(raw)
            except _Rejected as exc:
                errors.append(UrlProblem(key, exc.value, exc.why))
        return cls(**parsed), errors


def relative_url(page: str, state: ViewState) -> str:
    """`page?query` relative to the app root: what the copy-link control shows.

    The default page lives at the root itself, so its link is only `?query`.
    """
    path = "" if page == DEFAULT_PAGE else PAGE_PATHS[page]
    query = urlencode(state.to_query_params(), doseq=True)
    return f"{path}?{query}" if query else path


def absolute_url(base: str, page: str, state: ViewState) -> str:
    """`relative_url` under the dashboard's address `base` (`http://127.0.0.1:8501`): the
    link a terminal prints, e.g. a run's Diagnose view at the end of `rageval run`."""
    return f"{base.rstrip('/')}/{relative_url(page, state)}"


DASHBOARD_URL_ENV = "RAGEVAL_DASHBOARD_URL"
DEFAULT_DASHBOARD_URL = "http://127.0.0.1:8501"


def dashboard_link(page: str, run_id: str | None = None, base: str | None = None) -> str:
    """The dashboard address of `page` (for `run_id`), as `rageval run`, `rageval runs`
    and `rageval dashboard` print it: under `base`, else $RAGEVAL_DASHBOARD_URL (a hosted
    dashboard), else where `rageval dashboard` listens by default."""
    base = base or os.environ.get(DASHBOARD_URL_ENV) or DEFAULT_DASHBOARD_URL
    return absolute_url(base, page, ViewState(run=run_id))


def _num(v: float | None) -> str:
    """Short (`0.5`, `100`) when that is exact, else every digit: a link keeps the bound."""
    if v is None:
        return ""
    short = f"{v:g}"
    return short if float(short) == v else repr(v)


# Markdown-active characters of an echoed value or file problem (brackets and parentheses
# make links and images, `:` a bare-URL autolink, `$` LaTeX, `<` inline HTML): the page shows
# messages with st.error, which renders markdown, and a crafted link or a damaged run file
# must not draw a foreign link or image.
_MD_ACTIVE = re.compile(r"([\\`*_{}\[\]()#+!|<>~$:&])")
# Streamlit reads `:x:` (an emoji), `:material/x:` (an icon) and `:red[x]` from the text a
# backslash escape leaves, so an escaped colon is also followed by a word joiner (U+2060,
# invisible): no name follows the colon any more.
_WJ = "\u2060"


def md_escape(text: str) -> str:
    """`text` with every markdown-active character escaped: shown as typed, never as a
    link, image, formula, HTML, emoji, icon or coloured text."""
    return _MD_ACTIVE.sub(r"\\\1", text).replace("\\:", "\\:" + _WJ)


# Every ASCII punctuation character (CommonMark lets each be backslash-escaped): a `-`, `=`
# or `1.` starting a message makes no list or heading either.
_PUNCT = re.compile(r"""([!"#$%'()*+,\-./:;=?@\[\\\]^_`{|}~])""")
# Markdown decodes character references to plain text: `<`, `>` and `&` as references are
# shown as typed and never start a tag, even where a renderer would allow HTML.
_REFS = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def escape_word(text: str) -> str:
    """`text` inert in markdown, on one line: whitespace runs as one space (as markdown shows
    them), ASCII punctuation escaped, `<>&` as references, colons as in `md_escape`."""
    out = _PUNCT.sub(r"\\\1", " ".join(text.split()))
    out = re.sub("[<>&]", lambda m: _REFS[m.group()], out)
    return out.replace("\\:", "\\:" + _WJ)


def _one(raw: list[str]) -> str:
    return raw[-1]


def _run_id(value: str) -> str:
    try:
        return validate_run_id(value)
    except ResultsError as exc:
        raise _Rejected(value, "not a valid run id (letters, digits, . _ -)") from exc


def _question_id(raw: list[str], what: str = "question id") -> str:
    value = _one(raw)
    if not QUESTION_ID_RE.fullmatch(value):
        raise _Rejected(value, f"not a valid {what}")
    return value


def _batch(raw: list[str]) -> str:
    """A candidate batch is a folder named like a run (`runs.layout.is_run_id`)."""
    value = _one(raw)
    if not is_run_id(value):
        raise _Rejected(value, "not a valid batch name (letters, digits, . _ -)")
    return value


def _choice(allowed: Iterable[str], what: str):
    allowed = tuple(allowed)

    def parse(raw: list[str]) -> str:
        value = _one(raw)
        if value not in allowed:
            raise _Rejected(value, f"unknown {what}")
        return value

    return parse


def _run_list(raw: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_run_id(v) for v in _cap(raw)))


def _cap(raw: list[str]) -> list[str]:
    if len(raw) > MAX_LIST:
        raise _Rejected(None, f"at most {MAX_LIST} values")
    return raw


def _failure_types(raw: list[str]) -> tuple[str, ...]:
    bad = [v for v in raw if v not in FAILURE_TYPES]
    if bad:
        raise _Rejected(bad[0], "unknown failure type")
    return tuple(dict.fromkeys(_cap(raw)))


def _columns(allowed: Iterable[str]):
    known = frozenset(allowed)

    def parse(raw: list[str]) -> tuple[str, ...]:
        bad = [v for v in raw if v not in known]
        if bad:
            raise _Rejected(bad[0], "unknown column")
        return tuple(dict.fromkeys(_cap(raw)))

    return parse


def _tags(raw: list[str]) -> tuple[str, ...]:
    bad = [v for v in raw if not TAG_RE.fullmatch(v)]
    if bad:
        raise _Rejected(bad[0], "not a valid tag")
    return tuple(dict.fromkeys(_cap(raw)))


def _bound(text: str) -> float | None:
    if text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise _Rejected(text, "a range bound is not a number") from None
    if not math.isfinite(value):
        raise _Rejected(text, "a range bound must be finite")
    return value


def _ranges(
    raw: list[str], known: tuple[str, ...] = QUESTION_METRICS
) -> tuple[tuple[str, float | None, float | None], ...]:
    out = []
    for item in _cap(raw):
        metric, sep, rest = item.partition(":")
        lo, sep2, hi = rest.partition(":")
        if not (sep and sep2) or metric not in known:
            raise _Rejected(item, "not METRIC:LOW:HIGH with a known metric")
        out.append((metric, _bound(lo), _bound(hi)))
    return tuple(out)


def _search(raw: list[str]) -> str:
    value = _one(raw)
    if len(value) > MAX_SEARCH or any(ord(c) < 32 for c in value):
        raise _Rejected(None, f"search text must be at most {MAX_SEARCH} printable characters")
    return value


def _bool(raw: list[str]) -> bool:
    value = _one(raw).lower()
    if value not in ("true", "false"):
        raise _Rejected(value, "expected true or false")
    return value == "true"


def _page(raw: list[str]) -> int:
    value = _one(raw)
    if not value.isdigit() or int(value) > 1_000_000:
        raise _Rejected(value, "expected a page number")
    return int(value)


def _size(raw: list[str]) -> int:
    value = _one(raw)
    if value not in {str(n) for n in REVIEW_SIZES}:
        raise _Rejected(value, f"queue size must be one of {', '.join(map(str, REVIEW_SIZES))}")
    return int(value)


def _label(raw: list[str]) -> str:
    value = _one(raw)
    if not TAG_RE.fullmatch(value):
        raise _Rejected(value, "not a valid name")
    return value


_PARSERS = {
    "run": lambda raw: _run_id(_one(raw)),
    "runs": _run_list,
    "baseline": lambda raw: _run_id(_one(raw)),
    "question": _question_id,
    "metric": _choice(QUESTION_METRICS, "metric"),
    "failure_types": _failure_types,
    "tags": _tags,
    "ranges": _ranges,
    "search": _search,
    "answerable": _bool,
    "config": _label,
    "dataset_version": _label,
    "sort": _choice(SORT_KEYS, "sort key"),
    "chart": _choice(CHARTS, "chart"),
    "page": _page,
    "size": _size,
    "pos": _page,
    "cols": _columns(TABLE_COLUMNS),
    "batch": _batch,
    # a candidate's id becomes a question id when it is accepted: the same pattern
    "candidate": lambda raw: _question_id(raw, "candidate id"),
}
