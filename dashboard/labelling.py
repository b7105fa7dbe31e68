"""The labelling controls the Question and Review pages share (docs/review.md).

Per claim: the human labels it already carries (any run on the same dataset version),
then a small form — the judge is right, or the verdict should be supported / unsupported /
contradicted, with an optional note. Per question: pass or fail. Per retrieved chunk:
relevant to the question or not; per answer: does it address the question (relevant or
not; a refusal is not labelled). A save writes one new
labels file through `data.save_labels` and reruns, so it shows at once. When labels may
not be written (read-only, an unwritable location) the labels are shown, the forms are
not, and the page says why. Nothing here reads files or builds HTML itself.
"""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from dashboard import auth, bounded, data, ui
from dashboard.shaping import (
    CLAIM_CHOICES,
    JUDGE_IS_RIGHT,
    QUESTION_CHOICES,
    RELEVANCE_CHOICES,
    answer_labels,
    chosen_verdict,
    chunk_labels,
    human_summary,
    label_lines,
    label_value,
)
from dashboard.verdicts import chunk_word, relevancy_word
from rageval_core.errors import ConfigError, RagevalError, shown
from rageval_core.labels import VERDICTS, HumanLabel, claim_key, utc_stamp
from rageval_core.labels.verdict import question_verdict
from rageval_core.links import escape_word
from rageval_core.models import ChunkVerdict, Claim, DatasetRef
from rageval_core.query import QuestionDetail, RetrievedRow

Labels = Mapping[str | None, tuple[HumanLabel, ...]]
MAX_NOTE = 2000  # characters: a note is a sentence or two, not a pasted document
VERDICT_ICONS = {
    "supported": ":material/check_circle:",
    "unsupported": ":material/help:",
    "contradicted": ":material/cancel:",
}


def claims_section(d: QuestionDetail, *, key: str) -> str | None:
    """Every claim with the judge's verdict, evidence and reason, the human labels beside
    them and (when this session may write) a form per claim and one for the question.
    Returns the reviewer's name when this session may label (the other sections' forms
    need it), else None."""
    dataset = data.run_dataset(d.run_id)
    labels = data.question_labels(dataset.sha256, d.question_id) if dataset else {}
    st.subheader(f"Claims ({len(d.claims):,})")
    if dataset is None:
        st.info("Labels need the run's dataset, and its manifest could not be read.")
        reviewer = None
    else:
        reviewer = may_label()
    if not d.claims:
        st.caption("No claims: the judge found nothing to check (a refusal has none).")
    # Widget state lives per key for the whole session: keyed by run and question too, so
    # a choice made on one answer is never preselected on the next one's claim i.
    key = f"{key}_{d.run_id}_{d.question_id}"
    claims, more = bounded.first(d.claims)
    names = d.chunk_names()
    for i, c in enumerate(claims, start=1):
        people = human_summary(labels.get(claim_key(c.text), ()))
        with st.expander(
            f"Claim {i}: {c.verdict}" + (f" · {people}" if people else ""),
            icon=VERDICT_ICONS.get(c.verdict, ":material/error:"),
            expanded=c.verdict != "supported",
        ):
            ui.safe_text(c.text)
            st.caption("Evidence chunk")
            named = names.get(c.evidence_chunk_id or "", c.evidence_chunk_id or "none")
            st.code(named, language=None)
            st.caption("Evidence sentence")
            ui.safe_text(c.evidence or "none")
            st.caption("Judge's reason")
            ui.safe_text(d.named(c.reason or "none given"))
            existing(labels, claim_key(c.text))
            if reviewer and dataset and c.verdict in VERDICTS:
                label_form(d, c, dataset, labels, reviewer, key=f"{key}_claim_{i}")
    bounded.left_out(more, "claims")
    st.subheader("The answer as a whole")
    existing(labels, None)
    if reviewer and dataset:
        label_form(d, None, dataset, labels, reviewer, key=f"{key}_question")
    elif dataset is not None and data.can_label()[0]:  # only the name is missing
        st.caption(
            "Mark the whole answer pass or fail here once you have entered your name "
            "above (under Claims): each label is saved with its reviewer's name."
        )
    return reviewer if dataset else None


def answer_section(d: QuestionDetail, reviewer: str | None, *, key: str) -> None:
    """Does the answer address the question: the judge's answer relevancy, people's labels
    of this answer's text and (when this session may write) a form to add one."""
    st.subheader("Does the answer address the question?")
    dataset = data.run_dataset(d.run_id)
    if d.refused or not (d.answer or "").strip():
        st.caption("A refusal (or an empty answer) is not labelled for relevancy.")
        return
    labels = _all(dataset, d.question_id)
    existing_lines(answer_labels(labels, d.answer))
    judged = relevancy_word(d.verdicts.answer_relevancy)
    if reviewer and dataset:
        relevance_form(
            d, dataset, reviewer, judged, answer=d.answer, key=f"{key}_{d.run_id}_{d.question_id}"
        )
    elif dataset is not None and data.can_label()[0]:  # only the name is missing
        st.caption(
            "Mark the answer relevant or not here once you have entered your name above "
            "(under Claims): each label is saved with its reviewer's name."
        )


def chunk_section(
    d: QuestionDetail,
    chunk: RetrievedRow,
    verdict: ChunkVerdict | None,
    reviewer: str | None,
    *,
    key: str,
) -> None:
    """Inside a retrieved chunk: people's relevance labels of it and (when this session
    may write) a form marking it relevant to the question or not."""
    dataset = data.run_dataset(d.run_id)
    existing_lines(chunk_labels(_all(dataset, d.question_id), chunk.id))
    if reviewer and dataset:
        relevance_form(
            d,
            dataset,
            reviewer,
            chunk_word(verdict),
            chunk_id=chunk.id,
            key=f"{key}_{d.run_id}_{d.question_id}_chunk_{chunk.rank}",
        )


def _all(dataset: DatasetRef | None, question_id: str) -> tuple[HumanLabel, ...]:
    """Every label of one question on the run's dataset version, of every kind."""
    if dataset is None:
        return ()
    return tuple(
        lab for labs in data.question_labels(dataset.sha256, question_id).values() for lab in labs
    )


def existing_lines(labels: tuple[HumanLabel, ...]) -> None:
    lines = label_lines(labels)
    if lines:
        st.caption("Human labels")
        ui.safe_text("\n".join(lines))


def may_label() -> str | None:
    """The reviewer's name when this session may save labels, else None (and says why).

    Without OIDC, asks for a name once per session; a bad name is shown and asked again.
    """
    ok, why = data.can_label()
    if not ok:
        ui.say("info", why, icon=":material/lock:")  # names a location, an OS error
        return None
    name = auth.reviewer()
    if name:
        st.caption(f"Labelling as {escape_word(name)}.")  # a typed name: shown as text
        return name
    with st.form("label_reviewer"):
        typed = st.text_input(
            "Your name, saved with each label you give",
            max_chars=120,
            key="label_reviewer_name",
        )
        if st.form_submit_button("Start labelling"):
            try:
                auth.set_reviewer(typed)
                st.rerun()
            except ConfigError as exc:
                st.error(escape_word(str(exc)))
    return None


def existing(labels: Labels, key: str | None) -> None:
    """The human labels of one claim (`key`) or of the question (None), as plain text."""
    existing_lines(tuple(lab for lab in labels.get(key, ()) if lab.kind in ("claim", "question")))


def _mine(labels: Labels, key: str | None, reviewer: str) -> HumanLabel | None:
    return next((lab for lab in labels.get(key, ()) if lab.reviewer == reviewer), None)


def label_form(
    detail: QuestionDetail,
    claim: Claim | None,
    dataset: DatasetRef,
    labels: Labels,
    reviewer: str,
    *,
    key: str,
) -> None:
    """A form correcting (or confirming) the judge on one claim, or with `claim` None
    marking the whole answer pass or fail; it starts from this reviewer's own label."""
    mine = _mine(labels, claim_key(claim.text) if claim else None, reviewer)
    if claim is not None:
        judged = claim.verdict
        choices, title, save = CLAIM_CHOICES, "Your verdict", "Save claim label"
        current = mine.verdict if mine and mine.verdict != judged else JUDGE_IS_RIGHT
    else:
        judged = question_verdict(
            detail.metrics.get("faithfulness"), detail.judge_error is not None
        )
        choices, save = QUESTION_CHOICES, "Save question label"
        title = f"The answer as a whole (the judge: {judged or 'no verdict'})"
        current = mine.question_label if mine else judged or choices[0]
    submitted = _choice_form(key, title, choices, current, mine.note if mine else "", save)
    if submitted:
        choice, note = submitted
        value = chosen_verdict(choice, judged) if claim else choice
        label = HumanLabel(
            dataset=dataset.name,
            dataset_sha256=dataset.sha256,
            question_id=detail.question_id,
            claim=claim.text if claim else None,
            verdict=value if claim else None,
            question_label=None if claim else value,
            reviewer=reviewer,
            created_at=utc_stamp(),
            note=note.strip(),
            run_id=detail.run_id,
            judge=judged,
        )
        _save(label)


def relevance_form(
    detail: QuestionDetail,
    dataset: DatasetRef,
    reviewer: str,
    judged: str | None,
    *,
    key: str,
    chunk_id: str | None = None,
    answer: str | None = None,
) -> None:
    """A form marking one retrieved chunk (`chunk_id`) relevant to the question or not,
    or the answer (`answer`, its text) as addressing it or not (docs/review.md); it starts
    from this reviewer's own label, else from the judge's verdict."""
    if chunk_id is not None:
        mine = chunk_labels(_all(dataset, detail.question_id), chunk_id)
        title, save_text = "Is this chunk relevant to the question?", "Save chunk label"
    else:
        mine = answer_labels(_all(dataset, detail.question_id), answer or "")
        title, save_text = "Does the answer address the question?", "Save answer label"
    own = next((lab for lab in mine if lab.reviewer == reviewer), None)
    current = label_value(own) if own else judged or RELEVANCE_CHOICES[0]
    title = f"{title} (the judge: {judged or 'no verdict'})"
    submitted = _choice_form(
        key, title, RELEVANCE_CHOICES, current, own.note if own else "", save_text
    )
    if submitted:
        choice, note = submitted
        relevant = choice == RELEVANCE_CHOICES[0]
        _save(
            HumanLabel(
                dataset=dataset.name,
                dataset_sha256=dataset.sha256,
                question_id=detail.question_id,
                claim=None,
                verdict=None,
                question_label=None,
                reviewer=reviewer,
                created_at=utc_stamp(),
                note=note.strip(),
                run_id=detail.run_id,
                judge=judged,
                chunk_id=chunk_id,
                relevant=relevant if chunk_id is not None else None,
                answer=answer if chunk_id is None else None,
                answer_relevant=relevant if chunk_id is None else None,
            )
        )


def _save(label: HumanLabel) -> None:
    """Save one label and draw the page again with it; a failure is said, not raised."""
    try:
        data.save_labels([label])
    except (RagevalError, OSError) as exc:  # the location changed since the probe
        st.error(f"The label was not saved: {escape_word(shown(str(exc), 300, bare=True))}")
        return
    st.rerun()  # drawn again with the new label beside the judge's


def _choice_form(
    key: str, title: str, choices: tuple[str, ...], current: str, note: str, save: str
) -> tuple[str, str] | None:
    """One labelling form: a choice among `choices` (starting at `current`), an optional
    note and a save button; (choice, note) when saved, else None."""
    with st.form(key):
        choice = st.radio(
            title, choices, index=choices.index(current), horizontal=True, key=f"{key}_choice"
        )
        typed = st.text_input("Note (optional)", value=note, max_chars=MAX_NOTE, key=f"{key}_note")
        if st.form_submit_button(save):
            return choice, typed
    return None
