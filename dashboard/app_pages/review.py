"""Review: a queue of the questions whose labels teach the most about a run's judge — a
sample stratified by verdict, claims flagged on correct answers, claims two judges
disagree on — one at a time, with the labelling controls of the Question page."""

import streamlit as st

from dashboard import data, labelling, ui
from dashboard.shaping import answer_marks, first_unreviewed, queue_rows, reviewed_count
from rageval_core.errors import NotFoundError
from rageval_core.links import REVIEW_SIZES, escape_word
from rageval_core.numbers import MISSING
from rageval_core.page_states import QuestionState

DEFAULT_SIZE = 20

page = ui.start("review")
state = page.state
runs = ui.require_runs()
c = st.columns([4, 1])
with c[0]:
    run = ui.pick_run(runs, state.run, key="review_run")
size = c[1].selectbox(
    "Questions",
    REVIEW_SIZES,
    index=REVIEW_SIZES.index(state.size or DEFAULT_SIZE),
    key="review_size",
)
queue = data.review_queue(run, size)
dataset = data.run_dataset(run)
ids = [item.question_id for item in queue]
labelled = [q for q in ids if dataset and data.question_labels(dataset.sha256, q)]
# A queue opened for the first time in this session, or another run or size (another
# queue), starts at the first question nobody has labelled yet; a URL's position past
# the first is kept, and so is Previous back to the first. A URL without a (known) run
# shows the newest, which is no change of run either.
url_run = ui.run_or_newest(runs, state.run)
same_queue = (run, size) == (url_run, state.size or DEFAULT_SIZE)
opened = st.session_state.setdefault("_review_opened", set())
fresh = (run, size) not in opened
opened.add((run, size))
pos = state.pos if same_queue and (state.pos or not fresh) else first_unreviewed(ids, labelled)
pos = min(pos, max(len(queue) - 1, 0))
view = state.shared().with_(run=run, size=size, pos=pos)
page.publish(view)

if not queue:
    ui.say("info", f"Run {run} has no judged claims to review.")
    st.stop()

done = reviewed_count(ids, labelled)
st.progress(done / len(queue), text=f"{done} of {len(queue)} reviewed")

target = ui.previous_next(pos, len(queue), key="review")
if target is not None:
    ui.go("review", view.with_(pos=target))

item = queue[pos]
st.subheader(f"{pos + 1} of {len(queue)}: {item.question_id}")
st.caption(f"Why this question: {escape_word(item.reason)}")  # may name a run: a manifest's text
ui.link(
    "question", "Open the full Question view", QuestionState(run=run, question=item.question_id)
)
try:
    d = data.question_detail(run, item.question_id)
except NotFoundError:  # the run changed since the queue was drawn
    ui.say("error", f"Question '{item.question_id}' is no longer in run '{run}'.")
    st.stop()
ui.safe_text(d.question)
st.caption("Reference answer" + ("" if d.answerable else " (unanswerable: should decline)"))
ui.safe_text(d.reference_answer or MISSING)
st.caption("Answer (unsupported claims yellow, contradicted red)")
ui.safe_text(d.answer or MISSING, answer_marks(d.claims))
labelling.claims_section(d, key="review_label")

st.subheader("The queue")
ui.question_table(
    queue_rows(queue, labelled), ["question_id", "why", "reviewed"], key="review_queue", run_id=run
)
