"""The judge's pass/fail of one whole answer: what a person's pass/fail label is
compared with on the Question page's form, the Judge page and in `rageval calibrate`.

One rule, written twice because it runs in two places: `question_verdict` for one
question in Python, `VERDICT_SQL`/`JUDGED_SQL` for every labelled question in DuckDB
(`query/_sql.py` builds them into its label joins). A test runs both on the same inputs.

The answer fails when the judge failed, or when its faithfulness is below
`faithful_min` (by default 1.0: any claim not supported fails it). A judge that gave no
faithfulness (a refusal, no claims; NaN counts as none) judged nothing: no verdict.
"""

from __future__ import annotations

import math

from rageval_core.errors import ConfigError

FAITHFUL_MIN = 1.0
"""The faithfulness an answer needs to pass, unless `--faithful-min` says otherwise."""

VERDICT_SQL = "CASE WHEN judge_failed OR faithfulness < $faithful_min THEN 'fail' ELSE 'pass' END"
"""`question_verdict` over columns `judge_failed`, `faithfulness` (bound `$faithful_min`);
meaningful where `JUDGED_SQL` holds."""
JUDGED_SQL = "(judge_failed OR (faithfulness IS NOT NULL AND NOT isnan(faithfulness)))"
"""Whether `question_verdict` gives a verdict at all."""


def check_faithful_min(value: float, name: str = "faithful_min") -> float:
    """`value` if it is a faithfulness (0..1); ConfigError otherwise (NaN included): out
    of range every question would count as pass (or fail), a silent, useless kappa."""
    if not 0.0 <= value <= 1.0:  # written so NaN fails too
        raise ConfigError(f"{name} must be between 0 and 1, got {value}")
    return value


def question_verdict(
    faithfulness: float | None, judge_failed: bool, faithful_min: float = FAITHFUL_MIN
) -> str | None:
    """The judge's verdict on one answer, "pass" or "fail"; None when it judged nothing."""
    if judge_failed:
        return "fail"
    if faithfulness is None or math.isnan(faithfulness):
        return None
    return "pass" if faithfulness >= faithful_min else "fail"
