"""The sections of the definitions (docs/metrics.md's headings) that help texts link to."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

DEFINITIONS_PATH = "definitions"
"""The dashboard's page of definitions (`dashboard/app_pages/definitions.py`), one section
each. Help texts link to it relative to the app: no address to configure, so a link works
offline, under any base URL path, and opens its section."""


# anchors of the sections (`SECTIONS`), as docs/metrics.md's headings make them
RETRIEVAL_SECTION, GENERATION_SECTION, FAILURES_SECTION = (
    "retrieval-per-answerable-question",
    "generation-per-question",
    "one-failure-type-per-question",
)
PER_RUN_SECTION, SPEED_SECTION, DECLARED_SECTION = "per-run", "latency-and-cost", "declared-metrics"
SPANS_SECTION = "span-metrics"
VERDICTS_SECTION = "reference-free-verdicts"
READING_A_CHANGE = "reading-a-change"


@dataclass(frozen=True)
class Section:
    """One section of the definitions: its anchor, and its title, the heading of
    docs/metrics.md that holds its formulas and edge cases (a test keeps both in step)."""

    anchor: str
    title: str
    lead: str

    @property
    def link(self) -> str:
        """Its address, relative to the app (Markdown links and `st.page_link` take it)."""
        return f"{DEFINITIONS_PATH}#{self.anchor}"

    @property
    def source(self) -> str:
        """Where it is written out in the repository, for what cannot link to the dashboard
        (the HTML report, the command line)."""
        return f'docs/metrics.md, "{self.title}"'


SECTIONS: Mapping[str, Section] = {
    s.anchor: s
    for s in (
        Section(
            RETRIEVAL_SECTION,
            "Retrieval, per answerable question",
            "Scores of the ranked list of retrieved chunks against the question's gold "
            "chunks, per cut-off k. Questions with no gold chunks have none.",
        ),
        Section(
            SPANS_SECTION,
            "Span metrics",
            "Retrieval scored on character ranges of the dataset's documents, for a dataset "
            "that gives gold spans: chunkings of any size compare on the same gold.",
        ),
        Section(
            GENERATION_SECTION,
            "Generation, per question",
            "Scores of the answer, from the judge's verdicts on its claims and from its "
            "reference answer.",
        ),
        Section(
            VERDICTS_SECTION,
            "Reference-free verdicts",
            "The judge's verdicts on the retrieved context and the answer that need no gold; "
            "empty where the judge was not asked.",
        ),
        Section(
            FAILURES_SECTION,
            "One failure type per question",
            "Each question gets the first failure type that applies, so the counts add up "
            "to the run's questions.",
        ),
        Section(
            PER_RUN_SECTION,
            "Per run",
            "Run-level figures: means and 10th percentiles of the per-question scores, "
            "shares, rates and counts. Correctness is over answerable questions only.",
        ),
        Section(
            SPEED_SECTION,
            "Latency and cost",
            "Per-question timings and costs; lower is better for all of them. Per run they "
            "become p50 / p95 and a mean per question and a total.",
        ),
        Section(
            READING_A_CHANGE,
            "Reading a change",
            "A change between two runs is better or worse only beyond its noise: a mean "
            "score whose 95% paired bootstrap interval includes 0 is unchanged, and so is a "
            "latency figure within the spread of earlier runs of the same config and dataset "
            "version. Other figures are judged by their sign. Unchanged is shown neutral, "
            "with the delta still written.",
        ),
        Section(
            DECLARED_SECTION,
            "Declared metrics",
            "Per-question scores a run brings itself, declared in its manifest with a label, "
            "a direction and a range; shown like faithfulness.",
        ),
    )
}
"""The sections help texts link to, in the order of docs/metrics.md."""
