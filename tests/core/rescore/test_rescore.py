"""`rageval rescore RUN --judge JUDGE.yaml`: a stored run judged again by another judge.

Against real files: demo runs written by `rageval demo`, the loopback chat-completions
server of the judge tests (its requests counted), a real DuckDB query layer and AppTest."""

from __future__ import annotations

import html
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from rageval_core import query
from rageval_core.cli import main
from rageval_core.demo import DEMO_RUNS, demo_run_id
from rageval_core.origin import origin_label
from rageval_core.runs.layout import RESULTS_ENV
from rageval_core.runs.rows import CHAR_FIELDS, JUDGE_FIELDS
from rageval_core.writer import RunWriter
from tests.core.judges.chat_server import ChatServer, Step
from tests.core.rescore.helpers import SOURCE, judge_yaml, reply, verdict_of

ENTRY = Path(__file__).resolve().parents[3] / "dashboard" / "streamlit_app.py"
# What the judge decides; everything else is the source's.
JUDGED = (
    "claims",
    "unsupported_claims",
    "faithfulness",
    "answer_correctness",
    "refused",
    "judge_cost_usd",
    "judge_error",
    "failure_type",
    *dict(JUDGE_FIELDS),  # the verdicts a judge is asked for (this one: claims only)
    *dict(CHAR_FIELDS),  # and those verdicts weighed by characters
)
PER_CALL = (200 * 0.01 + 30 * 0.03) / 1000  # scripted usage × the judge's prices


def rows(location: Path, run_id: str) -> dict[str, dict]:
    table = pq.read_table(location / run_id / "questions.parquet")
    return {r["question_id"]: r for r in table.to_pylist()}


def manifest(location: Path, run_id: str) -> dict:
    return json.loads((location / run_id / "manifest.json").read_text())


def rescore(*args: str) -> int:
    return main(["rescore", *args, "--no-progress"])


def kept(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in (*JUDGED, "run_id")}


def judged(row: dict) -> dict:
    return {k: row[k] for k in JUDGED}


def test_http_rescore_writes_a_complete_run_of_the_new_judges_verdicts(
    results, scratch, judge_server, capsys
):
    judge = judge_yaml(scratch, judge_server)
    source = rows(results, SOURCE)
    answered = [q for q, r in source.items() if not r["error"]]
    assert rescore(SOURCE, "--judge", str(judge), "--results", str(results), "--run-id", "llm") == 0
    assert f"rescore of {SOURCE}" in capsys.readouterr().out
    assert judge_server.calls == len(answered)  # one call per answer, no pipeline anywhere

    new = rows(results, "llm")
    assert list(new) == list(source)  # every question once, in the source's order
    for qid, row in new.items():
        assert row["run_id"] == "llm"
        assert kept(row) == kept(source[qid])  # retrieval, latency, tokens, pipeline cost
        if qid not in answered:
            continue
        (claim,) = row["claims"]
        assert claim["verdict"] == verdict_of(row["question"])
        assert claim["text"] == f"Claim of: {row['answer'][:60]}".strip()
        assert row["faithfulness"] == (1.0 if claim["verdict"] == "supported" else 0.0)
        assert row["judge_cost_usd"] == pytest.approx(PER_CALL)
        assert row["judge_error"] is None
    wrote, was = manifest(results, "llm"), manifest(results, SOURCE)
    assert wrote["status"] == "complete" and wrote["source_run"] == SOURCE
    assert wrote["judge"]["kind"] == "openai" and wrote["judge"]["model"] == "judge-model"
    assert wrote["dataset"] == was["dataset"]  # labels join on its sha256
    assert wrote["config"]["judge"]["base_url"] == judge_server.base_url
    same = {k: v for k, v in was["config"].items() if k not in ("judge", "concurrency")}
    assert {k: wrote["config"][k] for k in same} == same
    assert origin_label(json.dumps(wrote["config"])) == f"rescore of {SOURCE} by openai judge-model"
    assert wrote["totals"]["cost_usd"] == was["totals"]["cost_usd"]
    assert wrote["totals"]["judge_cost_usd"] == pytest.approx(len(answered) * PER_CALL)
    assert "source_run" not in was  # other manifests are written as before

    with query.ResultsStore(results, read_only=True, cache_dir=scratch / "qc") as store:
        assert not store.problems
        overview = query.runs_overview(store).set_index("run_id")
        assert overview.loc["llm", "status"] == "complete"
        assert overview.loc["llm", "n_questions"] == len(source)
        detail = query.question_detail(store, "llm", answered[0])
        assert detail.claims[0].verdict == verdict_of(detail.question)
        assert detail.claims[0].reason == "scripted"


def test_a_second_rescore_makes_zero_calls_here_and_in_another_location(
    results, scratch, judge_server
):
    judge = str(judge_yaml(scratch, judge_server))
    assert rescore(SOURCE, "--judge", judge, "--results", str(results), "--run-id", "first") == 0
    calls = judge_server.calls
    assert calls > 0
    other = scratch / "elsewhere"
    assert rescore(SOURCE, "--judge", judge, "--results", str(results), "--run-id", "again") == 0
    args = ["--results", str(results), "--out", str(other), "--run-id", "moved"]
    assert rescore(SOURCE, "--judge", judge, *args) == 0
    assert judge_server.calls == calls  # every reply came from the user's judge cache
    first = rows(results, "first")
    for repeat in (rows(results, "again"), rows(other, "moved")):
        assert list(repeat) == list(first)
        for qid, row in repeat.items():
            want = {**judged(first[qid]), "judge_cost_usd": 0.0 if first[qid]["claims"] else None}
            assert judged(row) == want  # same verdicts; a cached reply costs nothing
    assert manifest(other, "moved")["source_run"] == SOURCE
    assert not (results / ".rageval" / "judge-cache").exists()  # not in the results location


def test_the_rescored_run_opens_on_the_dashboards_question_page(
    results, scratch, judge_server, monkeypatch
):
    judge = str(judge_yaml(scratch, judge_server))
    assert rescore(SOURCE, "--judge", judge, "--results", str(results), "--run-id", "llm") == 0
    qid, row = next((q, r) for q, r in rows(results, "llm").items() if r["claims"])
    monkeypatch.setenv(RESULTS_ENV, str(results))
    at = AppTest.from_file(str(ENTRY), default_timeout=60)
    at.query_params.update({"run": "llm", "question": qid})
    at.run()
    at.switch_page("app_pages/question.py").run()
    assert not at.exception, [e.value for e in at.exception]
    body = "\n".join(str(e.value) for e in at.markdown)
    assert html.escape(row["claims"][0]["text"]) in body
    assert [e.label for e in at.expander if e.label.startswith("Claim")]


def test_kill_9_mid_rescore_then_resume_judges_every_question_exactly_once(results, scratch):
    source = rows(results, SOURCE)
    with ChatServer(lambda n, req: reply(n, req, delay_s=0.05)) as srv:
        judge = str(judge_yaml(scratch, srv, concurrency=2))
        cmd = [sys.executable, "-m", "rageval_core.cli", "rescore", SOURCE, "--judge", judge]
        cmd += ["--results", str(results), "--no-progress", "--concurrency", "2"]
        proc = subprocess.Popen(
            [*cmd, "--run-id", "killed"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        journal = results / "killed" / "questions.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if journal.exists() and journal.read_text().count("\n") >= 10:
                break
            time.sleep(0.02)
        assert proc.poll() is None, f"the rescore ended first (exit {proc.returncode})"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        before = srv.calls
        lines = journal.read_text().splitlines()
        done_ids = {json.loads(line)["question_id"] for line in lines if line.endswith("}")}
        journalled = len(done_ids)
        assert 10 <= journalled < len(source)
        assert manifest(results, "killed")["status"] == "running"
        done = subprocess.run(
            [*cmd, "--resume", "killed"], capture_output=True, text=True, timeout=180
        )
        assert done.returncode == 0, done.stderr
        assert f"resuming killed: {journalled} of {len(source)} done" in done.stderr
        left = sum(1 for q, r in source.items() if not r["error"] and q not in done_ids)
        # Journalled questions are never asked again. Of the two in flight at the kill, a
        # reply already cached costs no call; a request still in a socket when the writer
        # died may be counted after `before`.
        assert left - 2 <= srv.calls - before <= left + 2
    new = rows(results, "killed")
    assert sorted(new) == sorted(source) and len(new) == len(source)
    assert manifest(results, "killed")["status"] == "complete"
    assert not journal.exists()


def test_offline_rescore_is_deterministic_and_equals_an_offline_run(results, scratch):
    judge = scratch / "offline.yaml"
    judge.write_text("judge:\n  kind: offline\n")  # a run config's judge mapping works too
    for run_id in ("off-1", "off-2"):
        assert (
            rescore(SOURCE, "--judge", str(judge), "--results", str(results), "--run-id", run_id)
            == 0
        )
    one, two = rows(results, "off-1"), rows(results, "off-2")
    assert {q: {**r, "run_id": None} for q, r in one.items()} == {
        q: {**r, "run_id": None} for q, r in two.items()
    }
    source = rows(results, SOURCE)  # the demo runs are judged offline: nothing changes
    assert {q: judged(r) for q, r in one.items()} == {q: judged(r) for q, r in source.items()}


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    demo=st.sampled_from(DEMO_RUNS),
    concurrency=st.integers(min_value=1, max_value=8),
)
def test_property_offline_rescore_keeps_every_column_of_an_offline_run(
    demo_runs, demo, concurrency
):
    """Whatever the run and the concurrency, the offline judge judging its own run's
    answers again gives back that run's rows, in order, but for the run id."""
    run_id = demo_run_id(demo)
    with tempfile.TemporaryDirectory(prefix="rageval-rescore-prop-") as d:
        out = Path(d)
        judge = out / "offline.yaml"
        judge.write_text("kind: offline\n")
        args = ["--results", str(demo_runs), "--out", str(out / "r"), "--run-id", "again"]
        assert rescore(run_id, "--judge", str(judge), *args, "--concurrency", str(concurrency)) == 0
        again = rows(out / "r", "again")
    source = rows(demo_runs, run_id)
    assert list(again) == list(source)
    assert all({**again[q], "run_id": run_id} == source[q] for q in source)


# ---------------------------------------------------------------------------- mistakes


def test_unknown_run_is_one_line_naming_it_exit_2(results, scratch, capsys):
    judge = scratch / "offline.yaml"
    judge.write_text("kind: offline\n")
    assert rescore("20990101-000000-nope", "--judge", str(judge), "--results", str(results)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "20990101-000000-nope" in err and "no such run" in err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("kind: openai\nmodel: [unclosed\n", "judge.yaml:3:1: judge config is not valid YAML"),
        ("kind: openai\nmodel: m\nbase_url: http://127.0.0.1:9/v1\ntemprature: 0\n", "temprature"),
        ("- kind: offline\n", "a judge config is a mapping"),
        ("", "found an empty file"),
        ("kind: oracle\n", "unknown judge kind 'oracle'"),
    ],
)
def test_bad_judge_yaml_is_one_line_naming_the_file_exit_2(
    results, scratch, capsys, text, expected
):
    judge = scratch / "judge.yaml"
    judge.write_text(text)
    assert rescore(SOURCE, "--judge", str(judge), "--results", str(results)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(judge) in err and expected in err, err
    assert sorted(p.name for p in results.iterdir()) == [SOURCE]  # nothing written


def test_a_bad_judge_yaml_lists_every_problem_as_a_run_config_does(results, scratch, capsys):
    # rescore reads the mapping with the run config's parser (judges.judge_problems)
    judge = scratch / "judge.yaml"
    judge.write_text("kind: openai\nmodel: 3\ntemprature: 0\n")
    assert rescore(SOURCE, "--judge", str(judge), "--results", str(results)) == 2
    err = capsys.readouterr().err
    assert str(judge) in err
    for expected in (
        "judge.base_url is required",
        "judge.model must be str",
        "judge.temprature is not a setting",
    ):
        assert expected in err, err


def _writer_run(results: Path, run_id: str, **fields) -> None:
    with RunWriter("imported", results_dir=results, run_id=run_id) as run:
        run.add("q1", question="Where?", gold_ids=["c1"], **fields)


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"retrieved": ["c1"]}, "question 'q1' has no answer"),
        ({"answer": "There.", "retrieved": ["c1", "c2"]}, "has no texts for its retrieved chunks"),
        ({"answer": "There."}, "kept no retrieved chunks (its retrieval is unknown)"),
        ({"answer": "There.", "retrieved": [{"text": "x"}]}, "has retrieved chunks without ids"),
    ],
)
def test_a_run_without_answers_or_chunk_texts_cannot_be_rescored(
    results, scratch, capsys, fields, why
):
    _writer_run(results, "thin", **fields)
    judge = scratch / "offline.yaml"
    judge.write_text("kind: offline\n")
    assert rescore("thin", "--judge", str(judge), "--results", str(results)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run thin cannot be rescored" in err and why in err, err


def test_a_running_run_is_refused_and_resume_refuses_another_judge(results, scratch, capsys):
    judge = scratch / "offline.yaml"
    judge.write_text("kind: offline\n")
    args = ["--judge", str(judge), "--results", str(results)]
    assert rescore(SOURCE, *args, "--run-id", "r1") == 0
    shutil.copytree(results / "r1", results / "half")
    m = manifest(results, "half")
    (results / "half" / "manifest.json").write_text(
        json.dumps({**m, "run_id": "half", "status": "running"})
    )
    assert rescore("half", *args) == 2
    assert "run half is running, not complete" in capsys.readouterr().err
    other = scratch / "strict.yaml"
    other.write_text("kind: offline\nthreshold: 0.9\n")
    (results / "r1" / "manifest.json").write_text(
        json.dumps({**manifest(results, "r1"), "status": "failed"})
    )
    assert rescore(SOURCE, "--judge", str(other), "--results", str(results), "--resume", "r1") == 2
    assert "run r1 was started with other settings" in capsys.readouterr().err


def test_the_judges_key_never_reaches_a_file_of_the_rescore(results, scratch, monkeypatch):
    """The key is sent, and echoed back by a hostile endpoint in its error, yet it is in
    no row, manifest, journal or cache file of the rescore, nor in its output."""
    secret, env = "sk-test-RESCORE-9e8d7c6b5a", "RAGEVAL_TEST_RESCORE_KEY"
    monkeypatch.setenv(env, secret)

    def echo(n, request):
        if n % 2:  # every other question: an error body quoting the Authorization header
            return Step(status=401, raw=json.dumps({"error": request.headers["Authorization"]}))
        return reply(n, request)

    with ChatServer(echo) as srv:
        judge = str(judge_yaml(scratch, srv, api_key_env=env))
        done = subprocess.run(
            [sys.executable, "-m", "rageval_core.cli", "rescore", SOURCE, "--judge", judge]
            + ["--results", str(results), "--run-id", "keyed", "--no-progress"],
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
        assert {r.headers["Authorization"] for r in srv.requests} == {f"Bearer {secret}"}
    new = rows(results, "keyed")
    assert any(r["judge_error"] and "401" in r["judge_error"] for r in new.values())
    assert any(r["claims"] for r in new.values())
    assert secret not in done.stdout + done.stderr
    written = [p for p in scratch.rglob("*") if p.is_file()]
    assert any("xdg-cache" in str(p) for p in written)  # the cache was written and searched
    for path in written:
        assert secret.encode() not in path.read_bytes(), path
    assert manifest(results, "keyed")["config"]["judge"]["api_key_env"] == env


def test_a_rescore_against_a_dripping_judge_ends_with_judge_errors(results, scratch):
    """A judge sending its headers a byte every 0.2 s once kept a rescore writing nothing
    for minutes (issue 35): every call now ends at its deadline, a judge error each."""
    from tests.core.judges.chat_server import DripServer

    with DripServer(every_s=0.2) as drip:
        judge = judge_yaml(scratch, drip, timeout_s=0.5, concurrency=8)
        proc = subprocess.Popen(
            [sys.executable, "-m", "rageval_core.cli", "rescore", SOURCE, "--judge", str(judge),
             "--results", str(results), "--run-id", "drip", "--no-progress"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            _, err = proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail("the rescore was still going after 90 s: a judge call has no deadline")
    assert proc.returncode == 0, err
    new = rows(results, "drip")
    answered = [r for r in new.values() if not r["error"]]
    assert answered and all("timed out after 0.5 s" in r["judge_error"] for r in answered)
    assert manifest(results, "drip")["status"] == "complete"
