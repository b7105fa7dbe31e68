"""The judge's pass/fail of a whole answer: one rule, the same in Python (the Question
page's form) and in DuckDB (the label joins of the Judge page and `rageval calibrate`)."""

from __future__ import annotations

import math

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rageval_core.errors import ConfigError
from rageval_core.labels.verdict import (
    FAITHFUL_MIN,
    JUDGED_SQL,
    VERDICT_SQL,
    check_faithful_min,
    question_verdict,
)


@pytest.mark.parametrize(
    ("faithfulness", "judge_failed", "want"),
    [(1.0, False, "pass"), (0.99, False, "fail"), (1.0, True, "fail"), (None, False, None)],
)
def test_by_default_an_answer_passes_only_when_every_claim_is_supported(
    faithfulness, judge_failed, want
):
    assert FAITHFUL_MIN == 1.0
    assert question_verdict(faithfulness, judge_failed) == want
    assert question_verdict(float("nan"), False) is None
    assert question_verdict(None, True) == "fail"  # a failed judge fails the answer


def test_the_threshold_is_the_one_given():
    assert question_verdict(0.8, False, faithful_min=0.8) == "pass"
    assert question_verdict(0.79, False, faithful_min=0.8) == "fail"


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan])
def test_a_threshold_outside_zero_to_one_is_refused(bad):
    with pytest.raises(ConfigError, match="--faithful-min must be between 0 and 1"):
        check_faithful_min(bad, "--faithful-min")


_CON = duckdb.connect()
_SCORES = st.one_of(
    st.none(),
    st.just(math.nan),
    st.sampled_from([0.0, 0.5, 0.8, 1.0]),
    st.floats(0, 1),
)


@given(faithfulness=_SCORES, judge_failed=st.booleans(), faithful_min=st.floats(0, 1))
def test_the_sql_spelling_gives_what_the_python_one_gives(faithfulness, judge_failed, faithful_min):
    verdict, judged = _CON.execute(
        f"SELECT {VERDICT_SQL}, {JUDGED_SQL} FROM "
        "(SELECT $f::DOUBLE AS faithfulness, $j::BOOLEAN AS judge_failed)",
        {"f": faithfulness, "j": judge_failed, "faithful_min": faithful_min},
    ).fetchone()
    want = question_verdict(faithfulness, judge_failed, faithful_min)
    assert (verdict if judged else None) == want
