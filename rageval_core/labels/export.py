"""Labels as files to share: CSV (one row per label, every field) and the labels YAML
that `rageval calibrate LABELS.yaml` reads (plus the newer fields, which it ignores).

CSV cells that a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR first)
get a leading `'`: claims and notes are model and user text, and opening an export must
not execute it.
"""

from __future__ import annotations

import csv
import io
import unicodedata
from collections import Counter
from collections.abc import Sequence

import yaml

from rageval_core.errors import ConfigError
from rageval_core.labels.model import FIELDS, NEW_FIELDS, HumanLabel

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> str:
    """`value` as a cell a spreadsheet shows as text: a formula start is prefixed with `'`,
    also behind leading white space (` =`, `\n=`) and in its full-width form (`＝`, which
    NFKC folds to `=` and some spreadsheets run)."""
    text = "" if value is None else str(value)
    head = unicodedata.normalize("NFKC", text.lstrip(" \t\r\n\u3000\xa0")[:1])
    return f"'{text}" if text.startswith(_FORMULA_START) or head in _FORMULA_START else text


def to_csv(labels: Sequence[HumanLabel]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FIELDS + NEW_FIELDS)
    for lab in labels:
        d = lab.to_dict()
        writer.writerow([_cell(d.get(f)) for f in FIELDS + NEW_FIELDS])
    return out.getvalue()


def to_yaml(labels: Sequence[HumanLabel]) -> str:
    """The older labels YAML. It has one label per question and claim, so labels of one
    claim by several reviewers (or on several dataset versions) are refused: pick them
    with --reviewer / --dataset."""
    keys = Counter((lab.question_id, lab.subject) for lab in labels)
    clashes = sorted({qid for (qid, _), n in keys.items() if n > 1})
    if clashes:
        raise ConfigError(
            f"{len(clashes)} question(s) have several labels of one claim (several reviewers "
            f"or dataset versions), e.g. {clashes[0][:60]!r}: the YAML format holds one; "
            "narrow with --reviewer or --dataset, or export csv"
        )
    entries = []
    for lab in labels:
        e: dict[str, object] = {"question_id": lab.question_id}
        kind = lab.kind
        if kind == "claim":
            e |= {"claim": lab.claim, "verdict": lab.verdict}
        elif kind == "chunk":
            e |= {"chunk_id": lab.chunk_id, "relevant": lab.relevant}
        elif kind == "answer":
            e |= {"answer": lab.answer, "answer_relevant": lab.answer_relevant}
        else:
            e["faithful"] = lab.question_label == "pass"
        e |= {k: v for k, v in lab.to_dict().items() if k not in e and v not in ("", None)}
        entries.append(e)
    return yaml.safe_dump({"labels": entries}, allow_unicode=True, sort_keys=False, width=100)
