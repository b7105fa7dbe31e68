"""The dashboard's only memo: one `ResultsStore` per location, memoised query results.

`st.cache_resource` holds the store (its DuckDB connection is shared; every query opens
its own cursor, so sessions on different threads never share one). Query results are
`st.cache_data` keyed by the location, the store's fingerprint and the query's arguments:
when a run appears or changes, the fingerprint changes and the next call recomputes, so
a new run shows up without a restart. The runs overview, which every page reads, is one
object for all sessions (`st.cache_resource`) rather than a pickled copy per call.
Nothing here draws anything but how far slow work is: the first build of the derived
cache (a progress bar with what it does) and a spinner with words for a query that takes
more than half a second.

Human labels (docs/review.md) have their own location and `LabelStore`. The labels read are
held per (location, generation): a save in this process bumps the generation, so the
saver and every other session see it on their next rerun; labels other processes wrote
(another replica, the CLI) appear within LABELS_REFRESH_S. Queries over runs and labels
are memoised by both.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import streamlit as st

from rageval_core import labels as human
from rageval_core import query
from rageval_core.candidates import batches
from rageval_core.candidates.accepting import Accepted, accept
from rageval_core.candidates.decisions import Decision, DecisionStore
from rageval_core.candidates.files import CANDIDATES_FILE, DOCUMENTS_FILE
from rageval_core.catalogue import BUILTIN, Catalogue
from rageval_core.errors import ConfigError, shown
from rageval_core.labels import HumanLabel, LabelSet, LabelStore, read_only_env, utc_stamp
from rageval_core.labels.agreement import Agreement
from rageval_core.models import DatasetRef
from rageval_core.query import SUMMARISING, QueueItem, ResultsStore, RunProblem, span_curve
from rageval_core.query import answer_diff as _answer_diff
from rageval_core.query import judge_reports as _judge_reports
from rageval_core.query import relevance_agreement as _relevance_agreement
from rageval_core.query import review_queue as _review_queue
from rageval_core.query import run_coverage as _run_coverage
from rageval_core.query import run_flaky as _run_flaky
from rageval_core.query import run_same_settings as _run_same_settings
from rageval_core.query import run_settings_change as _run_settings_change
from rageval_core.runs.layout import BACKGROUND_BUILD_RUNS, results_location
from rageval_core.runs.reading import RunInfo

_log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")

REFRESH_S = 15.0  # how stale the run list may be; a refresh re-lists the run folders
# A restarted server lists the location this long after its first page has run
# (`after_page`): the listing is Python work that would slow that page down through the
# GIL, and at 10,000 runs the page runs longer than any fixed delay from its start.
LISTING_DELAY_S = 2.0
# A link to a run the store does not know lists the location again when the last listing
# is older than this (`list_for_link`): often enough for the link `rageval run` prints,
# seldom enough that links to runs that do not exist cannot keep the server listing.
LINK_REFRESH_S = 2.0
# How stale other processes' labels may be: a re-read lists every labels file and picks the
# newest per key again (about 1 s at 50,000 labels), so not on every REFRESH_S.
LABELS_REFRESH_S = 60.0
TTL_S = 600
MAX_ENTRIES = 512

_QUERIES: dict[str, Callable[..., Any]] = {}


def location() -> str:
    """The results location the app reads: $RAGEVAL_RESULTS, else `results/`."""
    return results_location()


@st.cache_resource(show_spinner=False, max_entries=8)
def _store(location: str) -> ResultsStore:
    # Read-only: a dashboard (often hosted, often shared) never writes into the results
    # location; its derived cache lives under $XDG_CACHE_HOME instead. Not refreshed here:
    # the first refresh shows its progress (`store`), which a cached function must not draw.
    return ResultsStore(location, read_only=True, refresh=False)


def store() -> ResultsStore:
    """The store of the current location, refreshed when older than REFRESH_S."""
    s = _store(location())
    if not s.refreshed_at:
        _first_refresh(s)
    elif build_progress() is None:  # else the first build's thread refreshes (and retries)
        s.maybe_refresh(REFRESH_S)
    return s


def _first_refresh(s: ResultsStore) -> None:
    """The first look at a location. Over a runs index (a restarted server: the cache
    was built before) the first page shows what it holds and the location is listed in
    the background, its news shown from the next rerun on, as any refresh's are.
    Otherwise the run folders are read with a progress bar, then the cache is built:
    at once when small, else from a thread (`_list_later`: the runs are summarised in
    worker processes, `refresh(beside_pages=True)`; 12 s over 1,000 runs of 1,000
    questions) while the pages show the runs without their figures and how far it is."""
    if s.open_indexed():
        with _builds_lock:
            _listings_due.add(s.location)  # started by `after_page`
        return
    slot = st.empty()
    with slot.status(f"Opening {s.location} …", expanded=True) as status:
        bar = st.progress(0.0, text="Listing run folders…")

        def report(what: str, done: int, total: int) -> None:
            share = done / total if total else 1.0
            bar.progress(min(share, 1.0), text=f"{what.capitalize()}: {done:,} of {total:,}")

        pending = s.open_listed(report)
        if pending is not None and pending < BACKGROUND_BUILD_RUNS:
            s.refresh(report)
        elif pending:  # started once this page is drawn (`start_build`)
            _builds[s.location] = BuildProgress(total=pending)
        status.update(label=f"Opened {len(s.runs()):,} runs", state="complete")
    slot.empty()


@dataclass
class BuildProgress:
    """How far the first build on its thread is (`_list_later`), for the page to show."""

    total: int
    done: int = 0
    started: bool = False
    finished: bool = False
    failed: str = ""  # why the last try raised (one line), until a try succeeds
    failed_at: float = 0.0  # time.monotonic() of that failure: tried again REFRESH_S on


_builds: dict[str, BuildProgress] = {}  # per location, the first build's (one per server)
_listings_due: set[str] = set()  # locations opened on their runs index, not listed yet
_builds_lock = threading.Lock()


def after_page() -> None:
    """The work a first page left for after it has run: a restart's listing (on a timer
    thread, LISTING_DELAY_S on) or a large location's first build (`start_build`)."""
    with _builds_lock:
        due = location() in _listings_due
        _listings_due.discard(location())
    if due:
        listing = threading.Timer(LISTING_DELAY_S, _list_later, (store(),))
        listing.name, listing.daemon = STORE_THREAD, True
        listing.start()
    start_build()


STORE_THREAD = "rageval-store"
"""The name of the threads that list a location or build its cache beside the pages."""


def store_work_running() -> bool:
    """A listing or first build is running on its thread (`serve.main` asks at exit)."""
    return any(t.name == STORE_THREAD and t.is_alive() for t in threading.enumerate())


def start_build() -> None:
    """Start the build `_first_refresh` left to a thread, after the page that opened on
    the manifests was drawn: started before, it took half of that page's CPU (the GIL)."""
    build = build_progress()
    with _builds_lock:
        if build is None or build.started:
            return
        if build.failed and time.monotonic() < build.failed_at + REFRESH_S:
            return
        build.started = True
    threading.Thread(
        target=_list_later, args=(store(), build), name=STORE_THREAD, daemon=True
    ).start()


def build_progress() -> BuildProgress | None:
    """The current location's first build while it runs on its thread, else None."""
    progress = _builds.get(location())
    return progress if progress and not progress.finished else None


def list_for_link(run_ids: Iterable[str]) -> None:
    """Before a link's view is drawn: when it names a run the store does not know, list
    the location now (at most every LINK_REFRESH_S; at once over a runs index not yet
    listed), so a link to a run written since the last listing opens that run rather
    than "not found" (`rageval run` prints such a link as it ends)."""
    s = store()
    if any(s.find(r) is None for r in run_ids if r):
        if not s.listed:
            s.refresh()
        else:
            s.maybe_refresh(LINK_REFRESH_S)


def _list_later(s: ResultsStore, build: BuildProgress | None = None) -> None:
    """The listing after a restart's first page, or the first build a large location's
    first look left to a thread (`build`: how far it is, for the page). A failure is
    logged, not raised: no page would show it from this thread. A restart's listing is
    done again by the next rerun's refresh (REFRESH_S); a failed first build keeps the
    pages on the manifests, says why (`build.failed`) and is started again after
    REFRESH_S, since the store's runs have no figures to show until one succeeds."""

    def report(what: str, done: int, total: int) -> None:
        if build and what == SUMMARISING:
            build.done = done

    try:
        s.refresh(report, beside_pages=True)
    except Exception as exc:  # noqa: BLE001 - a thread's last resort, see above
        _log.exception("listing %s after the first page failed", s.location)
        if build:
            build.failed, build.done = shown(exc), 0
            build.failed_at, build.started = time.monotonic(), False
        return
    if build:
        build.finished = True


def runs() -> list[RunInfo]:
    """Every run folder seen at the last refresh (cheap: held in memory by the store)."""
    return store().runs()


UNREADABLE = ("corrupt", "missing")
"""Run statuses a page cannot open: the folder's problem is in the banner instead."""


def find_run(run_id: str | None) -> RunInfo | None:
    """The run of that id the last refresh saw (`ResultsStore.find`) when a page can open
    it, else None: how a page asks whether a URL's run exists."""
    info = store().find(run_id) if run_id else None
    return info if info is not None and info.status not in UNREADABLE else None


def problems() -> list[RunProblem]:
    return store().problems


def catalogue() -> Catalogue:
    """Built-in metrics plus every run's declared ones (held by the store: no query)."""
    return store().catalogue()


def run_dataset(run_id: str) -> DatasetRef | None:
    """The dataset `run_id` was run on (from the manifest the store holds), which its
    labels belong to; None for a run the store has not seen or could not read."""
    info = find_run(run_id)
    return info.manifest.dataset if info and info.manifest else None


def run_catalogue(run_id: str) -> Catalogue:
    """Built-in metrics plus the ones `run_id` declares: what its own views may name.

    From the `RunInfo` the store already holds (no folder is read); a run it has not
    seen has only the built-in metrics.
    """
    info = find_run(run_id)
    return query.run_catalogue(info)[0] if info else BUILTIN


@st.cache_data(ttl=TTL_S, max_entries=MAX_ENTRIES, show_spinner=False)
def _run_query(name: str, location: str, fingerprint: str, args: tuple, kwargs: tuple) -> Any:
    # `fingerprint` is only part of the key: a new or changed run gives a new one.
    return _QUERIES[name](_store(location), *args, **dict(kwargs))


@st.cache_resource(ttl=TTL_S, max_entries=16, show_spinner=False)
def _shared_query(name: str, location: str, fingerprint: str, args: tuple, kwargs: tuple) -> Any:
    # One object for every session: no pickled copy per call (a 10,000-run overview
    # costs 0.6 s to unpickle, on every rerun of every page).
    return _QUERIES[name](_store(location), *args, **dict(kwargs))


def _cached(
    fn: Callable[Concatenate[ResultsStore, P], R], words: str, *, shared: bool = False
) -> Callable[P, R]:
    """`fn(store, ...)` as `fn(...)` over the current store, memoised by `_run_query`;
    `words` say what it does when it takes long enough for a spinner (0.5 s). `shared`:
    a DataFrame every page reads, held once per server (`_shared_query`) and handed out
    as a shallow copy (pandas' copy-on-write keeps the shared frame unchanged)."""
    _QUERIES[fn.__name__] = fn
    run = _shared_query if shared else _run_query

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        s = store()
        with st.spinner(words):
            out = run(fn.__name__, s.location, s.fingerprint(), args, tuple(sorted(kwargs.items())))
        return out.copy(deep=False) if shared else out

    return call


runs_overview = _cached(query.runs_overview, "Reading every run's figures…", shared=True)
metric_trend = _cached(query.metric_trend, "Reading the metric across runs…")
failure_counts = _cached(query.failure_counts, "Counting failure types…")
recall_curve = _cached(query.recall_curve, "Reading recall at every k…")
cost_quality = _cached(query.cost_quality, "Placing runs on quality, latency and cost…")
cost_quality_metrics = _cached(query.cost_quality_metrics, "Listing quality metrics…")
question_rows = _cached(query.question_rows, "Reading this run's questions…")
question_detail = _cached(query.question_detail, "Reading the question…")
question_history = _cached(query.question_history, "Reading this question across runs…")
bottom_questions = _cached(query.bottom_questions, "Finding the worst tenth…")
rerank_candidates = _cached(query.rerank_candidates, "Finding gold chunks ranked 6–20…")
span_curve = _cached(span_curve, "Reading span figures at every k…")
cut_gold_spans = _cached(query.cut_gold_spans, "Finding gold spans cut by a chunk boundary…")
no_retrieval_gold = _cached(query.no_retrieval_gold, "Counting questions without gold…")


def question_documents(detail: query.QuestionDetail) -> tuple[query.DocumentView, ...]:
    """The question's gold documents with their ranges (the dataset read for the text)."""
    return query.question_documents(store(), detail)


unavailable = _cached(query.unavailable, "Finding what this run cannot show…")
"""What a run (or, given its id, a question) cannot show and why: the one rule the pages
follow (rageval_core/query/_coverage.py)."""

metric_distribution = _cached(query.metric_distribution, "Reading the distribution…")
question_tags = _cached(query.question_tags, "Listing question tags…")
compare_runs = _cached(query.compare_runs, "Comparing the runs question by question…")
judge_drift = _cached(query.judge_drift, "Looking for judges that changed model…")
answer_diff = _cached(_answer_diff, "Comparing the two answers word by word…")
run_flaky = _cached(_run_flaky, "Looking for questions that flip between runs…")
settings_change = _cached(_run_settings_change, "Comparing the settings with the run before…")
same_settings = _cached(_run_same_settings, "Finding the runs with the same settings…")


# ---------------------------------------------------------------------------- labels


def labels_location() -> str:
    """Where labels live: $RAGEVAL_LABELS, else `labels` beside the results location."""
    return human.labels_location(location())


@st.cache_resource(show_spinner=False, max_entries=8)
def _label_store(location: str, read_only: bool) -> LabelStore:
    # One per location and mode: it remembers the files it parsed, so a reload reads only
    # new ones. A read-only store refuses a save even if a page offered one by mistake.
    return LabelStore(location, read_only=read_only)


def _labels_store() -> LabelStore:
    return _label_store(labels_location(), read_only_env())


def can_label() -> tuple[bool, str]:
    """(True, "") when this dashboard may save labels, else (False, why it may not)."""
    s = _labels_store()
    if s.read_only:
        return False, "This dashboard was started read-only: labels are shown, not edited."
    ok, why = s.writable()  # remembered by the store: one probe per location
    return ok, "" if ok else f"Labels cannot be saved here: {why}."


class _Generations:
    """Per labels location, a number bumped by every save in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        self._now: dict[str, int] = {}

    def get(self, location: str) -> int:
        return self._now.get(location, 0)

    def bump(self, location: str) -> None:
        with self._lock:
            self._now[location] = next(self._counter)


@st.cache_resource(show_spinner=False)
def _generations() -> _Generations:
    return _Generations()


@dataclass(frozen=True)
class _Loaded:
    labels: LabelSet
    token: str  # what the labels are, cheaply: keys the queries that use them


@st.cache_resource(show_spinner=False, max_entries=16, ttl=LABELS_REFRESH_S)
def _load_labels(location: str, read_only: bool, generation: int) -> _Loaded:
    # cache_resource, not cache_data: 50,000 labels would be pickled on every hit.
    ls = _label_store(location, read_only).load()
    # the files read, not counts or times: a correction from another process keeps the
    # count, and any created_at can be set (clock skew, a future-dated label)
    return _Loaded(ls, f"{ls.version}:{generation}")


def _labels_now() -> tuple[tuple[str, bool, int], _Loaded]:
    """The labels' memo key (location, read-only, generation) and what it holds."""
    key = (labels_location(), read_only_env(), _generations().get(labels_location()))
    with st.spinner("Reading the human labels…"):
        return key, _load_labels(*key)


def labels() -> LabelSet:
    """Every label in the labels location, newest per key (memoised; see module doc)."""
    return _labels_now()[1].labels


def save_labels(items: Sequence[HumanLabel]) -> None:
    """Write `items` as one new labels file and make every session read them afresh."""
    _labels_store().save(items)
    _generations().bump(labels_location())


@st.cache_resource(ttl=TTL_S, max_entries=MAX_ENTRIES, show_spinner=False)
def _run_label_query(
    name: str,
    location: str,
    fingerprint: str,
    labels_key: tuple[str, bool, int],
    token: str,
    args: tuple,
) -> Any:
    # `fingerprint` and `token` are only part of the key: new runs or labels, new entries.
    # cache_resource: the results are frozen dataclasses, shared without a copy (pickling
    # 40,000 disagreements on every rerun took 270 ms).
    return _QUERIES[name](_store(location), _load_labels(*labels_key).labels, *args)


def _with_labels(fn: Callable[..., R], words: str) -> Callable[..., R]:
    """`fn(store, labels, ...)` as `fn(...)` over the current store and labels, memoised."""
    _QUERIES[fn.__name__] = fn

    @functools.wraps(fn)
    def call(*args: Any) -> R:
        s = store()
        key, loaded = _labels_now()
        with st.spinner(words):
            return _run_label_query(
                fn.__name__, s.location, s.fingerprint(), key, loaded.token, args
            )

    return call


def question_labels(
    dataset_sha256: str, question_id: str
) -> dict[str | None, tuple[HumanLabel, ...]]:
    """One question's labels from every run on that dataset version: claim key -> labels
    (None -> the question-level ones)."""
    return labels().for_question(dataset_sha256, question_id)


def _reviewers(store: ResultsStore, labels: LabelSet) -> Agreement | None:
    """Reviewers with each other, on the claims two or more labelled (no run involved)."""
    return human.reviewer_agreement(labels)


def _queue(store: ResultsStore, run: str, size: int) -> list[QueueItem]:
    """The review round of `run`: `size` questions whose labels teach the most. Chosen
    without regard to labels, so the queue stays put while people label it (its progress
    counts the labelled ones); the same run and size give the same queue to everyone."""
    return _review_queue(store, run, LabelSet(), size)


def _relevance(store: ResultsStore, labels: LabelSet, runs: tuple[str, ...]) -> dict:
    """Chunk relevance and answer relevancy agreement over one judge's `runs`."""
    return _relevance_agreement(store, labels, list(runs))


judge_reports = _with_labels(_judge_reports, "Comparing every judge with the human labels…")
relevance_agreement = _with_labels(_relevance, "Comparing relevance labels with the judge…")
run_coverage = _with_labels(_run_coverage, "Counting the claims people checked…")
reviewer_agreement = _with_labels(_reviewers, "Comparing the reviewers…")
review_queue = _cached(_queue, "Choosing the questions worth a human look…")


# ---------------------------------------------------------------------------- candidates


def candidates_location() -> str:
    """Where candidate batches are looked for (`rageval_core/candidates/batches.py`)."""
    return batches.candidates_location(location())


def candidate_batches() -> dict[str, Path]:
    """Batch name -> folder, listed afresh (one directory listing): a batch generated
    while the dashboard is open shows up on the next rerun."""
    return batches.list_batches(candidates_location())


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st_ = path.stat()
    except OSError:
        return None
    return st_.st_mtime_ns, st_.st_size


@st.cache_resource(show_spinner=False, max_entries=8, ttl=TTL_S)
def _batch(name: str, path: str, stamps: tuple) -> batches.Batch:
    # `stamps` (the files' mtimes and sizes) are only part of the key: a batch generated
    # again (`--force`) is read again. cache_resource: documents are not pickled per hit.
    return batches.read_batch(name, Path(path))


def candidate_batch(name: str, path: Path) -> batches.Batch:
    """The batch's candidates and documents (memoised until its files change); a
    DatasetError naming the file when it is damaged."""
    stamps = tuple(_stamp(path / f) for f in (CANDIDATES_FILE, DOCUMENTS_FILE))
    with st.spinner("Reading the candidates…"):
        return _batch(name, str(path), stamps)


@st.cache_resource(show_spinner=False, max_entries=16)
def _decision_store(location: str, batch: str, read_only: bool) -> DecisionStore:
    # one per labels location, batch and mode: it remembers the files it parsed, so a
    # rerun reads only new ones; a read-only one refuses a save
    return DecisionStore(location, batch, read_only=read_only)


def _decisions(batch: str) -> DecisionStore:
    return _decision_store(labels_location(), batch, read_only_env())


def candidate_decisions(batch: str) -> tuple[dict[str, Decision], tuple[str, ...]]:
    """The newest decision per candidate of `batch` (any reviewer's), and what could not
    be read (file and line). Listed afresh on each call: a colleague's decision shows on
    the next rerun."""
    s = _decisions(batch)
    with st.spinner("Reading the reviewers' decisions…"):
        return s.latest(), s.problems


def save_decision(batch: str, decision: Decision) -> None:
    """Write one decision as a new file in the labels location (`DecisionStore.save`);
    a ConfigError saying why when this dashboard may not write labels."""
    ok, why = can_label()
    if not ok:
        raise ConfigError(why)
    _decisions(batch).save(decision)


def dataset_targets() -> dict[str, str]:
    """The datasets a batch's accepted candidates may be added to: the dataset files the
    runs were made with that are at hand here, label -> path, newest run first."""
    out: dict[str, str] = {}
    for info in sorted(runs(), key=lambda r: r.run_id, reverse=True):
        ref = info.manifest.dataset if info.manifest else None
        if ref and ref.path and ref.path not in out.values() and Path(ref.path).is_file():
            out[f"{ref.name} v{ref.version} ({ref.path})"] = ref.path
    return out


def write_version(batch: batches.Batch, dataset: str | None) -> Accepted:
    """The reviewers' decisions on `batch` written as a dataset version (`accepting.
    accept`): `dataset`'s next version, or a new dataset when None, into a new folder
    `versions/<UTC stamp>` of the batch: the one place the dashboard writes outside the
    labels location, and only when a reviewer asks."""
    ok, why = can_label()
    if not ok:
        raise ConfigError(why)
    decisions, _ = candidate_decisions(batch.name)
    out = batch.path / "versions" / utc_stamp().replace(":", "")
    return accept(batch.path, decisions, dataset, out)
