"""The metric catalogue: every pinned column and summary key described once, labels unique,
declared metrics validated (docs/metrics.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core import numbers
from rageval_core.catalogue import (
    BUILTIN,
    DECLARED_NAME_RE,
    FAILURE_GROUPS,
    GROUP_ORDER,
    GROUPS,
    SECTIONS,
    DeclaredMetric,
    failure_label,
    failure_rank,
    parse_declared,
)
from rageval_core.errors import ConfigError
from rageval_core.models import FAILURE_TYPES
from rageval_core.numbers import MISSING
from rageval_core.runs.rows import QUESTION_SCHEMA
from rageval_core.runs.summary import SUMMARY_KEYS

ROOT = Path(__file__).resolve().parents[2]


def test_every_numeric_pinned_column_is_a_measure() -> None:
    numeric = {
        f.name
        for f in QUESTION_SCHEMA
        if str(f.type) in ("double", "int64") and f.name not in ("input_tokens", "output_tokens")
    }
    assert numeric == set(BUILTIN.measures)


def test_every_summary_key_is_a_figure_and_nothing_else() -> None:
    assert set(SUMMARY_KEYS) == set(BUILTIN.figures)


def test_labels_are_unique_within_measures_and_within_figures() -> None:
    for entries in (BUILTIN.measures, BUILTIN.figures):
        labels = [m.label for m in entries.values()]
        assert len(labels) == len(set(labels)), sorted(labels)


def test_directions_units_and_groups_are_known() -> None:
    for m in BUILTIN:
        assert m.direction in ("higher", "lower")
        assert m.groups <= set(GROUPS), m
    assert BUILTIN.lower_is_better("total_ms_p95") and BUILTIN.lower_is_better("cost_usd")
    assert BUILTIN.lower_is_better("missed_refusal_rate")
    assert not BUILTIN.lower_is_better("faithfulness_p10")


def test_correctness_figures_say_they_cover_answerable_questions() -> None:
    assert BUILTIN.label("answer_correctness") == "correctness (answerable)"
    assert BUILTIN.metric("answer_correctness_p10").answerable_only
    assert BUILTIN.measures["answer_correctness"].label == "answer correctness"
    # one question's correctness is its own score: no "(answerable)" beside it
    assert BUILTIN.question_label("answer_correctness") == "answer correctness"
    assert BUILTIN.question_label("recall_at_20") == BUILTIN.label("recall_at_20") == "recall@20"
    assert BUILTIN.label("total_ms_p95") == "p95 latency (ms)"
    assert BUILTIN.bounds("faithfulness") == (0.0, 1.0)
    assert not BUILTIN.metric("faithfulness").answerable_only


def test_units_format_their_values() -> None:
    assert BUILTIN.fmt("total_ms_p95", 1435.2) == "1,435 ms"
    assert BUILTIN.fmt("total_ms_p95", 16.04) == "16 ms"
    assert BUILTIN.fmt("total_ms_p95", 12_400) == "12.4 s"
    assert BUILTIN.fmt("faithfulness", 0.8123) == "0.812"
    assert BUILTIN.fmt("missed_refusal_rate", 0.3077) == "30.8%"
    assert BUILTIN.fmt("total_cost_per_question", 7.002e-05) == "$0.000070"
    assert BUILTIN.fmt("cost_usd_total", 12.345) == "$12.35"
    assert BUILTIN.fmt("failure_ok", 1234) == "1,234"
    assert BUILTIN.fmt("faithfulness", None) == MISSING
    assert BUILTIN.fmt("faithfulness", float("nan")) == MISSING


def test_thresholds_read_as_written() -> None:
    assert [numbers.short(x) for x in (0.85, 0.4506, 1e-05, 12.0)] == [
        "0.85",
        "0.4506",
        "0.00001",
        "12",
    ]


def test_deltas_carry_their_sign_and_unit() -> None:
    assert BUILTIN.fmt_delta("total_cost_per_question", -3.33e-05) == "−$0.000033"
    assert BUILTIN.fmt_delta("total_ms_p95", 6.2) == "+6.2 ms"
    assert BUILTIN.fmt_delta("missed_refusal_rate", -0.05) == "−5.0 pp"
    assert BUILTIN.fmt_delta("recall_at_5", 0.0712) == "+0.071"
    assert BUILTIN.fmt_delta("recall_at_5", None) == MISSING


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(sorted(BUILTIN.figures)),
    st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False),
)
def test_no_number_is_written_in_e_notation(name: str, value: float) -> None:
    for text in (BUILTIN.fmt(name, value), BUILTIN.fmt_delta(name, value), numbers.short(value)):
        assert not re.search(r"\de[-+]?\d", text), (name, value, text)


def test_every_metric_has_a_definition_and_a_docs_section() -> None:
    """Every entry's help text says what it is and links to its section of the definitions.

    A new built-in metric needs a one-line entry in `DEFINITIONS` of
    rageval_core/catalogue/definitions.py (or a rule in `define`) and its section in
    `catalogue.SECTIONS` (kept to docs/metrics.md's headings by the test below)."""
    raw = {"toxicity": {"label": "toxicity", "direction": "lower"}}
    cat = BUILTIN.with_declared(parse_declared(raw, "run/manifest.json"))
    undefined = [m.name for m in cat if not m.definition]
    assert not undefined, (
        f"metrics without a definition: {undefined}; add a line to catalogue/definitions.py"
    )
    unanchored = {m.name: m.doc for m in cat if m.doc not in SECTIONS}
    assert not unanchored, f"sections missing from catalogue.SECTIONS: {unanchored}"
    assert all(f"[Definition]({SECTIONS[m.doc].link})" in m.help for m in cat)
    assert "lower is better" in cat.help("toxicity_p10")
    assert "milliseconds, lower is better" in BUILTIN.help("total_ms_p95")
    assert BUILTIN.measures["recall_at_5"].help.endswith(
        "(definitions#retrieval-per-answerable-question)"
    )
    assert BUILTIN.entry("no_such_column").link == "definitions"  # the page's top
    assert BUILTIN.help("recall_at_5").startswith("mean over the questions")
    assert BUILTIN.help("no_such_column") is None


def test_every_section_is_a_heading_of_docs_metrics_md_in_its_order() -> None:
    """The definitions page's sections are docs/metrics.md's, titled and anchored as there
    (GitHub's anchors), so the report's "docs/metrics.md, <title>" finds its text."""
    headings = [
        h.lstrip("#").strip()
        for h in (ROOT / "docs" / "metrics.md").read_text().splitlines()
        if h.startswith("## ")
    ]
    titles = [s.title for s in SECTIONS.values()]
    assert set(titles) <= set(headings), set(titles) - set(headings)
    assert titles == [h for h in headings if h in titles]  # the docs' order
    assert all(_slug(s.title) == a == s.anchor for a, s in SECTIONS.items())
    assert all(s.lead.endswith(".") for s in SECTIONS.values())
    assert SECTIONS["per-run"].source == 'docs/metrics.md, "Per run"'


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    kept = "".join(c for c in heading.strip().lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


@pytest.mark.parametrize(
    ("delta", "interval", "noise", "expected"),
    [
        (0.05, (0.01, 0.09), None, "better"),
        (0.05, (-0.01, 0.09), None, "same"),  # the paired interval includes 0
        (-0.05, None, None, "worse"),
        (6.0, None, 8.0, "same"),  # latency within the spread of earlier runs
        (9.0, None, 8.0, "worse"),
        (0.0, None, None, "same"),
        (None, None, None, None),
    ],
)
def test_a_change_within_its_noise_is_neither_better_nor_worse(
    delta: float | None, interval: tuple[float, float] | None, noise: float | None, expected: str
) -> None:
    name = "total_ms_p95" if noise is not None else "recall_at_5"
    assert BUILTIN.metric(name).reading(delta, interval, noise) == expected


def test_a_declared_metric_gets_a_mean_and_a_p10_like_faithfulness() -> None:
    raw = {"groundedness": {"label": "groundedness", "direction": "higher"}}
    cat = BUILTIN.with_declared(parse_declared(raw, "run/manifest.json"))
    assert cat.metric("groundedness").declared
    assert cat.label("groundedness_p10") == "groundedness p10"
    assert "groundedness" in cat.figure_names("runs")
    assert "groundedness" in cat.measure_names("compare")
    assert "groundedness" in cat.measure_names("tails")
    assert "groundedness" not in BUILTIN.measures  # the built-in one is unchanged


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ({'x"; DROP TABLE runs; --': {}}, "lowercase letters"),
        ({"Answer": {}}, "lowercase letters"),
        ({"a" * 65: {}}, "lowercase letters"),
        ({"faithfulness": {}}, "shadows a built-in"),
        ({"recall_at_5_p10": {}}, "shadows a built-in"),
        ({"relevancy": {"direction": "sideways"}}, "direction"),
        ({"relevancy": {"range": [1, 0]}}, "range"),
        ({"relevancy": {"range": "furlongs"}}, "range"),
        ({"relevancy": {"label": "x" * 81}}, "label"),
        ({"relevancy": 3}, "mapping"),
        (["relevancy"], "mapping"),
    ],
)
def test_bad_declarations_are_refused_naming_the_file(raw: object, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle) as err:
        parse_declared(raw, "runs/x/manifest.json")
    assert "runs/x/manifest.json" in str(err.value)
    assert len(str(err.value)) < 300


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_only_identifier_names_are_accepted(name: str) -> None:
    try:
        (d,) = parse_declared({name: {}}, "m.json")
    except ConfigError:
        assert not DECLARED_NAME_RE.fullmatch(name) or BUILTIN.metric(name) or name.endswith("_p10")
    else:
        assert isinstance(d, DeclaredMetric) and DECLARED_NAME_RE.fullmatch(d.name)
        assert '"' not in d.name and len(d.name) <= 64


def test_declarations_that_disagree_on_direction_are_refused() -> None:
    up = parse_declared({"groundedness": {"direction": "higher"}}, "a.json")
    down = parse_declared({"groundedness": {"direction": "lower"}}, "b.json")
    with pytest.raises(ConfigError, match="both"):
        BUILTIN.with_declared(up).with_declared(down)


def test_every_failure_type_has_one_group_in_the_listed_order():
    assert set(FAILURE_GROUPS) == set(FAILURE_TYPES)
    assert set(FAILURE_GROUPS.values()) == set(GROUP_ORDER)
    ranked = sorted(FAILURE_TYPES, key=failure_rank)
    assert ranked == [
        "retrieval_miss",
        "ranking_miss",
        "irrelevant_context",
        "unfaithful",
        "off_topic",
        "incorrect",
        "missed_refusal",
        "false_refusal",
        "error",
        "unscored",
        "ok",
    ]
    assert failure_rank("not_a_type") > failure_rank("ok")  # a damaged file's type: last


def test_failure_counts_are_labelled_as_the_pages_label_a_type():
    for ft in FAILURE_TYPES:
        assert BUILTIN.label(f"failure_{ft}") == failure_label(ft)
    assert failure_label("missed_refusal") == "missed refusal"
