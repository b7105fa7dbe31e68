"""Retrieval: recall@k curves, the recall@5 vs recall@20 gap (a ranking problem), MRR per
run, and the questions whose gold chunk sits at rank 6–20 (what a reranker could fix).
Runs on a span dataset add span recall, precision and IoU per k and, for several of them
(chunkings), span recall@k against span precision@k with their input tokens. Runs without
retrieval gold are left out, named once."""

import streamlit as st

from dashboard import data, ui
from dashboard.shaping import newest_with, widest_gap_run
from rageval_core import charts
from rageval_core.query import NO_GOLD

DEFAULT_RUNS = 10  # newest with recall@5 first; enough to see a reranker arrive and close a gap

page = ui.start("retrieval")
state = page.state
runs = ui.require_runs()

chosen = ui.pick_runs(
    runs, state.runs, newest_with(runs, "recall_at_5", DEFAULT_RUNS), key="retrieval_runs"
)
run = ui.pick_run(
    runs,
    state.run or widest_gap_run(runs, chosen),
    key="retrieval_run",
    label="Run for rerank candidates",
)
page.publish(state.shared().with_(runs=tuple(chosen), run=run))

# a run without retrieval gold has no figure to draw here: left out, said once
no_gold = [r for r in chosen if any(u.family == "retrieval" for u in data.unavailable(r))]
if no_gold:
    st.info(
        f"Left out {len(no_gold)} run(s) — {NO_GOLD}: " + ", ".join(f"`{r}`" for r in no_gold),
        icon=":material/info:",
    )
chosen = [r for r in chosen if r not in no_gold]
if chosen:
    picked = runs[runs["run_id"].isin(chosen)].iloc[::-1]  # oldest first, left to right
    cat = data.catalogue()
    ui.chart(
        charts.recall_curves(data.recall_curve(chosen)),
        key="retrieval_curves",
        metrics=[cat.measures["recall_at_5"]],
    )
    ui.chart(
        charts.recall_gap(picked),
        key="retrieval_gap",
        metrics=[cat.entry("recall_at_5"), cat.entry("recall_at_20"), cat.entry("recall_gap")],
    )
    ui.chart(charts.per_run_bar(picked, "mrr"), key="retrieval_mrr", metrics=[cat.entry("mrr")])
    spans = data.span_curve(chosen)
    if spans.empty:
        st.caption(
            "Span figures: none of these runs has gold spans (a dataset with `documents:` and "
            "`gold_spans:` scores any chunking on characters; see docs/metrics.md)."
        )
    else:
        st.subheader("Span figures")
        ui.chart(charts.span_curves(spans), key="retrieval_span_curves")
        if spans["run_id"].nunique() > 1:
            ui.chart(charts.span_tradeoff(spans), key="retrieval_span_tradeoff")
elif not no_gold:
    st.info("Pick at least one run.")

st.subheader(f"Rerank candidates in {run}")
candidates = data.rerank_candidates(run)
if candidates.empty:
    st.info("No answerable question has its first gold chunk at rank 6–20.")
else:
    st.caption(
        f"{len(candidates)} questions have their first gold chunk at rank 6–20: "
        "retrieved, but ranked too low for the top 5. A reranker can fix these."
    )
    ui.question_table(
        candidates,
        [
            "question_id",
            "question",
            "failure_type",
            "first_gold_rank",
            "recall_at_5",
            "recall_at_20",
            "mrr",
        ],
        key="retrieval_candidates",
        run_id=run,
    )
