"""Candidates: the questions `rageval dataset generate` drafted, one at a time — question,
reference answer, each gold quote drawn in its document, each automatic check and why —
for a reviewer to accept, edit or reject; then the accepted ones written as the next
dataset version (docs/dashboard.md, "Candidates")."""

import streamlit as st

from dashboard import data, labelling, ui
from dashboard.shaping import (
    candidate_rows,
    check_rows,
    decided_count,
    decision_line,
    document_block,
    edited_quotes,
    first_undecided,
    quote_range,
    version_commands,
    version_note,
)
from rageval_core.candidates.decisions import Decision
from rageval_core.errors import RagevalError, shown
from rageval_core.links import escape_word
from rageval_core.models import QUESTION_ID_RE

KEYS = {"accept": "A", "reject": "X", "next": "N", "previous": "P"}
MAX_NOTE = labelling.MAX_NOTE

page = ui.start("candidates")
state = page.state
batches = data.candidate_batches()
if not batches:
    ui.say(
        "info",
        f"No candidate batches in {data.candidates_location()}. Draft some with "
        f"`rageval dataset generate --documents DOCS --out {data.candidates_location()}/NAME`, "
        "or point the dashboard at a batch with `rageval dashboard --candidates DIR`.",
    )
    st.stop()
names = list(batches)
if state.batch is not None and state.batch not in batches:
    ui.say("error", f"Candidate batch '{state.batch}' not found in {data.candidates_location()}.")
name = st.selectbox(
    "Batch", names, index=names.index(state.batch) if state.batch in batches else 0, key="cq_batch"
)
try:
    batch = data.candidate_batch(name, batches[name])
except RagevalError as exc:  # a damaged candidates or documents file, named
    ui.say("error", f"Batch {name} cannot be read: {shown(str(exc), 300, bare=True)}")
    st.stop()
if not batch.candidates:
    ui.say("info", f"Batch {name} has no candidates.")
    st.stop()

decisions, problems = data.candidate_decisions(name)
for p in problems[:5]:  # a damaged decisions file costs its line, named
    ui.say("warning", p)
ids = [c.id for c in batch.candidates]
url_candidate = state.candidate if name == state.batch else None
if url_candidate is not None and url_candidate not in ids:
    ui.say("error", f"Candidate '{url_candidate}' is not in batch {name}.")
pos = ids.index(url_candidate) if url_candidate in ids else first_undecided(ids, decisions)
c = batch.candidates[pos]
shown_id = c.id if QUESTION_ID_RE.fullmatch(c.id) else None  # never a link that cannot parse
view = state.shared().with_(batch=name, candidate=shown_id)
page.publish(view)

done = decided_count(ids, decisions)
st.progress(done / len(ids), text=f"{done} of {len(ids)} decided")
target = ui.previous_next(pos, len(ids), key="cq", keys=(KEYS["previous"], KEYS["next"]))
if target is not None:
    ui.go("candidates", view.with_(candidate=ids[target]))

st.subheader(f"{pos + 1} of {len(ids)}: {escape_word(c.id)}")
st.caption(
    escape_word(f"{c.kind} · checks: {c.status} · written by {c.generator}")
    + ("" if c.answerable else " · unanswerable: the reference says why")
)
mine = decisions.get(c.id)
if mine is not None:
    ui.say("info", "Decided: " + decision_line(mine))
st.caption("Question")
ui.safe_text(c.question)
st.caption("Reference answer")
ui.safe_text(c.reference_answer)

st.subheader("Checks")
st.dataframe(check_rows(c), hide_index=True, width="stretch")

for n, q in enumerate(c.quotes, start=1):
    st.subheader(f"Quote {n} in {escape_word(q.doc_id)}")
    text = batch.documents.get(q.doc_id)
    where = quote_range(q, text)
    if text is None or where is None:
        ui.say("warning", f"Quote {n} does not stand once in {q.doc_id}: shown as written.")
        ui.safe_text(q.text)
    else:
        st.markdown(document_block(text, [where], ()), unsafe_allow_html=True)

st.subheader("Your decision")
reviewer = labelling.may_label()
if reviewer:
    key = f"cq_{name}_{c.id}"
    note = st.text_input("Note (optional)", max_chars=MAX_NOTE, key=f"{key}_note")
    cols = st.columns([1, 1, 4])  # Streamlit shows each button's key on it
    chosen: dict | None = None  # what the reviewer decided, as Decision's fields
    if cols[0].button("Accept", type="primary", key="cq_accept", shortcut=KEYS["accept"]):
        chosen = {"action": "accept"}
    if cols[1].button("Reject", key="cq_reject", shortcut=KEYS["reject"]):
        chosen = {"action": "reject"}
    with st.expander("Edit, then accept"), st.form(f"{key}_edit"):
        question = st.text_area("Question", value=c.question, key=f"{key}_question")
        reference = st.text_area("Reference answer", value=c.reference_answer, key=f"{key}_ref")
        typed = [
            st.text_input(
                f"Quote {n}: a text found exactly once in {escape_word(q.doc_id)}",
                value=q.text,
                key=f"{key}_quote_{n}",
            )
            for n, q in enumerate(c.quotes, start=1)
        ]
        if st.form_submit_button("Save edit"):
            quotes, wrong = edited_quotes(c.quotes, typed, batch.documents)
            fields = {"question": question, "reference answer": reference}
            wrong[:0] = [f"the {what} is empty" for what, t in fields.items() if not t.strip()]
            if wrong:
                ui.say("error", "Not saved: " + "; ".join(wrong) + ".")
            else:
                chosen = {
                    "action": "edit",
                    "question": question.strip(),
                    "reference": reference.strip(),
                    "quotes": quotes or None,
                }
    if chosen is not None:
        try:
            decision = Decision(c.id, reviewer=reviewer, note=note.strip(), **chosen)
            data.save_decision(name, decision)
        except (RagevalError, OSError) as exc:  # a text out of bounds, an unwritable location
            ui.say("error", f"The decision was not saved: {shown(str(exc), 300, bare=True)}")
        else:
            after = first_undecided(ids, {**decisions, c.id: decision}, pos)
            ui.go("candidates", view.with_(candidate=ids[after]))

st.subheader("The queue")
st.dataframe(candidate_rows(batch.candidates, decisions), hide_index=True, width="stretch")

st.subheader("Write dataset version")
if not reviewer:
    if data.can_label()[0]:  # only the name is missing
        st.caption("Writing a dataset version needs your name above, like every decision.")
    st.stop()
targets = {"a new dataset of the batch's documents": None, **data.dataset_targets()}
target = st.selectbox("Add the accepted candidates to", list(targets), key="cq_target")
if st.button("Write dataset version", key="cq_write"):
    try:
        st.session_state[f"cq_written_{name}"] = data.write_version(batch, targets[target])
    except RagevalError as exc:  # a quote no longer standing once, an invalid result
        ui.say("error", f"Nothing was written: {shown(str(exc), 500, bare=True)}")
written = st.session_state.get(f"cq_written_{name}")
if written is not None:
    ui.say("info", version_note(written))
    if written.path is not None:
        st.code(version_commands(str(written.path)), language="sh", wrap_lines=True)
