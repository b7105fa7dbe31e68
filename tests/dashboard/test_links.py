"""ViewState <-> URL: round trips, and every kind of bad value dropped with a message."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlencode

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.pages import PAGES
from rageval_core.dataset import QUESTION_ID_RE
from rageval_core.links import (
    CHARTS,
    MAX_LIST,
    TAG_RE,
    UrlProblem,
    ViewState,
    escape_word,
    relative_url,
)
from rageval_core.models import FAILURE_TYPES
from rageval_core.page_states import DiagnoseState, state_of
from rageval_core.query import QUESTION_METRICS, SORT_KEYS
from rageval_core.runs.layout import RUN_ID_RE


def test_full_state_round_trips_through_the_url():
    state = ViewState(
        run="20261123-150000-verbose",
        runs=("a-1", "b.2"),
        baseline="a-1",
        question="q001",
        metric="faithfulness",
        failure_types=("unfaithful", "retrieval_miss"),
        tags=("multi-hop", "user vocabulary"),
        ranges=(("answer_correctness", 0.0, 0.5), ("total_ms", 100.0, None)),
        search="cold room",
        answerable=False,
        config="bm25-top5",
        dataset_version="2",
        sort="mrr",
        chart="histogram",
        page=3,
    )
    params = state.to_query_params()
    assert params["answerable"] == "false" and params["page"] == "3"
    assert params["range"] == ["answer_correctness:0:0.5", "total_ms:100:"]
    back, errors = ViewState.from_query_params(params)
    assert errors == [] and back == state


def test_defaults_stay_out_of_the_url():
    assert ViewState().to_query_params() == {}
    assert ViewState(run="r1", page=0).to_query_params() == {"run": "r1"}
    assert relative_url("diagnose", ViewState()) == "diagnose"
    # The default page is served at the app root; `runs` there is "Page not found".
    assert relative_url("runs", ViewState()) == ""
    assert relative_url("runs", ViewState(metric="mrr")) == "?metric=mrr"


def test_relative_url_encodes_repeated_keys_and_special_characters():
    url = relative_url("diagnose", ViewState(run="r1", tags=("a&b", "c d"), search="x=1"))
    assert url == "diagnose?run=r1&tags=a%26b&tags=c+d&search=x%3D1"


def test_single_strings_and_lists_are_both_accepted():
    state, errors = ViewState.from_query_params({"run": "r1", "runs": ["r1", "r2", "r1"]})
    assert errors == [] and state.run == "r1" and state.runs == ("r1", "r2")


@pytest.mark.parametrize(
    "run_id",
    [
        "../etc/passwd",
        "a/b",
        "..",
        "run..x",
        "<script>alert(1)</script>",
        "",
        " r1",
        "x" * 200,
        "r1;rm -rf",
        "%2e%2e",
    ],
)
def test_traversal_and_injection_run_ids_are_dropped_with_a_message(run_id):
    state, errors = ViewState.from_query_params({"run": run_id, "question": "q001"})
    assert state.run is None and state.question == "q001"
    assert [(e.parameter, e.value, e.why[:20]) for e in errors] == [
        ("run", run_id[:60] + ("…" if len(run_id) > 60 else ""), "not a valid run id (")
    ]


def test_one_bad_run_in_a_list_drops_the_list_and_says_which():
    state, errors = ViewState.from_query_params({"runs": ["r1", "../r2"], "baseline": "r/3"})
    assert state.runs == () and state.baseline is None
    assert {(e.parameter, e.value) for e in errors} == {("runs", "../r2"), ("baseline", "r/3")}


@pytest.mark.parametrize("qid", ["q 1", "<img src=x onerror=alert(1)>", "q1/../x", "", "'; DROP"])
def test_unsafe_question_ids_are_dropped(qid):
    state, errors = ViewState.from_query_params({"question": qid})
    assert state.question is None and errors == [
        UrlProblem("question", qid, "not a valid question id")
    ]


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"metric": "recall_at_5; DROP TABLE"}, "unknown metric"),
        ({"metric": "question"}, "unknown metric"),
        ({"sort": "random()"}, "unknown sort key"),
        ({"chart": "pie"}, "unknown chart"),
        ({"failure_types": ["ok", "bogus"]}, "unknown failure type"),
        ({"answerable": "maybe"}, "expected true or false"),
        ({"page": "-1"}, "expected a page number"),
        ({"range": "faithfulness:0"}, "METRIC:LOW:HIGH"),
        ({"range": "secret_col:0:1"}, "METRIC:LOW:HIGH"),
        ({"range": "faithfulness:nan:1"}, "finite"),
        ({"range": "faithfulness:abc:1"}, "not a number"),
        ({"search": "a\nb"}, "printable"),
        ({"tags": "<b>"}, "not a valid tag"),
        ({"runs": [f"r{i}" for i in range(MAX_LIST + 1)]}, f"at most {MAX_LIST}"),
    ],
)
def test_invalid_values_are_reported_and_dropped(params, needle):
    state, errors = ViewState.from_query_params(params)
    assert state == ViewState()
    assert len(errors) == 1 and needle in errors[0].why


@pytest.mark.parametrize("batch", ["../x", "a/b", "<script>", "", ".hidden", "a..b", "x" * 200])
def test_bad_candidate_batches_are_dropped_with_a_message(batch):
    state, errors = ViewState.from_query_params({"batch": batch, "candidate": "gen-0123456789ab"})
    assert state == ViewState(candidate="gen-0123456789ab")
    assert [(e.parameter, e.why) for e in errors] == [
        ("batch", "not a valid batch name (letters, digits, . _ -)")
    ]


@pytest.mark.parametrize("candidate", ["gen 1", "<img src=x onerror=alert(1)>", "a/../b", ""])
def test_bad_candidate_ids_are_dropped_with_a_message(candidate):
    state, errors = ViewState.from_query_params({"batch": "b1", "candidate": candidate})
    assert state == ViewState(batch="b1")
    assert errors == [UrlProblem("candidate", candidate, "not a valid candidate id")]


def test_unknown_parameters_are_ignored():
    state, errors = ViewState.from_query_params({"utm_source": "mail", "run": "r1"})
    assert state == ViewState(run="r1") and errors == []


def test_shared_keeps_only_the_run_context():
    url = ViewState(
        run="r1", runs=("r1", "r2"), baseline="r2", metric="mrr", question="q1", search="x", page=2
    )
    state = state_of("diagnose", url)
    assert state.shared() == DiagnoseState(run="r1", runs=("r1", "r2"), baseline="r2", metric="mrr")
    assert state.shared().url() == ViewState(
        run="r1", runs=("r1", "r2"), baseline="r2", metric="mrr"
    )


@settings(max_examples=200, deadline=None)
@given(
    page=st.sampled_from(sorted(PAGES)),
    tags=st.lists(st.sampled_from(["a", "b", "new"]), max_size=3, unique=True),
    question=st.one_of(st.none(), st.sampled_from(["q1", "q2"])),
    pos=st.integers(0, 5),
    search=st.one_of(st.none(), st.just("x")),
)
def test_a_page_state_keeps_its_own_url_parameters_under_their_names(
    page, tags, question, pos, search
):
    """Each page's state reads from and writes to the URL exactly its own parameters,
    under the names shared links use (`tags` is question_tags or run_tags)."""
    url = ViewState(run="r1", tags=tuple(tags), question=question, pos=pos, search=search)
    state = state_of(page, url)
    names = set(state.__dataclass_fields__)
    own = {type(state).URL_NAMES.get(n, n) for n in names}
    written = state.url().to_query_params()
    assert set(written) == {k for k in url.to_query_params() if k in own}
    assert state_of(page, state.url()) == state
    for name in {"question_tags", "run_tags"} & names:
        assert getattr(state, name) == tuple(tags)


def test_every_page_has_a_distinct_file_and_url():
    assert len({p.path for p in PAGES.values()}) == len({p.url_path for p in PAGES.values()}) == 11


# ---------------------------------------------------------------------------- any valid view

RUN_IDS = st.from_regex(RUN_ID_RE, fullmatch=True).filter(lambda s: ".." not in s)
LABELS = st.from_regex(TAG_RE, fullmatch=True).filter(lambda s: "\n" not in s)
BOUNDS = st.none() | st.floats(allow_nan=False, allow_infinity=False)
SEARCH = st.text(
    st.characters(exclude_categories=("Cs",), min_codepoint=32), min_size=1, max_size=200
)


def _unique(items, max_size=MAX_LIST):
    return st.lists(items, unique=True, max_size=max_size).map(tuple)


VIEWS = st.builds(
    ViewState,
    run=st.none() | RUN_IDS,
    runs=_unique(RUN_IDS),
    baseline=st.none() | RUN_IDS,
    question=st.none() | st.from_regex(QUESTION_ID_RE, fullmatch=True),
    metric=st.none() | st.sampled_from(QUESTION_METRICS),
    failure_types=_unique(st.sampled_from(FAILURE_TYPES)),
    tags=_unique(LABELS),
    ranges=st.lists(st.tuples(st.sampled_from(QUESTION_METRICS), BOUNDS, BOUNDS), max_size=4).map(
        tuple
    ),
    search=st.none() | SEARCH,
    answerable=st.none() | st.booleans(),
    config=st.none() | LABELS,
    dataset_version=st.none() | LABELS,
    sort=st.none() | st.sampled_from(SORT_KEYS),
    chart=st.none() | st.sampled_from(CHARTS),
    page=st.integers(0, 1_000_000),
    batch=st.none() | RUN_IDS,
    candidate=st.none() | st.from_regex(QUESTION_ID_RE, fullmatch=True),
)


@settings(max_examples=300, deadline=None)
@given(VIEWS)
def test_every_valid_view_round_trips_through_a_browser_url(view):
    # What Streamlit does: urlencode the params into the address bar, parse_qs on reload.
    query = urlencode(view.to_query_params(), doseq=True)
    back, errors = ViewState.from_query_params(parse_qs(query, keep_blank_values=True))
    assert errors == [] and back == view


@settings(max_examples=200, deadline=None)
@given(st.from_regex(QUESTION_ID_RE, fullmatch=True))
def test_every_question_id_a_dataset_accepts_is_accepted_from_a_link(qid):
    query = urlencode(ViewState(run="r1", question=qid).to_query_params(), doseq=True)
    back, errors = ViewState.from_query_params(parse_qs(query, keep_blank_values=True))
    assert errors == [] and back.question == qid


_PUNCT = r"""!"#$%'()*+,\-./:;=?@\[\\\]^_`{|}~"""
_INERT = re.compile(rf"(?:\\[{_PUNCT}]\u2060?|&(?:lt|gt|amp);|[^{_PUNCT}<>&\s]|[ ])*")


def _shown(escaped: str) -> str:
    """What markdown shows for `escaped`: escapes and references decoded, word joiners unseen."""
    text = re.sub(rf"\\([{_PUNCT}])", r"\1", escaped)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return text.replace("\u2060", "")


HOSTILE = st.sampled_from(
    [
        "[x](http://127.0.0.1:9/p)",
        ":red[x]",
        "**b**",
        ":material/home:",
        ":x:",
        "<b>",
        "&amp;",
        "- ",
        "1. ",
        "# ",
        "`c`",
        "$x$",
        "\\",
        "\n",
        "    ",
        "_i_",
        "~~s~~",
        "\u2060",
    ]
)


@settings(max_examples=300)
@given(st.lists(st.one_of(st.text(), HOSTILE)).map("".join))
def test_escaped_text_shows_as_typed_and_holds_no_markup(text):
    # Every page message quoting a run id, question id or URL value goes through escape_word
    # (dashboard/ui.py `say`): it must show the same characters, and no markdown, HTML,
    # Streamlit directive (`:red[`, `:material/`) or emoji code (`:x:`) may survive.
    out = escape_word(text)
    assert _shown(out) == " ".join(text.split()).replace("\u2060", "")
    assert _INERT.fullmatch(out), out  # every punctuation mark escaped, no raw < > & or line
    assert not re.search(r":[\w/]", out)  # a colon is always followed by a word joiner
    assert ":material/" not in out and "\n" not in out
