"""Judge: whether a judge changed the model behind its name between runs (judge drift),
how far each judge seen in the runs agrees with the human labels — kappa with its 95%
interval, raw agreement, the confusion matrix, precision and recall of "unsupported", the
labels behind each figure, every disagreement — and how far reviewers agree with each
other (the ceiling a judge can be held to)."""

import streamlit as st

from dashboard import data, ui
from dashboard.shaping import (
    agreement_table,
    disagreement_rows,
    labelled_agreements,
    too_few_note,
)
from rageval_core import charts
from rageval_core.labels.agreement import Agreement
from rageval_core.links import escape_word

MAX_DISAGREEMENTS = 500
PROBLEMS_SHOWN = 5
RUNS_NAMED = 5


def show(agreements: dict[str, Agreement], key: str, rows: str = "human", cols: str = "judge"):
    """Agreements side by side: their figures (n included) in one table, a too-few note
    and the confusion heatmap of each."""
    st.table(agreement_table(agreements))
    for col, (title, a) in zip(st.columns(len(agreements)), agreements.items(), strict=True):
        with col:
            note = too_few_note(a)
            if note:
                st.warning(f"{title.capitalize()}: {note}", icon=":material/warning:")
            if a.n:
                ui.chart(
                    charts.confusion(a.categories, a.confusion, title.capitalize(), rows, cols),
                    key=f"{key}_{title}",
                )


page = ui.start("judge")
ui.require_runs()
page.publish(page.state.shared())

labels = data.labels()
st.caption(
    f"{len(labels.labels):,} human labels in {escape_word(data.labels_location())} (the newest per "
    "reviewer, question and claim). How to run a review round: docs/review.md."
)
if labels.problems:
    st.warning(
        f"{len(labels.problems)} label line(s) could not be read and are left out: "
        + "; ".join(escape_word(p) for p in labels.problems[:PROBLEMS_SHOWN])
        + (" …" if len(labels.problems) > PROBLEMS_SHOWN else ""),
        icon=":material/warning:",
    )

st.header("Judge drift")
drifts = data.judge_drift()
for drift in drifts:  # served model names come from a server: escaped
    st.warning(escape_word(drift.sentence()), icon=":material/warning:")
if not drifts:
    st.caption(
        "No judge served another model (or system fingerprint) between two runs of one "
        "config. HTTP judges record what their endpoint says served each reply; see "
        'docs/judges.md, "Judge drift".'
    )

reports = data.judge_reports()
if not reports:
    st.info("No judge has verdicts on a labelled question yet.")
for i, report in enumerate(reports):
    st.header(f"Judge: {escape_word(report.judge.label())}")  # from run manifests
    named = ", ".join(f"`{r}`" for r in report.runs[:RUNS_NAMED])
    more = f" and {len(report.runs) - RUNS_NAMED:,} more" if len(report.runs) > RUNS_NAMED else ""
    st.caption(f"Verdicts from {len(report.runs):,} run(s): {named}{more}")
    show({"claims": report.claims, "whole answers (pass / fail)": report.questions}, f"judge_{i}")
    relevance = labelled_agreements(data.relevance_agreement(report.runs))
    if relevance:
        st.subheader("Relevance: retrieved chunks and answers")
        show(relevance, f"judge_{i}_relevance")
    st.subheader(f"Disagreements ({len(report.disagreements)})")
    if report.disagreements:
        if len(report.disagreements) > MAX_DISAGREEMENTS:  # shaped only as far as shown
            st.caption(f"The first {MAX_DISAGREEMENTS:,} are shown, by question.")
        ui.question_table(
            disagreement_rows(report.disagreements[:MAX_DISAGREEMENTS]),
            ["run_id", "question_id", "claim", "human", "judge", "reviewer", "note"],
            key=f"judge_{i}_disagreements",
        )
    else:
        st.caption("None: wherever people labelled, they agreed with this judge.")

st.header("Reviewers with each other")
between = data.reviewer_agreement()
if between is None or not between.n:
    st.caption(
        "No claim has been labelled by two reviewers yet. When two people label the same "
        "claims, their agreement is the most any judge can be expected to reach."
    )
else:
    show({"claims two reviewers labelled": between}, "judge_reviewers", "reviewer", "another")
