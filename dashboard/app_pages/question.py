"""Question: one question in one run — the answer with flagged claims marked in place and
its relevancy, the judge's verdicts and evidence with the human labels beside them (and
the forms to add one), the retrieved chunks each with its relevance verdict, the reference
statements the retriever missed, timings, and its history across runs (flaky or not, and
what changed in the answer against another run). Figures the question cannot have are
left out, with one note saying why; each list drawn from the row (chunks, claims,
statements, documents) stops at `bounded.MAX_ITEMS` and counts the rest."""

import pandas as pd
import streamlit as st

from dashboard import bounded, data, labelling, ui
from dashboard.diffs import show_answer_diff
from dashboard.shaping import TABLE_RUNS, answer_marks, document_block, evidence_marks
from dashboard.verdicts import VERDICT_METRICS, chunk_heading, gaps_note, keep, relevancy_word
from rageval_core import charts, numbers
from rageval_core.catalogue import failure_label
from rageval_core.errors import NotFoundError
from rageval_core.links import md_escape
from rageval_core.numbers import MISSING
from rageval_core.page_states import RunContext

MAX_PICKER = 5000
TILES = ("answer_correctness", "faithfulness", "recall_at_5", "mrr", "ndcg_at_10")
HISTORY_COLUMNS = [
    "run_id",
    "created_at",
    "config_name",
    "failure_type",
    "answer_correctness",
    "faithfulness",
    "recall_at_5",
    "mrr",
]

page = ui.start("question")
state = page.state
runs = ui.require_runs()

if state.run is not None and data.find_run(state.run) is None:
    ui.not_found("Run", state.run)
    st.stop()
run = state.run or ui.pick_run(runs, None, key="question_run")
question = state.question
if question is None:
    ids = data.question_rows(run, sort="question_id", limit=MAX_PICKER).rows["question_id"]
    if ids.empty:  # e.g. a run that has just started: its journal is still empty
        page.publish(state.shared().with_(run=run))
        ui.say("info", f"Run '{run}' has no questions yet.")
        ui.link("diagnose", f"Run {run}", RunContext(run=run))
        st.stop()
    question = st.selectbox("Question", list(ids), key="question_pick")
page.publish(state.shared().with_(run=run, question=question))

try:
    d = data.question_detail(run, question)
except NotFoundError:  # an unreadable file is not a missing question: streamlit_app says so
    ui.say("error", f"Question '{question}' not found in run '{run}'.")
    ui.link("diagnose", "Back to the run's questions", RunContext(run=run))
    st.stop()

ui.link("diagnose", f"Run {run}", RunContext(run=run))
st.subheader(f"{d.question_id} · {failure_label(d.failure_type or 'unknown')}")
ui.safe_text(d.question)
st.caption("Reference answer" + ("" if d.answerable else " (unanswerable: should decline)"))
ui.safe_text(d.reference_answer or MISSING)
for problem in d.problems:
    ui.say("warning", problem)
if d.error:
    st.error("The pipeline raised an error on this question:")
    ui.safe_text(d.error)
if d.judge_error:
    st.error("The judge could not score this question:")
    ui.safe_text(d.judge_error)

cat = data.run_catalogue(run)  # built-in metrics plus the ones this run declares
verdicts = d.verdicts
gaps = data.unavailable(run, d.question_id)
if gaps:
    st.info(gaps_note(gaps), icon=":material/info:")
shown = keep((*TILES, *VERDICT_METRICS, *cat.declared_names), gaps)
cols = st.columns(5)
for i, m in enumerate(shown):
    ui.tile(cols[i % 5], cat.entry(m), d.metrics.get(m), label=cat.question_label(m))

st.subheader("Answer")
st.caption(
    "Unsupported claims are marked yellow, contradicted ones red; hover for the "
    "judge's reason." + (" The pipeline declined to answer." if d.refused else "")
)
missed = ui.safe_text(d.answer or MISSING, answer_marks(d.claims))
if missed:
    st.caption(f"{len(missed)} flagged claim(s) are not verbatim in the answer; see below.")
if verdicts.answer_relevancy is not None:
    st.caption(
        f"Answer relevancy {numbers.percent(verdicts.answer_relevancy)} "
        f"({relevancy_word(verdicts.answer_relevancy)}): the judge's reason"
    )
    ui.safe_text(verdicts.answer_relevancy_reason or "none given")

reviewer = labelling.claims_section(d, key="question_label")
labelling.answer_section(d, reviewer, key="question_label")

st.subheader(f"Retrieved chunks ({len(d.retrieved):,})")
chunks, more = bounded.first(d.retrieved)
names = d.chunk_names()
for r in chunks:
    gold = " · ✓ gold" if r.is_gold else ""
    score = MISSING if r.score is None else numbers.number(r.score)
    verdict = verdicts.chunk(r.rank)
    # named by document and range; the id (a framework's UUID) inside, to copy
    heading = f"#{r.rank}{gold} · {md_escape(names[r.id])} · score {score}{chunk_heading(verdict)}"
    with st.expander(heading, expanded=r.is_gold or r.rank <= 3):
        st.code(r.id, language=None)
        ui.safe_text(r.text, evidence_marks(d.claims, r.id))
        if verdict is not None:
            st.caption(f"The judge: {'relevant' if verdict.relevant else 'not relevant'}, because")
            ui.safe_text(d.named(verdict.reason or "no reason given"))
        labelling.chunk_section(d, r, verdict, reviewer, key="question_label")
bounded.left_out(more, "chunks")
if verdicts.statements is not None:
    st.subheader(f"Context recall: the reference answer in {len(verdicts.statements)} statements")
    st.caption(
        "Each statement of the reference answer, found in a retrieved chunk or not; the "
        "missed ones are what the retriever failed to bring."
    )
    if verdicts.missed:
        st.warning(f"{len(verdicts.missed):,} statement(s) the retriever missed:")
        statements, more = bounded.first(verdicts.missed)
        for s in statements:
            ui.safe_text(s.text)
            if s.reason:
                st.caption("Judge's reason")
                ui.safe_text(s.reason)
        bounded.left_out(more, "missed statements")
    else:
        st.caption("No statement missed: the retrieved chunks hold the whole reference.")
    statements, more = bounded.first(verdicts.attributed)
    for i, s in enumerate(statements, start=1):
        # a chunk id is the pipeline's text, and an expander's label is Markdown
        where = names.get(s.evidence_chunk_id or "", s.evidence_chunk_id or "a chunk")
        with st.expander(f"Found {i}: in {md_escape(where)}"):
            ui.safe_text(s.text)
            st.caption("Evidence sentence")
            ui.safe_text(s.evidence or "none")
    bounded.left_out(more, "found statements")
documents, more = bounded.first(data.question_documents(d))
for doc in documents:
    st.subheader(f"Gold document {doc.doc_id}")
    st.caption(
        "Gold spans in green; each retrieved chunk placed in this document on its own row "
        "(a chunk boundary through a span cuts the evidence)."
    )
    placed = bounded.drawn(doc.chunks)  # the chunks the list above draws
    ui.chart(
        charts.span_map(doc.doc_id, doc.length, doc.gold, placed),
        key=f"question_span_map_{doc.doc_id}",
    )
    if doc.text is None:
        st.caption("The run's dataset is not at hand (or changed since), so no text is shown.")
    else:
        st.markdown(document_block(doc.text, doc.gold, placed), unsafe_allow_html=True)
    bounded.left_out(len(doc.chunks) - len(placed), "chunks placed in this document")
bounded.left_out(more, "gold documents")
if d.missed_gold_ids:
    what = (
        "gold span(s) were not touched by any chunk"
        if d.gold_spans
        else "gold chunk(s) were not retrieved"
    )
    st.warning(f"{len(d.missed_gold_ids)} {what}:")
    st.dataframe(
        pd.DataFrame({"gold chunk not retrieved": list(d.missed_gold_ids)}), hide_index=True
    )

st.subheader("Timings, tokens, cost")
cols = st.columns(4)  # eight figures in one row truncate the costs to "0.00…"
figures = [*d.timings.items(), *d.tokens.items(), *d.cost.items()]
for i, (name, value) in enumerate(figures):
    if name in cat.measures:  # a timing or a cost: its unit and definition
        ui.tile(cols[i % 4], cat.measures[name], value)
    else:
        tokens = numbers.count(value) if value is not None else MISSING
        cols[i % 4].metric(name.replace("_", " "), tokens, help="tokens the model reported")

st.subheader("This question across runs")
dataset = runs.loc[runs["run_id"] == run, "dataset_name"].iloc[0]
history = data.question_history(d.question_id, dataset=dataset, limit=TABLE_RUNS)
flaky = data.run_flaky(run)
note = flaky.loc[flaky["question_id"] == d.question_id, "flaky_note"]
if len(note):  # names the config: text from a manifest
    st.warning(
        f"Flaky question: {md_escape(note.iloc[0])}; a regression here may be noise.",
        icon=":material/casino:",
    )
before, changed = data.settings_change(run)
if changed:  # settings are text from manifests
    st.info(
        f"The settings changed since the previous run of this config, {md_escape(before)}: "
        f"{md_escape('; '.join(changed))}. A change in this question follows them, not noise.",
        icon=":material/tune:",
    )
if len(history) >= TABLE_RUNS:
    st.caption(f"The newest {TABLE_RUNS:,} runs that have this question.")
if len(history) > 1:
    plotted = ["answer_correctness", "faithfulness", "recall_at_5", *cat.declared_names]
    ui.chart(
        charts.question_history(history, plotted, cat),
        key="question_history_chart",
        metrics=[cat.measures[m] for m in plotted],
    )
ui.question_table(history, HISTORY_COLUMNS, key="question_history")

others = [r for r in history["run_id"] if r != run]
if others:
    st.subheader("What changed in the answer")
    ids = list(history["run_id"])
    earlier = [r for r in ids[: ids.index(run)] if r != run] if run in ids else []
    default = earlier[-1] if earlier else others[0]  # the run just before this one
    base = st.selectbox(
        "Compare this answer with the one in run",
        others,
        index=others.index(default),
        key="question_diff_base",
    )
    try:
        show_answer_diff(data.answer_diff(base, run, d.question_id), key="question")
    except NotFoundError:  # a run whose rows changed since the history was read
        ui.say("info", f"Run {base} has no answer to this question.")
