"""What served the HTTP judge, recorded and watched (issue 32 item 5): each reply's served
model and `system_fingerprint` in the Judgement, the rows and the run's summary; a cached
reply another model served asked again; a config `revision` in the cache key; and
`compare` and `check` saying "judge drift" when one config's judge model name was served
by another model between two runs — with a loopback server that says so."""

from __future__ import annotations

import dataclasses

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.cli import main
from rageval_core.judges.openai import OpenAIJudge, OpenAISettings
from rageval_core.query import ResultsStore, check_run, compare_runs, judge_drift
from rageval_core.query._drift import RunServed, drifted
from rageval_core.runs.reading import inspect_run, read_run_rows
from rageval_core.runs.summary import summarize_run
from tests.core.judges.drift_runs import Serving, project, run

HOSTILE = "<img src=x onerror=alert(1)> **judge** [b](http://evil.example) | `x`\x1b[31m"


def _judge(serving: Serving, tmp_path, **kw) -> OpenAIJudge:
    config = {
        "kind": "openai",
        "base_url": serving.server.base_url,
        "model": "judge-model",
        "max_retries": 0,
        "metrics": ["faithfulness", "answer_correctness"],
        "cache_dir": str(tmp_path / "cache"),
        **kw,
    }
    return OpenAIJudge(OpenAISettings.from_config(config))


def _served(results, run_id) -> set[tuple]:
    rows = read_run_rows(inspect_run(str(results), run_id))[0].to_pylist()
    return {(r["judge_served_model"], r["judge_fingerprint"]) for r in rows}


# ------------------------------------------------------------------ the judge and its cache


def test_a_judgement_records_what_the_endpoint_says_served_it(sample_input, tmp_path):
    with Serving("judge-a", "fp_1") as serving:
        said = _judge(serving, tmp_path, cache=False).judge(sample_input)
        serving.model = serving.fingerprint = None
        unsaid = _judge(serving, tmp_path, cache=False).judge(sample_input)
    assert said.error is None and (said.served_model, said.system_fingerprint) == (
        "judge-a",
        "fp_1",
    )
    assert unsaid.error is None and (unsaid.served_model, unsaid.system_fingerprint) == (None, None)


def test_a_cached_reply_another_model_served_is_asked_again(sample_input, tmp_path):
    other = dataclasses.replace(sample_input, question="Who built it?")
    with Serving("judge-a") as serving:
        first = _judge(serving, tmp_path)
        first.judge(sample_input), first.judge(other)
        assert serving.server.calls == 2
        same = _judge(serving, tmp_path)  # the endpoint still serves judge-a
        assert same.judge(sample_input).served_model == "judge-a"
        assert same.judge(other).served_model == "judge-a"
        assert serving.server.calls == 3  # one probe, then the cache
        serving.model = "judge-b"
        moved = _judge(serving, tmp_path)
        answers = [moved.judge(sample_input), moved.judge(other)]
    assert serving.server.calls == 5  # the probe hears judge-b: judge-a's replies asked again
    assert [a.served_model for a in answers] == ["judge-b", "judge-b"]


def test_a_revision_change_misses_the_cache(sample_input, tmp_path):
    with Serving(None) as serving:  # says nothing: the cache alone decides
        for revision, calls in (("2025-01", 1), ("2025-01", 1), ("2025-02", 2), (None, 3)):
            _judge(serving, tmp_path, revision=revision).judge(sample_input)
            assert serving.server.calls == calls, revision


# ------------------------------------------------------------------ runs, compare, check


@pytest.fixture
def drift(tmp_path):
    """Runs of one config: `a-first` judged by judge-a, `b-second` by judge-b (the
    replies cached in the first run asked again), `c-third` by judge-b again."""
    results = tmp_path / "results"
    with Serving("judge-a", "fp_1") as serving:
        config = project(tmp_path / "project", serving)
        run(config, results, "a-first")
        serving.model, serving.fingerprint = "judge-b", "fp_2"
        run(config, results, "b-second")
        run(config, results, "c-third")
    return results


def test_rows_record_what_served_the_judge_and_the_summary_gathers_it(drift):
    assert _served(drift, "a-first") == {("judge-a", "fp_1")}
    assert _served(drift, "b-second") == {("judge-b", "fp_2")}
    summary = summarize_run(inspect_run(str(drift), "b-second"))
    assert summary["judge_served_models"] == ["judge-b"]
    assert summary["judge_fingerprints"] == ["fp_2"]


def test_compare_and_check_say_judge_drift(drift, capsys):
    expected = (
        "judge drift between a-first and b-second: the openai judge judge-model was served "
        "judge-a → judge-b"
    )
    store = ResultsStore(drift)
    (line,) = [w for w in compare_runs(store, ["a-first", "b-second"]).warnings if "drift" in w]
    assert line.startswith(expected)
    result = check_run(store, "b-second", baseline="latest")
    assert result.baseline == "a-first"
    assert [n for n in result.notes if "drift" in n] == [line]
    assert main(["compare", "a-first", "b-second", "--results", str(drift)]) == 0
    assert f"warning: {expected}" in capsys.readouterr().out
    assert main(["check", "b-second", "--baseline", "latest", "--results", str(drift)]) == 0
    assert expected in capsys.readouterr().out


def test_no_drift_line_when_the_same_model_served_both_runs(drift, capsys):
    store = ResultsStore(drift)
    assert not [w for w in compare_runs(store, ["b-second", "c-third"]).warnings if "drift" in w]
    assert not [n for n in check_run(store, "c-third", baseline="latest").notes if "drift" in n]
    assert main(["check", "c-third", "--baseline", "latest", "--results", str(drift)]) == 0
    assert "drift" not in capsys.readouterr().out
    # across runs: the one change, between the first two
    [d] = judge_drift(store)
    assert (d.before.run_id, d.after.run_id) == ("a-first", "b-second")
    assert (d.what, d.was, d.now) == ("model", ("judge-a",), ("judge-b",))


def test_a_fingerprint_change_under_one_model_is_drift_too(tmp_path):
    results = tmp_path / "results"
    with Serving("judge-a", "fp_1") as serving:
        config = project(tmp_path / "project", serving, cache=False)
        run(config, results, "a-first")
        serving.fingerprint = "fp_2"
        run(config, results, "b-second")
    [line] = [
        w
        for w in compare_runs(ResultsStore(results), ["a-first", "b-second"]).warnings
        if "drift" in w
    ]
    assert "was served judge-a, system_fingerprint fp_1 → fp_2" in line


def test_a_judge_that_says_nothing_and_runs_written_before_say_no_drift(tmp_path):
    """NULL (an endpoint without `model`, a file without the columns) is unknown, never a
    change; the old file still loads."""
    results = tmp_path / "results"
    with Serving(None) as serving:
        config = project(tmp_path / "project", serving, cache=False)
        run(config, results, "a-silent")
        serving.model = "judge-b"
        run(config, results, "b-said")
        run(config, results, "c-said")
    assert _served(results, "a-silent") == {(None, None)}
    # c-said as written before rows recorded the served model
    path = results / "c-said" / "questions.parquet"
    table = pq.read_table(path)
    pq.write_table(table.drop_columns(["judge_served_model", "judge_fingerprint"]), path)
    store = ResultsStore(results)
    for pair in (["a-silent", "b-said"], ["b-said", "c-said"]):
        c = compare_runs(store, pair)
        assert not [w for w in c.warnings if "drift" in w or "c-said:" in w], c.warnings
    assert summarize_run(inspect_run(str(results), "c-said"))["judge_served_models"] is None
    assert judge_drift(store) == []
    assert main(["check", "c-said", "--baseline", "b-said", "--results", str(results)]) == 0


def test_a_hostile_served_model_is_quoted_inert(tmp_path, capsys):
    results = tmp_path / "results"
    with Serving("judge-a") as serving:
        config = project(tmp_path / "project", serving, cache=False)
        run(config, results, "a-first")
        serving.model = HOSTILE
        run(config, results, "b-second")
    args = ["compare", "a-first", "b-second", "--results", str(results)]
    assert main([*args, "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    [line] = [ln for ln in out.splitlines() if "judge drift" in ln]
    assert "<img" not in line and "&lt;img" in line
    assert "\\[b\\](http" in line and "\\|" in line  # no link, no table cell break
    assert main(["check", "b-second", "--baseline", "a-first", "--results", str(results)]) == 0
    assert "\x1b" not in capsys.readouterr().out  # control characters escaped


# ------------------------------------------------------------------ the rule


names = st.one_of(st.just(()), st.lists(st.sampled_from("abc"), min_size=1, unique=True))
served = st.builds(
    lambda m, f: (tuple(sorted(m)), tuple(sorted(f))),
    names,
    names,
)


@settings(max_examples=300, deadline=None)
@given(served, served, st.booleans())
def test_drift_is_a_known_change_of_what_served_one_judge(a, b, same_judge):
    before = RunServed("r1", "openai", "m", *a)
    after = RunServed("r2", "openai", "m" if same_judge else "other", *b)
    d = drifted(before, after)
    models_moved = bool(a[0] and b[0] and a[0] != b[0])
    prints_moved = bool(a[1] and b[1] and a[1] != b[1])
    assert (d is not None) == (same_judge and (models_moved or prints_moved))
    if d is not None:
        assert d.what == ("model" if models_moved else "fingerprint")
        assert (d.before, d.after) == (before, after)
        assert "\n" not in d.sentence()


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=300))
def test_a_drift_sentence_is_one_bounded_line_whatever_the_server_says(name):
    d = drifted(RunServed("r1", "openai", "m", ("x",)), RunServed("r2", "openai", "m", (name,)))
    if d is None:  # the same name
        assert name == "x"
        return
    sentence = d.sentence()
    assert "\n" not in sentence and "\r" not in sentence and "\x1b" not in sentence
    assert len(sentence) < 400
