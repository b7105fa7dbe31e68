"""Calibration: how far a judge's verdicts agree with human labels (`rageval calibrate`).

A labels file (YAML) holds claim labels and/or question labels::

    labels:
      - {question_id: q001, claim: "Hybrid search mixes BM25 and vectors.", verdict: supported}
      - {question_id: q002, faithful: false}

Claim labels are matched to the run's judged claims by question id and normalised claim
text (lower case, no punctuation or articles — `metrics.generation.normalize_answer`).
A question label is compared with "faithfulness >= faithful_min" (default 1.0: every
claim supported). Labels that match nothing are reported, never silently dropped.
This module reads the labels file; it never reads a run (the caller passes its rows).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rageval_core.errors import ConfigError, DatasetError
from rageval_core.metrics.generation import normalize_answer
from rageval_core.models import VERDICTS
from rageval_core.userfiles import SafeLoader, load_yaml, plain

FAITHFUL = ("faithful", "unfaithful")
_NUMBER_TAGS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}


class _LabelLoader(SafeLoader):  # type: ignore[misc, valid-type]
    """Safe YAML where numbers stay the text written: the dataset keeps `id: 001` as "001",
    so a label must too, or it would match no question. Booleans (`faithful:`) still parse."""

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in _NUMBER_TAGS]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


@dataclass(frozen=True)
class Label:
    """One human judgement: of a claim (`claim` set) or of a whole answer (`claim` None)."""

    question_id: str
    verdict: str  # one of VERDICTS for a claim, one of FAITHFUL for a question
    claim: str | None = None


def load_labels(path: str | Path) -> list[Label]:
    """Read and validate a labels file; every problem is listed in one DatasetError."""
    path = Path(path)
    doc = load_yaml(path, "labels file", DatasetError, _LabelLoader)
    entries = doc.get("labels") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise DatasetError(f"{path}: expected a mapping with a 'labels' list")
    labels, problems, seen = [], [], set()
    for i, e in enumerate(entries):
        where = f"{path}: labels[{i}]"
        if not isinstance(e, dict) or not isinstance(e.get("question_id"), str | int):
            problems.append(f"{where}: needs a question_id")
            continue
        qid = str(e["question_id"])
        where = f"{where} ({plain(qid)})"
        if "claim" in e:
            claim, verdict = e.get("claim"), e.get("verdict")
            if not isinstance(claim, str) or not claim.strip():
                problems.append(f"{where}: claim must be non-empty text")
                continue
            if verdict not in VERDICTS:
                problems.append(f"{where}: verdict must be one of {', '.join(VERDICTS)}")
                continue
            label = Label(qid, verdict, claim)
        elif isinstance(e.get("faithful"), bool):
            label = Label(qid, FAITHFUL[0] if e["faithful"] else FAITHFUL[1])
        else:
            problems.append(f"{where}: needs claim + verdict, or faithful: true|false")
            continue
        key = (qid, normalize_answer(label.claim) if label.claim else None)
        if key in seen:
            problems.append(f"{where}: duplicate label")
            continue
        seen.add(key)
        labels.append(label)
    if problems:
        raise DatasetError(f"{path}: invalid labels", problems)
    return labels


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of (human, judge) pairs.

    κ = (p_o − p_e) / (1 − p_e), p_o = share of pairs that agree, p_e = Σ_k p_human(k) ·
    p_judge(k). None when undefined: no pairs, or p_e = 1 (both raters used one and the
    same category for everything, so chance explains all agreement).
    """
    n = len(pairs)
    if n == 0:
        return None
    p_o = sum(h == j for h, j in pairs) / n
    human, judge = Counter(h for h, _ in pairs), Counter(j for _, j in pairs)
    p_e = sum(human[k] * judge[k] for k in human) / (n * n)
    if p_e >= 1:
        return None
    return (p_o - p_e) / (1 - p_e)


@dataclass(frozen=True)
class Disagreement:
    question_id: str
    claim: str | None
    human: str
    judge: str
    reason: str


@dataclass
class Agreement:
    """Human × judge agreement over one kind of label (claims or questions)."""

    categories: tuple[str, ...]
    pairs: list[tuple[str, str]] = field(default_factory=list)
    disagreements: list[Disagreement] = field(default_factory=list)
    unmatched: list[tuple[Label, str]] = field(default_factory=list)

    def add(self, label: Label, judged: str, reason: str) -> None:
        self.pairs.append((label.verdict, judged))
        if label.verdict != judged:
            self.disagreements.append(
                Disagreement(label.question_id, label.claim, label.verdict, judged, reason)
            )

    @property
    def agreement(self) -> float | None:
        return sum(h == j for h, j in self.pairs) / len(self.pairs) if self.pairs else None

    @property
    def kappa(self) -> float | None:
        return cohen_kappa(self.pairs)

    def confusion(self) -> dict[str, dict[str, int]]:
        """counts[human][judge] over every category, zeros included."""
        counts = Counter(self.pairs)
        return {h: {j: counts[(h, j)] for j in self.categories} for h in self.categories}


@dataclass
class Calibration:
    claims: Agreement
    questions: Agreement


def check_faithful_min(value: float, name: str = "faithful_min") -> float:
    """`value` if it is a faithfulness (0..1); ConfigError otherwise (NaN included)."""
    if not 0.0 <= value <= 1.0:  # written so NaN fails too
        raise ConfigError(f"{name} must be between 0 and 1, got {value}")
    return value


def calibrate(
    labels: Iterable[Label], rows: Iterable[Mapping[str, Any]], faithful_min: float = 1.0
) -> Calibration:
    """Compare labels with a run's rows (question_id, claims, faithfulness, judge_error)."""
    # Out of range, every question would count as (un)faithful: a silent, useless kappa.
    check_faithful_min(faithful_min)
    by_question = {str(r["question_id"]): r for r in rows}
    result = Calibration(Agreement(VERDICTS), Agreement(FAITHFUL))
    for label in labels:
        row = by_question.get(label.question_id)
        target = result.claims if label.claim is not None else result.questions
        if row is None:
            target.unmatched.append((label, "question not in the run"))
            continue
        if label.claim is None:
            faith = row.get("faithfulness")
            if faith is None:
                why = row.get("judge_error") or "refusal or no claims"
                target.unmatched.append((label, f"judge gave no faithfulness ({why})"))
                continue
            judged = FAITHFUL[0] if faith >= faithful_min else FAITHFUL[1]
            target.add(label, judged, f"faithfulness {faith:.2f}")
            continue
        wanted = normalize_answer(label.claim)
        match = next(
            (c for c in row.get("claims") or () if normalize_answer(c.get("text") or "") == wanted),
            None,
        )
        if match is None:
            target.unmatched.append((label, "no judged claim with this text"))
        else:
            target.add(label, match.get("verdict") or "", match.get("reason") or "")
    return result


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _short(text: str | None, width: int = 70) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def format_agreement(title: str, a: Agreement) -> list[str]:
    """Agreement, kappa, confusion matrix, disagreements and unmatched labels as text."""
    if not a.pairs and not a.unmatched:
        return []
    lines = [
        f"{title}: {len(a.pairs) + len(a.unmatched)} labelled, {len(a.pairs)} matched, "
        f"{len(a.unmatched)} unmatched",
        f"  agreement {_num(a.agreement)}   Cohen's kappa {_num(a.kappa)}",
        "  confusion (rows: human, columns: judge)",
    ]
    width = max(map(len, a.categories)) + 2
    lines.append("  " + " " * width + "".join(c.rjust(width) for c in a.categories))
    for human, row in a.confusion().items():
        lines.append("  " + human.ljust(width) + "".join(str(n).rjust(width) for n in row.values()))
    if a.disagreements:
        lines.append(f"  disagreements ({len(a.disagreements)}):")
        for d in a.disagreements:
            what = f' "{_short(d.claim)}"' if d.claim else ""
            lines.append(
                f"    {d.question_id}{what}: human {d.human}, judge {d.judge} "
                f"({_short(d.reason, 90)})"
            )
    if a.unmatched:
        lines.append(f"  unmatched labels ({len(a.unmatched)}):")
        for label, why in a.unmatched:
            what = f' "{_short(label.claim)}"' if label.claim else ""
            lines.append(f"    {label.question_id}{what}: {why}")
    return lines


def format_calibration(c: Calibration) -> str:
    parts = format_agreement("Claims", c.claims)
    questions = format_agreement("Questions (faithful)", c.questions)
    if parts and questions:
        parts.append("")
    return "\n".join(parts + questions) or "no labels"
