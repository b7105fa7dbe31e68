"""compare_runs against numpy; `rageval compare` and `rageval check` exit codes and output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rageval_core.cli import main
from rageval_core.errors import ConfigError
from rageval_core.query import NOT_SET, ResultsStore, compare_runs, question_headline
from rageval_core.runs.atomic import atomic_write_json
from rageval_core.runs.layout import MANIFEST
from rageval_core.runs.manifest import manifest_to_dict

from .conftest import row, write_run

BASE = [0.2, 0.4, 0.6, 0.8, 1.0, 0.5, 0.5, 0.9]
CAND = [0.3, 0.4, 0.9, 0.8, 0.45, 0.6, 0.7, 1.0]


def _pair(results, *, dataset_b=("qa", "1", "a" * 64)):
    write_run(
        results,
        "base",
        [
            row(
                f"q{i}",
                answer_correctness=v,
                recall_at_5=v,
                failure_type="ok" if v >= 0.5 else "incorrect",
            )
            for i, v in enumerate(BASE)
        ],
        created_at="2025-01-01T00:00:00Z",
        config={"name": "bm25", "pipeline": {"params": {"top_k": 5, "model": "m1"}}},
    )
    write_run(
        results,
        "cand",
        [
            row(
                f"q{i}",
                answer_correctness=v,
                recall_at_5=v,
                failure_type="ok" if v >= 0.5 else "incorrect",
            )
            for i, v in enumerate(CAND)
        ]
        + [row("extra")],
        created_at="2025-01-02T00:00:00Z",
        dataset=dataset_b,
        config={"name": "bm25", "pipeline": {"params": {"top_k": 10, "model": "m1"}}},
    )


def test_compare_matches_numpy(results):
    _pair(results)
    store = ResultsStore(results)
    c = compare_runs(store, ["base", "cand"], metrics=["answer_correctness"], tolerance=0.15)
    m = c.metrics.set_index("run_id")
    b, k = np.array(BASE), np.array(CAND)
    assert m.loc["base", "mean"] == pytest.approx(b.mean())
    assert m.loc["cand", "delta"] == pytest.approx((k - b).mean())
    # the interval is the paired bootstrap of the differences, deterministic with the seed
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 8, size=(2000, 8))
    lo, hi = np.percentile((k - b)[idx].mean(axis=1), [2.5, 97.5])
    assert (m.loc["cand", "ci_low"], m.loc["cand", "ci_high"]) == pytest.approx((lo, hi))
    assert m.loc["cand", "n_pairs"] == 8
    again = compare_runs(store, ["base", "cand"], metrics=["answer_correctness"], tolerance=0.15)
    assert again.metrics.equals(c.metrics)
    reg = c.regressions
    assert set(reg[reg.metric == "answer_correctness"]["question_id"]) == {"q4"}  # 1.0 → 0.45
    imp = c.improvements
    assert set(imp[imp.metric == "answer_correctness"]["question_id"]) == {"q2", "q6"}
    flips = c.flips  # ok iff value >= 0.5: only q4 goes ok → incorrect
    assert list(flips["question_id"]) == ["q4"] and list(flips["kind"]) == ["regression"]
    d = c.config_diff
    assert d.iloc[0]["key"] == "config.pipeline.params.top_k" and d.iloc[0]["differs"]
    assert not d.set_index("key").loc["config.pipeline.params.model", "differs"]
    assert any("in common" in w for w in c.warnings)  # cand has an extra question


def test_compare_warns_on_dataset_change(results):
    _pair(results, dataset_b=("qa", "2", "b" * 64))
    c = compare_runs(ResultsStore(results), ["base", "cand"])
    assert any("dataset" in w and "v2" in w for w in c.warnings)


def test_compare_rejects_bad_input(results):
    _pair(results)
    store = ResultsStore(results)
    with pytest.raises(ConfigError):
        compare_runs(store, ["base"])
    with pytest.raises(ConfigError, match="unknown metric"):
        compare_runs(store, ["base", "cand"], metrics=["mrr; DROP TABLE x"])


def test_cli_compare(results, capsys):
    _pair(results)
    assert main(["compare", "base", "cand", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "answer_correctness" in out and f"{np.mean(np.array(CAND) - BASE):+.3f}" in out
    # per question at tolerance 0.05: q4 drops (and flips); q0, q2, q5, q6, q7 rise
    assert "Regressed: 1 question, improved: 5, mixed: 0 (tolerance 0.05)" in out
    q4 = next(x for x in out.splitlines() if x.startswith("regression"))
    assert q4.split()[:6] == ["regression", "q4", "question", "q4", "ok", "→"]
    # ties keep the metric order
    assert q4.endswith("recall_at_5 1.00→0.45 (−0.55); answer_correctness 1.00→0.45 (−0.55)")
    assert "… and" not in out
    assert main(["compare", "base", "cand", "--results", str(results), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "| metric |" in md and "**Regressed: 1 question, improved: 5, mixed: 0" in md
    assert "| kind | question_id | question | failure type | changes |" in md
    assert "| regression | q4 | question q4 | ok → incorrect | recall_at_5 1.00→0.45" in md
    assert main(["compare", "base", "cand", "--results", str(results), "--max-questions", "2"]) == 0
    out = capsys.readouterr().out
    assert "… and 4 more" in out
    listed = [x.split()[1] for x in out.splitlines() if x.startswith(("regression", "improv"))]
    assert listed == ["q4", "q2"]  # worst first, then the largest gain (+0.30)
    assert (
        main(["compare", "base", "cand", "--results", str(results), "--max-questions", "-1"]) == 2
    )
    assert "--max-questions" in capsys.readouterr().err
    assert main(["compare", "base", "x' OR 1=1 --", "--results", str(results)]) == 2
    assert "invalid run id" in capsys.readouterr().err


def _thresholds(tmp_path, text):
    p = tmp_path / "t.yaml"
    p.write_text(text)
    return str(p)


def test_cli_check_pass_breach_and_errors(results, tmp_path, capsys):
    _pair(results)
    r = ["--results", str(results)]
    # means: base recall@5 = 0.6125, cand = 0.6 over 8 + extra (1.0) = 0.6444…
    cand = (sum(CAND) + 1.0) / 9
    ok = _thresholds(tmp_path, "recall_at_5: {min: 0.6, max_drop: 0.05}\n")
    assert main(["check", "cand", "--baseline", "base", "--thresholds", ok, *r]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "recall@5" in x).split()
    assert line == [
        "recall@5",
        f"{cand:.3f}",
        "(was",
        f"{np.mean(BASE):.3f})",
        f"{cand - np.mean(BASE):+.3f}",
    ]
    assert "✗" not in out and "PASSED" in out
    bad = _thresholds(
        tmp_path, "thresholds:\n  recall_at_5: {min: 0.7}\n  answer_correctness_p10: {min: 0.5}\n"
    )
    assert main(["check", "cand", "--baseline", "latest", "--thresholds", bad, *r]) == 1
    out = capsys.readouterr().out
    assert out.count("✗") == 2 and "correctness p10 (answerable)" in out and "base" in out
    drop = _thresholds(tmp_path, "recall_at_5: {max_drop: 0.0}\n")
    assert main(["check", "base", "--baseline", "cand", "--thresholds", drop, *r]) == 1
    assert (
        main(
            [
                "check",
                "base",
                "--baseline",
                "cand",
                "--thresholds",
                drop,
                "--format",
                "markdown",
                *r,
            ]
        )
        == 1
    )
    md = capsys.readouterr().out
    assert "| ✗ | recall@5 |" in md and "**failed**" in md
    unknown = _thresholds(tmp_path, "recall_at_5; DROP TABLE x: {min: 0.1}\n")
    assert main(["check", "cand", "--thresholds", unknown, *r]) == 2
    assert "recall_at_5; DROP TABLE x" in capsys.readouterr().err
    badkey = _thresholds(tmp_path, "mrr: {minimum: 0.1}\n")
    assert main(["check", "cand", "--thresholds", badkey, *r]) == 2
    assert main(["check", "../etc", *r]) == 2
    assert "invalid run id" in capsys.readouterr().err
    assert main(["check", "cand", "--thresholds", str(tmp_path / "nope.yaml"), *r]) == 2


def test_a_limit_the_baseline_has_no_value_for_is_noted_on_its_row_not_a_breach(
    results, tmp_path, capsys
):
    write_run(results, "base", [row("q1"), row("q2")], created_at="2025-01-01T00:00:00Z")
    write_run(
        results,
        "cand",
        [row("q1", faithfulness=0.2), row("q2", faithfulness=0.4)],
        created_at="2025-01-02T00:00:00Z",
    )
    r = ["--results", str(results)]
    limits = _thresholds(tmp_path, "faithfulness: {max_drop: 0.05}\nmrr: {max_rise: 0.0}\n")
    assert main(["check", "cand", "--baseline", "base", "--thresholds", limits, *r]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "faithfulness" in x)
    assert "baseline has no value" in line and "max_drop" in line and "✗" not in line
    assert "baseline has no value" not in next(x for x in out.splitlines() if "MRR" in x)
    assert "PASSED" in out
    md_args = ["check", "cand", "--baseline", "base", "--thresholds", limits]
    assert main([*md_args, "--format", "markdown", *r]) == 0
    md = capsys.readouterr().out
    md_line = next(x for x in md.splitlines() if "| faithfulness |" in x)
    assert md_line.startswith("| ✓ |") and "baseline has no value" in md_line
    assert "**passed**" in md


def test_markdown_fills_the_limits_column_for_passing_rows_too(results, tmp_path, capsys):
    write_run(results, "base", [row("q1"), row("q2")], created_at="2025-01-01T00:00:00Z")
    write_run(results, "cand", [row("q1"), row("q2")], created_at="2025-01-02T00:00:00Z")
    limits = _thresholds(
        tmp_path, "recall_at_5: {min: 0.7, max_drop: 0.03}\nmrr: {min: 0.5, max: 1}\n"
    )
    args = ["check", "cand", "--baseline", "latest", "--thresholds", limits]
    assert main([*args, "--format", "markdown", "--results", str(results)]) == 0
    md = capsys.readouterr().out.splitlines()
    assert "| | metric | value | baseline | delta | limits | breaches and notes |" in md
    recall = next(x for x in md if "| recall@5 |" in x)
    assert recall.startswith("| ✓ |") and recall.endswith("| min 0.7, max_drop 0.03 |  |")
    mrr = next(x for x in md if "| MRR |" in x)
    assert mrr.startswith("| ✓ |") and "| min 0.5, max 1 |" in mrr


def test_a_figure_the_run_lacks_but_the_baseline_has_breaches_a_drop_limit(results, tmp_path):
    write_run(results, "base", [row("q1", faithfulness=0.9)], created_at="2025-01-01T00:00:00Z")
    write_run(results, "cand", [row("q1")], created_at="2025-01-02T00:00:00Z")
    r = ["--results", str(results)]
    limits = _thresholds(tmp_path, "faithfulness: {max_drop: 0.05}\n")
    assert main(["check", "cand", "--baseline", "base", "--thresholds", limits, *r]) == 1


def test_latest_baseline_is_the_previous_run_latest_any_the_newest_complete_before(results):
    from rageval_core.query import resolve_baseline

    _pair(results)
    write_run(results, "live", [row("q1")], status="running", created_at="2025-01-09T00:00:00Z")
    write_run(results, "later", [row("q1")], created_at="2025-01-10T00:00:00Z")
    store = ResultsStore(results, refresh=False)
    assert resolve_baseline(store, "cand", "latest") == "base"  # not "later", not running
    assert resolve_baseline(store, "later", "latest") is None  # another config's runs
    assert resolve_baseline(store, "later", "latest-any") == "cand"  # skips the running run
    assert resolve_baseline(store, "base", "latest") is None  # nothing came before it
    assert resolve_baseline(store, "base", "latest-any") is None
    assert resolve_baseline(store, "base", None) is None


def test_config_key_only_one_run_has_shows_not_set(results):
    _pair(results)
    store = ResultsStore(results)
    cand = store.run_info("cand")
    extra = {**cand.manifest.config, "reranker": "cross-encoder"}
    cand_manifest = manifest_to_dict(cand.manifest) | {"config": extra}
    atomic_write_json(Path(cand.path) / MANIFEST, cand_manifest)
    store.refresh()
    d = compare_runs(store, ["base", "cand"]).config_diff.set_index("key")
    assert d.loc["config.reranker", "base"] == NOT_SET
    assert d.loc["config.reranker", "differs"]


# Per question, metrics faithfulness and answer_correctness, tolerance 0.05:
# (question, base (faith, corr, failure type), candidate (faith, corr, failure type))
QUESTIONS = [
    ("a", (1.0, 1.0, "ok"), (0.5, 0.62, "unfaithful")),  # worse twice, flips to a failure
    ("b", (1.0, 1.0, "ok"), (1.0, 0.1, "ok")),  # the largest drop, no flip
    ("c", (0.4, 0.9, "incorrect"), (1.0, 0.5, "incorrect")),  # one better, one worse
    ("d", (0.5, 1.0, "unfaithful"), (1.0, 1.0, "ok")),  # better, back to ok
    ("e", (1.0, 0.2, "incorrect"), (1.0, 0.9, "incorrect")),  # the largest gain, no flip
    ("f", (1.0, 1.0, "ok"), (0.98, 1.0, "ok")),  # within tolerance: not listed
    ("g", (1.0, 1.0, "ok"), (1.0, 1.0, "retrieval_miss")),  # only a flip
    ("h | x", (1.0, 1.0, "ok"), (1.0, 1.0, "ok")),  # slower only (total_ms)
]


def _questions(results):
    for run_id, side, day in (("base", 1, 1), ("cand", 2, 2), ("same", 1, 3)):
        write_run(
            results,
            run_id,
            [
                row(
                    qid,
                    question=f"what about {qid}?\nsecond line",
                    faithfulness=v[0],
                    answer_correctness=v[1],
                    failure_type=v[2],
                    total_ms=300.0 if qid == "h | x" and run_id == "cand" else 100.0,
                )
                for qid, *sides in QUESTIONS
                for v in [sides[side - 1]]
            ],
            created_at=f"2025-01-0{day}T00:00:00Z",
        )


METRICS = ["faithfulness", "answer_correctness", "total_ms"]


def test_question_changes_one_row_per_question_worst_first(results):
    _questions(results)
    c = compare_runs(ResultsStore(results), ["base", "cand"], metrics=METRICS)
    qc = c.questions
    got = qc[["question_id", "kind", "failure_change", "changes"]].values.tolist()
    assert got == [
        [
            "a",
            "regression",
            "ok → unfaithful",
            "faithfulness 1.00→0.50 (−0.50); answer_correctness 1.00→0.62 (−0.38)",
        ],
        ["g", "regression", "ok → retrieval_miss", ""],
        ["b", "regression", "unchanged", "answer_correctness 1.00→0.10 (−0.90)"],
        ["h | x", "regression", "unchanged", "total_ms 100→300 (+200)"],
        [
            "c",
            "mixed",
            "unchanged",
            "answer_correctness 0.90→0.50 (−0.40); faithfulness 0.40→1.00 (+0.60)",
        ],
        ["d", "improvement", "unfaithful → ok", "faithfulness 0.50→1.00 (+0.50)"],
        ["e", "improvement", "unchanged", "answer_correctness 0.20→0.90 (+0.70)"],
    ]
    assert set(qc["run_id"]) == {"cand"}
    assert qc["worst_drop"].tolist() == pytest.approx([0.5, 0.0, 0.9, 0.0, 0.4, 0.0, 0.0])
    assert qc["best_gain"].tolist() == pytest.approx([0.0, 0.0, 0.0, 0.0, 0.6, 0.5, 0.7])
    assert qc["to_failure"].tolist() == [True, True, False, False, False, False, False]
    assert qc["to_ok"].tolist() == [False, False, False, False, False, True, False]
    assert qc["n_worse"].tolist() == [2, 0, 1, 1, 1, 0, 0]
    assert qc["n_better"].tolist() == [0, 0, 0, 0, 1, 1, 1]
    # every question in `changes` once, and no more questions than the run has
    assert sorted(qc["question_id"]) == sorted(set(c.changes["question_id"]))
    assert len(c.changes) > len(qc)
    assert question_headline(qc) == "Regressed: 4 questions, improved: 2, mixed: 1"


def test_question_changes_per_candidate_run_and_when_nothing_changed(results):
    _questions(results)
    store = ResultsStore(results)
    c = compare_runs(store, ["base", "same", "cand"], metrics=METRICS)
    qc = c.questions
    assert set(qc["run_id"]) == {"cand"} and len(qc) == 7  # `same` equals the baseline
    nothing = compare_runs(store, ["base", "same"], metrics=METRICS).questions
    assert nothing.empty and "changes" in nothing.columns
    assert question_headline(nothing) == "Regressed: 0 questions, improved: 0, mixed: 0"
    assert main(["compare", "base", "same", "cand", "--results", str(results)]) == 0


def test_cli_compare_lists_questions_per_candidate_escaped_in_markdown(results, capsys):
    _questions(results)
    r = ["--results", str(results), "--metrics", ",".join(METRICS)]
    assert main(["compare", "base", "same", "cand", *r, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "**same: Regressed: 0 questions, improved: 0, mixed: 0 (tolerance 0.05)**" in md
    assert "**cand: Regressed: 4 questions, improved: 2, mixed: 1 (tolerance 0.05)**" in md
    # a `|` in untrusted text stays inside its cell; a newline does not end the row
    assert "| regression | h \\| x | what about h \\| x? second line | unchanged |" in md


def test_a_change_of_exactly_the_tolerance_is_not_a_regression(results):
    # 0.70 - 0.75 is -0.05000000000000004 in floating point: "more than the tolerance"
    # must not catch a drop of exactly the tolerance.
    pairs = [(0.75, 0.70), (0.55, 0.60), (0.9, 0.8)]
    write_run(
        results, "base", [row(f"q{i}", answer_correctness=b) for i, (b, _) in enumerate(pairs)]
    )
    write_run(
        results,
        "cand",
        [row(f"q{i}", answer_correctness=c) for i, (_, c) in enumerate(pairs)],
        created_at="2025-01-02T00:00:00Z",
    )
    c = compare_runs(
        ResultsStore(results), ["base", "cand"], metrics=["answer_correctness"], tolerance=0.05
    )
    assert list(c.changes["question_id"]) == ["q2"]
    assert list(c.changes["kind"]) == ["regression"]
