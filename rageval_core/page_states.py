"""What each dashboard page's URL says, as a type of its own.

`links.ViewState` is the URL codec: every parameter any page takes, validated once. A page
reads and writes only its own state type, whose fields are named for what they mean on
that page: the URL's `tags` are `question_tags` on Diagnose and `run_tags` on Runs. Every
type carries the run context (`RunContext`) that links keep from page to page. Parameter
names in URLs never change with these types: shared links keep opening the same view.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, Self

from rageval_core.links import SHARED_FIELDS, ViewState, relative_url


@dataclass(frozen=True)
class RunContext:
    """The run context every page keeps (`links.SHARED_FIELDS`); a page with no state of
    its own (Retrieval, Cost, Judge, Definitions) has only this."""

    URL_NAMES: ClassVar[dict[str, str]] = {}
    """Field -> URL parameter (codec field) where the two names differ."""

    run: str | None = None
    runs: tuple[str, ...] = ()
    baseline: str | None = None
    metric: str | None = None

    @classmethod
    def of(cls, url: ViewState) -> Self:
        """This page's state from the parsed URL."""
        return cls(**{f.name: getattr(url, cls.URL_NAMES.get(f.name, f.name)) for f in fields(cls)})

    def url(self) -> ViewState:
        """The URL this state writes."""
        return ViewState(
            **{self.URL_NAMES.get(f.name, f.name): getattr(self, f.name) for f in fields(self)}
        )

    def shared(self) -> Self:
        """Only the run context, the page's own fields at their defaults."""
        return type(self)(**{f: getattr(self, f) for f in SHARED_FIELDS})

    def with_(self, **changes: Any) -> Self:
        return replace(self, **changes)

    def link(self, page: str) -> str:
        """`page?query` relative to the app root (`links.relative_url`)."""
        return relative_url(page, self.url())


@dataclass(frozen=True)
class RunsState(RunContext):
    URL_NAMES: ClassVar[dict[str, str]] = {"run_tags": "tags"}

    run_tags: tuple[str, ...] = ()
    config: str | None = None
    dataset_version: str | None = None


@dataclass(frozen=True)
class DiagnoseState(RunContext):
    """One run's questions filtered: `ranges` are (metric, low, high), either bound None
    for open; `page` is the table's page (0 = first); `columns` what the table shows."""

    URL_NAMES: ClassVar[dict[str, str]] = {"question_tags": "tags", "columns": "cols"}

    failure_types: tuple[str, ...] = ()
    question_tags: tuple[str, ...] = ()
    ranges: tuple[tuple[str, float | None, float | None], ...] = ()
    search: str | None = None
    answerable: bool | None = None
    sort: str | None = None
    page: int = 0
    columns: tuple[str, ...] = ()
    """The table's columns after the question id, as chosen; () for the defaults."""


@dataclass(frozen=True)
class QuestionState(RunContext):
    """One question of one run; on Compare, the question whose answers are diffed."""

    question: str | None = None


@dataclass(frozen=True)
class TailsState(RunContext):
    chart: str | None = None


@dataclass(frozen=True)
class ReviewState(RunContext):
    """The review queue's length and the position in it (0 = first question)."""

    size: int | None = None
    pos: int = 0


@dataclass(frozen=True)
class CandidatesState(RunContext):
    """A candidate batch (its folder's name) and the candidate shown (its id)."""

    batch: str | None = None
    candidate: str | None = None


STATES: dict[str, type[RunContext]] = {
    "runs": RunsState,
    "diagnose": DiagnoseState,
    "question": QuestionState,
    "compare": QuestionState,
    "tails": TailsState,
    "review": ReviewState,
    "candidates": CandidatesState,
}
"""Each page's state type; a page not listed has only the run context."""


def state_of(page: str, url: ViewState) -> RunContext:
    """The state of `page` from the parsed URL."""
    return STATES.get(page, RunContext).of(url)
