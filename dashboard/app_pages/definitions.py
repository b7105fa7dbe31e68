"""Definitions: what every figure means, one section per anchor the help texts link to.

Drawn from the catalogue (`rageval_core.catalogue.SECTIONS` and each metric's one line),
the same text as every tooltip, so the dashboard explains itself offline and at any
address. docs/metrics.md holds the formulas and edge cases under the same headings. The
page publishes no URL state: rewriting the query string would drop the `#section` a help
link opened it at.
"""

import streamlit as st

from dashboard import data, ui
from rageval_core.catalogue import SECTIONS
from rageval_core.links import md_escape

ui.start("definitions")
st.caption(
    "Every figure the dashboard shows, with its unit and direction. The formulas and edge "
    "cases are in docs/metrics.md of rageval, under the same section titles."
)
cat = data.catalogue()
for section in SECTIONS.values():
    st.header(section.title, anchor=section.anchor)
    st.write(section.lead)
    metrics = cat.in_section(section.anchor)
    if metrics:
        # A static table, not a data grid: its height is known at the first paint, so a
        # link to a section below lands there (a grid loads its code later and grows,
        # pushing the section out of view after the browser scrolled to it). Cells are
        # markdown: texts escaped (declared metrics come from run manifests), names are
        # identifiers (`DECLARED_NAME_RE`) shown as code.
        st.table(
            [
                {
                    "figure": md_escape(m.label),
                    "column": f"`{m.name}`",
                    "what it is": md_escape(m.definition),
                    "unit": md_escape(m.says),
                    "better": m.direction,
                }
                for m in metrics
            ],
            hide_index=True,
        )
