"""The Judge page's tables: agreement of judges with people, disagreements, coverage."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from dashboard.shaping.compare import shorten
from dashboard.shaping.labels import TOO_FEW
from rageval_core import numbers
from rageval_core.labels.agreement import Agreement
from rageval_core.numbers import MISSING, absent
from rageval_core.query import Disagreement, RunCoverage

KAPPA = "Cohen's kappa"


def _share(x: float | None) -> str:
    return MISSING if absent(x) else numbers.percent(float(x))  # type: ignore[arg-type]


def agreement_table(agreements: Mapping[str, Agreement]) -> pd.DataFrame:
    """The figures of each agreement (a column per title), formatted, with the number of
    labels behind them; "unsupported" precision and recall where they are defined."""
    rows: dict[str, dict[str, str]] = {}
    for title, a in agreements.items():
        ci = (
            f"{numbers.agreement(a.kappa_low)} to {numbers.agreement(a.kappa_high)}"
            if a.kappa_low is not None and a.kappa_high is not None
            else MISSING
        )
        rows[title] = {
            KAPPA: numbers.agreement(a.kappa),
            "95% interval (bootstrap)": ci,
            "raw agreement": _share(a.raw),
            "labels behind these figures": f"{a.n:,}",
            "“unsupported” precision": _share(a.unsupported_precision),
            "“unsupported” recall": _share(a.unsupported_recall),
        }
    return pd.DataFrame(rows)


def too_few_note(a: Agreement, min_n: int = TOO_FEW) -> str | None:
    """A warning when `a` rests on too few labels to trust, else None."""
    if a.n == 0:
        return "No labels yet: label claims on the Question or Review page."
    if a.n < min_n:
        return (
            f"Only {a.n} label{'s' if a.n != 1 else ''}: too few to trust. Below {min_n} the "
            "95% interval is wide; label more before acting on these figures."
        )
    return None


def labelled_agreements(agreements: Mapping[str, Agreement]) -> dict[str, Agreement]:
    """The agreements some label stands behind: a metric nobody labelled is no figure."""
    return {title: a for title, a in agreements.items() if a.n}


def disagreement_rows(disagreements: Sequence[Disagreement]) -> pd.DataFrame:
    """One row per disagreement (run, question, claim, human, judge, reviewer, note)."""
    return pd.DataFrame(
        [
            {
                "run_id": d.run_id,
                "question_id": d.question_id,
                "claim": shorten(d.claim) if d.claim is not None else "(whole answer)",
                "human": d.human,
                "judge": d.judge,
                "reviewer": d.reviewer,
                "note": shorten(d.note),
            }
            for d in disagreements
        ],
        columns=["run_id", "question_id", "claim", "human", "judge", "reviewer", "note"],
    )


def coverage_columns(run_ids: Iterable[str], coverage: Mapping[str, RunCoverage]) -> pd.DataFrame:
    """Per run, "claims checked" (`12 of 240`) and the judge's kappa on those claims."""
    rows = []
    for r in run_ids:
        c = coverage.get(r)
        rows.append(
            {
                "claims checked": f"{c.checked:,} of {c.claims:,}" if c and c.claims else MISSING,
                "judge κ": c.kappa if c else None,
            }
        )
    return pd.DataFrame(rows, columns=["claims checked", "judge κ"])
