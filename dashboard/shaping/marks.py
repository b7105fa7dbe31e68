"""Untrusted text (answers, claims, chunks, documents) as HTML, with marks around what a
page points at.

The only place the dashboard makes HTML from untrusted text: every piece is `html.escape`d
before a tag is put around it, so a page may pass the output to `unsafe_allow_html`."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rageval_core.models import Claim

FLAGGED_VERDICTS = ("unsupported", "contradicted")


@dataclass(frozen=True)
class Mark:
    """Text to find and mark, the tooltip to give it and the CSS class of the mark."""

    needle: str
    title: str
    css: str


MAX_MARKS = 200
"""Marks placed per text; the rest come back as missed (listed, not highlighted)."""


_LINE_END = re.compile(r"\r\n|\r|\n")


def _spans(text: str, marks: Sequence[Mark]) -> tuple[list[tuple[int, int, Mark]], list[Mark]]:
    """Non-overlapping (start, end, mark) spans of each needle, first match; the misses."""
    taken: list[tuple[int, int, Mark]] = []
    missed: list[Mark] = []
    for i, m in enumerate(marks):
        if i >= MAX_MARKS:  # each mark scans the whole text: bound a pathological row
            missed.append(m)
            continue
        needle = m.needle.strip()
        start = text.find(needle) if needle else -1
        end = start + len(needle)
        if start < 0 and needle:
            # searched in the text itself: offsets found in text.lower() shift wherever
            # lowering changes a character's length ("İ" becomes two)
            hit = re.search(re.escape(needle), text, re.IGNORECASE)
            if hit:
                start, end = hit.span()
        if start < 0 or any(s < end and start < e for s, e, _ in taken):
            missed.append(m)
            continue
        taken.append((start, end, m))
    return sorted(taken, key=lambda t: t[0]), missed


def mark_text(text: str, marks: Sequence[Mark]) -> tuple[str, list[Mark]]:
    """`text` as escaped HTML with each mark's needle wrapped in `<mark>`, in place.

    Spans are found in the raw text and every segment, needle and title is escaped
    separately, so no input can open a tag. Needles not found verbatim (or overlapping an
    earlier one) come back as the second value for the caller to list.
    """
    spans, missed = _spans(text, marks)
    out, pos = [], 0
    for start, end, m in spans:
        out.append(html.escape(text[pos:start]))
        out.append(
            f'<mark class="{html.escape(m.css)}" title="{html.escape(m.title)}">'
            f"{html.escape(text[start:end])}</mark>"
        )
        pos = end
    out.append(html.escape(text[pos:]))
    # every line ending CommonMark knows (\r too): one would end the one-line HTML block
    # and let markdown in the rest of the text be parsed
    return _LINE_END.sub("<br>", "".join(out)), missed


def answer_marks(claims: Iterable[Claim]) -> list[Mark]:
    """A mark per unsupported or contradicted claim, titled with the judge's reason."""
    return [
        Mark(
            c.text,
            f"{c.verdict}: {c.reason}" if c.reason else str(c.verdict),
            f"rageval-{c.verdict}",
        )
        for c in claims
        if c.verdict in FLAGGED_VERDICTS
    ]


def evidence_marks(claims: Iterable[Claim], chunk_id: str) -> list[Mark]:
    """A mark per evidence sentence a claim cites from chunk `chunk_id`."""
    seen: dict[str, Mark] = {}
    for c in claims:
        if c.evidence_chunk_id == chunk_id and c.evidence and c.evidence not in seen:
            seen[c.evidence] = Mark(c.evidence, f"evidence for: {c.text}", "rageval-evidence")
    return list(seen.values())


MARK_STYLE = (
    "<style>"
    "mark.rageval-unsupported{background:#ffe08a;padding:0 2px}"
    "mark.rageval-contradicted{background:#ffb3b3;padding:0 2px}"
    "mark.rageval-evidence{background:#c8f0c8;padding:0 2px}"
    "mark.rageval-gold{background:#c8f0c8;padding:0}"
    "</style>"
)


MAX_TEXT = 50_000
"""Characters of one untrusted text sent to the browser; a runaway answer is cut here."""


def marked_block(text: str | None, marks: Sequence[Mark]) -> tuple[str, list[Mark]]:
    """`mark_text` wrapped in a block with the mark styles: ready for unsafe_allow_html.

    Text past MAX_TEXT is cut (with a note) so one pathological answer cannot ship
    megabytes to every viewer; marks in the cut part come back as missed.
    """
    text = text or ""
    note = ""
    if len(text) > MAX_TEXT:
        note = f'<p class="rageval-cut">… cut: showing {MAX_TEXT:,} of {len(text):,} characters</p>'
        text = text[:MAX_TEXT]
    body, missed = mark_text(text, marks)
    return f'{MARK_STYLE}<div class="rageval-text">{body}</div>{note}', missed


DOCUMENT_MARGIN = 300
"""Characters of a document shown before the first and after the last range drawn."""


def document_block(text: str, gold: Sequence[tuple[int, int]], chunks: Sequence[tuple]) -> str:
    """A document's text around its ranges as escaped HTML: gold spans marked, each
    chunk's start and end shown as `⟨#rank` / `#rank⟩` (`chunks`: rank, id, start, end).

    Offsets come from the run, text from the dataset: every segment is escaped on its own,
    so no document text can open a tag."""
    points = [p for s, e in gold for p in (s, e)] + [p for c in chunks for p in (c[2], c[3])]
    lo = max(0, min(points, default=0) - DOCUMENT_MARGIN)
    hi = min(len(text), max(points, default=0) + DOCUMENT_MARGIN, lo + MAX_TEXT)
    events: dict[int, list[str]] = {}
    for rank, _, s, e in chunks:
        events.setdefault(s, []).append(f"⟨#{rank}")
        events.setdefault(e, []).append(f"#{rank}⟩")
    cuts = sorted({lo, hi, *(p for p in points if lo < p < hi)})
    out = ["…" if lo > 0 else ""]
    for a, b in zip(cuts, cuts[1:], strict=False):
        out += [f"<sup><b>{html.escape(m)}</b></sup>" for m in events.get(a, ())]
        piece = html.escape(text[a:b])
        inside = any(s <= a and b <= e for s, e in gold)
        out.append(
            f'<mark class="rageval-gold" title="gold span">{piece}</mark>' if inside else piece
        )
    out += [f"<sup><b>{html.escape(m)}</b></sup>" for m in events.get(hi, ())]
    out.append("…" if hi < len(text) else "")
    body = _LINE_END.sub("<br>", "".join(out))
    return f'{MARK_STYLE}<div class="rageval-text">{body}</div>'
