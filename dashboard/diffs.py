"""What changed in an answer between two runs, drawn the same way on Compare and on the
Question page: the word diff as markdown, and the claims whose verdict changed.

Tokens are model text. Each one is markdown-escaped (`escape_word`) before it is
wrapped in Streamlit's colour directives, so the result goes to `st.markdown` without
`unsafe_allow_html`: no token can close a directive, open a link or an image, or add HTML.
Claims go to a dataframe (plain text). The diff itself is computed in the library
(`rageval_core.query.answer_diff`).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rageval_core.catalogue import failure_label
from rageval_core.links import escape_word, md_escape
from rageval_core.numbers import MISSING
from rageval_core.query import AnswerDiff, DiffToken

_WRAP = {
    "same": "{}",
    "added": ":green-background[{}]",
    "removed": ":red-background[~~{}~~]",
}


def diff_markdown(tokens: tuple[DiffToken, ...]) -> str:
    """Removed words struck through on red, added ones on green, the rest as is."""
    if not tokens:
        return "*(no answer in either run)*"
    return " ".join(_WRAP[t.op].format(escape_word(t.text)) for t in tokens)


def claim_rows(d: AnswerDiff) -> pd.DataFrame:
    """Claims whose verdict changed, one row each (`—`: the run did not make the claim)."""
    return pd.DataFrame(
        {
            "claim": [c.text for c in d.claims],
            "before": [c.before or MISSING for c in d.claims],
            "after": [c.after or MISSING for c in d.claims],
        }
    )


def show_answer_diff(d: AnswerDiff, key: str) -> None:
    """The diff of `d` under a caption naming both runs and the failure-type change."""
    change = md_escape(  # failure types are read from the run's files
        f"{failure_label(d.base_failure_type or 'unknown')} → "
        f"{failure_label(d.failure_type or 'unknown')}"
    )
    st.caption(
        f"Answer in `{d.base_run}` → `{d.run}` ({change}): {d.summary()}. "
        "Removed words are struck through in red, added ones green."
        + (" Long answers are compared on their first 5,000 words." if d.truncated else "")
    )
    with st.container(border=True, key=f"{key}_answer_diff"):
        st.markdown(diff_markdown(d.tokens))
    if d.claims:
        st.dataframe(claim_rows(d), hide_index=True, width="stretch", key=f"{key}_claims")
