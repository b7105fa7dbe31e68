"""Calibration's text: how far a judge's verdicts agree with human labels, as `rageval
calibrate` prints it.

Labels come from the labels location (docs/review.md, `labels/`) and/or an older labels
file (`labels/older_yaml.py`); the figures are the Judge page's (`query.judge_reports`).
Labels that match nothing are listed, never silently dropped. This module only formats;
the comparison itself lives in the query layer.
"""

from __future__ import annotations

from collections.abc import Mapping

from rageval_core.labels import Agreement, LabelSet, claim_key
from rageval_core.query import JudgeReport


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _short(text: str | None, width: int = 70) -> str:
    """Model or user text on one line of a terminal: control characters (an escape
    sequence in a claim) become spaces, runs of white space one."""
    text = " ".join("".join(c if c.isprintable() else " " for c in text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _where(question_id: str, claim: str | None) -> str:
    """`q1 "the claim"`, or `q1` for an answer, as a line of the report names a label."""
    return _short(question_id, 60) + (f' "{_short(claim)}"' if claim else "")


def format_agreement(a: Agreement) -> list[str]:
    """The figures of one Agreement, as the Judge page shows them."""
    interval = (
        f" (95% CI {_num(a.kappa_low)} to {_num(a.kappa_high)})" if a.kappa_low is not None else ""
    )
    lines = [f"  n {a.n}   agreement {_num(a.raw)}   Cohen's kappa {_num(a.kappa)}{interval}"]
    if a.unsupported_precision is not None or a.unsupported_recall is not None:
        lines.append(
            f"  unsupported: precision {_num(a.unsupported_precision)}   "
            f"recall {_num(a.unsupported_recall)}"
        )
    width = max(map(len, a.categories)) + 2
    lines.append("  confusion (rows: human, columns: judge)")
    lines.append("  " + " " * width + "".join(c.rjust(width) for c in a.categories))
    for human, row in zip(a.categories, a.confusion, strict=True):
        lines.append("  " + human.ljust(width) + "".join(str(n).rjust(width) for n in row))
    return lines


def format_report(
    report: JudgeReport,
    labels: LabelSet,
    reasons: Mapping[tuple[str, str, str | None], str] | None = None,
    relevance: Mapping[str, Agreement] | None = None,
) -> str:
    """`rageval calibrate`'s text: per kind of label, how many were labelled and matched,
    the figures, every disagreement (with its run, reviewer and the judge's reason from
    `reasons`, see `query.judge_reasons`) and every unmatched label; then chunk
    relevance and answer relevancy from `relevance` (`query.relevance_agreement`,
    in the order of its `RELEVANCE_METRICS`). `labels` are those on the dataset versions
    of the report's runs."""
    reasons = reasons or {}
    unmatched = set(report.unmatched)
    runs = ", ".join(report.runs[:3]) + (
        f" and {len(report.runs) - 3} more" if len(report.runs) > 3 else ""
    )
    parts = [f"Judge: {report.judge.label()} ({len(report.runs)} run(s): {runs})"]
    for title, agreement, kind in (
        ("Claims", report.claims, "claim"),
        ("Questions (faithful)", report.questions, "question"),
    ):
        is_claim = kind == "claim"
        mine = [lab for lab in labels.labels if lab.kind == kind]
        if not mine:
            continue
        missing = [lab for lab in mine if lab in unmatched]
        parts += [
            "",
            f"{title}: {len(mine)} labelled, {len(mine) - len(missing)} matched, "
            f"{len(missing)} unmatched",
            *format_agreement(agreement),
        ]
        found = [d for d in report.disagreements if (d.claim is not None) == is_claim]
        if found:
            parts.append(f"  disagreements ({len(found)}):")
            for d in found:
                parts.append(
                    f"    {_where(d.question_id, d.claim)}: human {d.human}, judge {d.judge} "
                    f"(run {d.run_id}, {_short(d.reviewer, 40)})"
                )
                reason = reasons.get((d.run_id, d.question_id, claim_key(d.claim)))
                if reason:
                    parts.append(f"      judge's reason: {_short(reason, 90)}")
        if missing:
            parts.append(f"  unmatched labels ({len(missing)}):")
            parts += [
                f"    {_where(lab.question_id, lab.claim)}: no run of this judge has it"
                for lab in missing
            ]
    for (title, kind), agreement in zip(
        (("Chunk relevance", "chunk"), ("Answer relevancy", "answer")),
        (relevance or {}).values(),
        strict=False,
    ):
        n = sum(lab.kind == kind for lab in labels.labels)
        if n:
            parts += [
                "",
                f"{title}: {n} labelled, {agreement.n} matched, {n - agreement.n} unmatched",
                *format_agreement(agreement),
            ]
    if len(parts) == 1:
        parts.append("no labels")
    return "\n".join(parts)
