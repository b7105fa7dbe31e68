"""Metrics a run declares in its manifest (`metrics:`) appear wherever built-in ones do:
the cache, the runs overview and trend, tails, the question table, compare and check; a
hostile or invalid declaration is a problem of a run that is still listed (SPEC §9)."""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.catalogue import DECLARED_NAME_RE
from rageval_core.cli import main
from rageval_core.errors import ConfigError
from rageval_core.query import (
    QuestionFilter,
    ResultsStore,
    bottom_questions,
    check_run,
    compare_runs,
    cost_quality,
    metric_distribution,
    metric_trend,
    parse_thresholds,
    question_detail,
    question_history,
    question_rows,
    runs_overview,
    summarize_run,
)
from rageval_core.runs.atomic import write_parquet
from rageval_core.runs.manifest import manifest_from_dict, manifest_to_dict
from rageval_core.runs.reading import inspect_run, read_run_rows, run_catalogue

from .conftest import row, write_run

DECLARED = {
    "groundedness": {"label": "groundedness", "direction": "higher"},
    "toxicity": {"label": "toxicity", "direction": "lower", "range": "unit"},
}
HOSTILE = ['x"; DROP TABLE --', "../x", "a" * 10_000]


def _scored(qid: str, relevancy: float, toxicity: float) -> dict:
    return row(qid, groundedness=relevancy, toxicity=toxicity)


@pytest.fixture
def runs(results):
    write_run(results, "plain", [row(f"q{i}") for i in range(10)], created_at="2025-01-01T00:00Z")
    write_run(
        results,
        "decl-a",
        [_scored(f"q{i}", i / 10, 0.1) for i in range(10)],
        created_at="2025-01-02T00:00Z",
        metrics=DECLARED,
    )
    write_run(
        results,
        "decl-b",
        [_scored(f"q{i}", i / 20, 0.1 + i / 100) for i in range(10)],
        created_at="2025-01-03T00:00Z",
        metrics=DECLARED,
    )
    return results


def test_rows_keep_declared_columns_and_the_cache_their_figures(runs):
    table, problems = read_run_rows(inspect_run(str(runs), "decl-a"))
    assert problems == []
    assert table.column("groundedness").to_pylist()[:3] == [0.0, 0.1, 0.2]
    store = ResultsStore(runs)
    assert store.problems == []
    assert {"groundedness", "toxicity"} <= set(store.catalogue().declared_names)
    df = runs_overview(store).set_index("run_id")
    assert df.loc["decl-a", "groundedness"] == pytest.approx(0.45)
    assert df.loc["decl-a", "groundedness_p10"] == pytest.approx(0.09)
    assert df.loc["decl-b", "toxicity"] == pytest.approx(0.145)
    assert df["groundedness"].isna()["plain"]
    # a new process reads the same figures from the cache files
    again = runs_overview(ResultsStore(runs)).set_index("run_id")
    assert again.loc["decl-a", "groundedness"] == pytest.approx(0.45)
    history = question_history(store, "q9").set_index("run_id")
    assert history.loc["decl-a", "groundedness"] == pytest.approx(0.9)


def test_trend_tails_table_and_detail_offer_declared_metrics(runs):
    store = ResultsStore(runs)
    trend = metric_trend(store, "groundedness")
    assert trend["value"].tolist()[1:] == pytest.approx([0.45, 0.225])
    assert trend["p10"].tolist()[1] == pytest.approx(0.09)
    assert metric_trend(store, "groundedness_p10")["value"].tolist()[1] == pytest.approx(0.09)
    cq = cost_quality(store, quality="groundedness")
    assert set(cq["run_id"]) == {"decl-a", "decl-b"}
    with pytest.raises(ConfigError, match="higher-is-better"):
        cost_quality(store, quality="toxicity")  # lower is better: the frontier would invert

    tail = bottom_questions(store, "decl-a", "groundedness")
    assert tail.rows["question_id"].tolist() == ["q0"]
    worst = bottom_questions(store, "decl-b", "toxicity")
    assert worst.rows["question_id"].tolist() == ["q9"] and "top 10%" in worst.describe("tox")
    assert metric_distribution(store, "decl-a", "toxicity")["value"].tolist() == [0.1] * 10

    page = question_rows(
        store,
        "decl-a",
        QuestionFilter(metric_ranges={"groundedness": (0.5, None)}),
        sort="groundedness",
    )
    assert page.total == 5 and page.rows["question_id"].tolist()[0] == "q5"
    assert "groundedness" in page.rows.columns
    by_toxicity = question_rows(store, "decl-b", sort="toxicity")
    assert by_toxicity.rows["question_id"].iloc[0] == "q9"  # lower is better: worst first
    assert question_detail(store, "decl-a", "q3").metrics["groundedness"] == pytest.approx(0.3)


def test_a_run_that_does_not_declare_a_metric_refuses_it(runs):
    store = ResultsStore(runs)
    with pytest.raises(ConfigError, match="unknown metric 'groundedness'"):
        bottom_questions(store, "plain", "groundedness")
    with pytest.raises(ConfigError, match="unknown metric"):
        question_rows(store, "plain", QuestionFilter(metric_ranges={"groundedness": (0, 1)}))
    with pytest.raises(ConfigError, match="unknown metric"):
        metric_trend(store, "helpfulness")


def test_compare_pairs_declared_metrics_with_intervals(runs):
    store = ResultsStore(runs)
    c = compare_runs(store, ["decl-a", "decl-b"])
    m = c.metrics.set_index(["metric", "run_id"])
    assert m.loc[("groundedness", "decl-b"), "delta"] == pytest.approx(-0.225)
    assert m.loc[("groundedness", "decl-b"), "ci_high"] < 0
    assert m.loc[("toxicity", "decl-b"), "delta"] == pytest.approx(0.045)
    regressions = c.regressions
    assert {"groundedness", "toxicity"} <= set(regressions["metric"])
    # toxicity rising is a regression: its direction comes from the declaration
    assert (regressions[regressions["metric"] == "toxicity"]["delta"] > 0).all()
    # against a run without them: no pairs, said, not an error
    c2 = compare_runs(store, ["plain", "decl-a"], metrics=["mrr", "groundedness"])
    note = c2.metrics.set_index(["metric", "run_id"]).loc[("groundedness", "decl-a"), "note"]
    assert note == "no question has a value in both runs"


def test_check_gates_declared_figures(runs):
    store = ResultsStore(runs)
    cat = run_catalogue(store.run_info("decl-b"))[0]
    limits = parse_thresholds(
        {"groundedness": {"min": 0.3}, "toxicity_p10": {"max": 0.5}}, "t", cat
    )
    result = check_run(store, "decl-b", thresholds=limits)
    rows = {r.metric: r for r in result.rows}
    assert rows["groundedness"].breaches == ("below min 0.3",)
    assert rows["groundedness"].label == "groundedness"
    assert not rows["toxicity_p10"].breached
    with pytest.raises(ConfigError, match="unknown metric"):
        parse_thresholds({"groundedness": {"min": 0.3}}, "t")  # built-ins only
    with pytest.raises(ConfigError, match="does not have"):
        check_run(store, "plain", thresholds=limits)
    # without thresholds the listed figures include the run's declared means, not a
    # built-in list that hides them; built-ins these runs have no value for are left out
    listed = [r.metric for r in check_run(store, "decl-b").rows]
    assert {"groundedness", "toxicity"} <= set(listed)
    assert "faithfulness" not in listed
    assert "groundedness" not in [r.metric for r in check_run(store, "plain").rows]


def test_cli_check_exits_1_on_a_declared_breach_and_compare_lists_it(runs, tmp_path, capsys):
    t = tmp_path / "t.yaml"
    t.write_text("groundedness: {min: 0.3}\n")
    assert main(["check", "decl-b", "--thresholds", str(t), "--results", str(runs)]) == 1
    out = capsys.readouterr().out
    assert "groundedness" in out and "below min 0.3" in out
    assert main(["check", "decl-a", "--thresholds", str(t), "--results", str(runs)]) == 0
    capsys.readouterr()
    assert main(["compare", "decl-a", "decl-b", "--results", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "groundedness" in out and "toxicity" in out


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_declaration_is_a_problem_and_the_run_is_still_listed(results, name):
    write_run(
        results,
        "hostile",
        [row("q1", groundedness=0.5)],
        metrics={name: {"label": "x"}, "groundedness": {}},
    )
    store = ResultsStore(results)
    (problem,) = [p for p in store.problems if p.run_id == "hostile"]
    assert "manifest.json" in problem.message and "lowercase letters" in problem.message
    assert len(problem.message) < 400  # the 10,000-character name is cut short
    assert runs_overview(store)["run_id"].tolist() == ["hostile"]
    assert store.catalogue().declared_names == ()  # every declaration of that run dropped
    assert summarize_run(store.run_info("hostile"))["n_questions"] == 1


def test_missing_or_non_numeric_declared_values_are_problems_naming_the_file(results):
    d = write_run(results, "p", [row("q1")], metrics={"groundedness": {}})
    # a file written by another tool: the declared column holds text
    table = pq.read_table(d / "questions.parquet").drop_columns(["groundedness"])
    write_parquet(d / "questions.parquet", table.append_column("groundedness", pa.array(["hi"])))
    rewrite = json.loads((d / "manifest.json").read_text())
    rewrite["metrics"] = DECLARED
    (d / "manifest.json").write_text(json.dumps(rewrite))
    write_run(results, "j", [row("q1", groundedness="x")], metrics=DECLARED, status="running")
    store = ResultsStore(results)
    msgs = [p.message for p in store.problems]
    assert any("p/questions.parquet" in m and "'toxicity' is missing" in m for m in msgs)
    assert any("p/questions.parquet" in m and "not numeric" in m for m in msgs)
    assert any("j/questions.jsonl" in m and "not numeric" in m for m in msgs)
    df = runs_overview(store).set_index("run_id")
    assert df["groundedness"].isna().all()


def test_conflicting_directions_are_a_problem_and_the_first_run_wins(results):
    write_run(results, "a", [row("q1", groundedness=1.0)], metrics={"groundedness": {}})
    write_run(
        results,
        "b",
        [row("q1", groundedness=1.0)],
        metrics={"groundedness": {"direction": "lower"}},
    )
    store = ResultsStore(results)
    assert not store.catalogue().lower_is_better("groundedness")
    assert [p.run_id for p in store.problems if "both" in p.message] == ["b"]


_names = st.one_of(st.text(max_size=70), st.from_regex(DECLARED_NAME_RE, fullmatch=True))
_specs = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.dictionaries(
        st.sampled_from(["label", "direction", "range", "other"]),
        st.one_of(
            st.text(max_size=90),
            st.sampled_from(["higher", "lower", "unit", "ms"]),
            st.lists(st.floats(allow_nan=True), max_size=3),
            st.integers(),
        ),
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.dictionaries(_names, _specs, max_size=4), st.lists(st.text(), max_size=2)))
def test_any_declaration_parses_to_identifiers_or_is_a_problem(metrics) -> None:
    raw = {
        "run_id": "r1",
        "status": "complete",
        "created_at": "2025-01-01T00:00:00Z",
        "metrics": json.loads(json.dumps(metrics)),
    }
    problems: list[str] = []
    m = manifest_from_dict(raw, "r1/manifest.json", problems)
    if problems:
        assert m.metrics == () and "r1/manifest.json" in problems[0]
    for d in m.metrics:
        assert DECLARED_NAME_RE.fullmatch(d.name) and '"' not in d.name


def test_the_report_shows_declared_figures_and_their_changes(runs):
    from rageval_core.report import build_report

    page = build_report(ResultsStore(runs), "decl-b", baseline="decl-a")
    assert "groundedness" in page and "toxicity" in page
    assert "0.225" in page  # decl-b's mean groundedness in the summary table


def test_declarations_round_trip_through_the_manifest(runs):
    info = inspect_run(str(runs), "decl-a")
    again = manifest_from_dict(manifest_to_dict(info.manifest))
    assert again == info.manifest and again.metrics[1].direction == "lower"
    plain = inspect_run(str(runs), "plain").manifest
    assert "metrics" not in manifest_to_dict(plain)  # manifests without any stay unchanged


def test_a_declared_label_is_inert_in_the_markdown_table(results, tmp_path, capsys):
    """Issue 23: `| <img src=x onerror=…> |` broke the table and posted HTML in the PR."""
    label = "<img src=x onerror=alert(1)> | ![t](http://x/t.png)\n=1"
    declared = {"groundedness": {"label": label, "direction": "higher"}}
    write_run(results, "md", [_scored(f"q{i}", 0.1, 0.1) for i in range(5)], metrics=declared)
    t = tmp_path / "t.yaml"
    t.write_text("groundedness: {min: 0.3}\n")
    args = ["check", "md", "--thresholds", str(t), "--format", "markdown"]
    args += ["--results", str(results)]
    assert main(args) == 1
    out = capsys.readouterr().out
    row_line = next(line for line in out.splitlines() if "onerror" in line)
    assert "<img" not in out and "&lt;img src=x onerror=alert(1)&gt;" in row_line
    assert "\\| !\\[t\\](http://x/t.png) =1 |" in row_line  # no image, no line break
    assert len(re.findall(r"(?<!\\)\|", row_line)) == 8  # seven cells, as the header


def test_a_declared_lower_is_better_score_moves_like_a_score_and_latency_does_not(results):
    # toxicity is a 0..1 score where lower is better: its changes read with two decimals and
    # rank by size like faithfulness; latency, lower is better too, is listed but not ranked
    write_run(results, "a", [row("q1", toxicity=0.1, total_ms=100.0)], metrics=DECLARED)
    write_run(results, "b", [row("q1", toxicity=0.4, total_ms=900.0)], metrics=DECLARED)
    c = compare_runs(ResultsStore(results), ["a", "b"], metrics=["toxicity", "total_ms"])
    (q,) = c.questions.itertuples()
    assert q.changes == "total_ms 100→900 (+800); toxicity 0.10→0.40 (+0.30)"
    assert q.worst_drop == pytest.approx(0.3)
    store = ResultsStore(results)
    assert store.catalogue().entry("toxicity").is_score
    assert not store.catalogue().entry("total_ms").is_score
    # the tail's cut: a score with two decimals, latency in its unit; both tails are the top
    toxic = bottom_questions(store, "b", "toxicity").describe("toxicity")
    assert toxic == "top 10%: 1 of 1 questions, toxicity ≥ 0.40"
    slow = bottom_questions(store, "b", "total_ms").describe("latency")
    assert slow == "top 10%: 1 of 1 questions, latency ≥ 900 ms"
