"""The runner end to end on real files: rows, manifest, errors, timings, redaction, resume."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from rageval_core.cli import main
from rageval_core.config import load_config
from rageval_core.errors import ConfigError, PipelineError, ResultsError
from rageval_core.runner import RunOptions, run
from rageval_core.runs.layout import Shard
from rageval_core.runs.reading import inspect_run, read_run_rows
from rageval_core.runs.rows import QUESTION_SCHEMA

PINNED = QUESTION_SCHEMA.names


def rows_of(path: Path) -> dict[str, dict]:
    return {r["question_id"]: r for r in pq.read_table(path / "questions.parquet").to_pylist()}


def test_run_writes_a_complete_run(toy):
    config = load_config(toy.config(params={"fail_word": "fact 3?", "swap": [5]}))
    result = run(config, RunOptions(results=str(toy.results), run_id="r1", progress=False))

    assert result.status == "complete"
    folder = toy.results / "r1"
    assert sorted(p.name for p in folder.iterdir()) == [
        "manifest.json",
        "questions.parquet",
        "summary.json",
    ]  # the journal is gone once the Parquet holds its rows
    table = pq.read_table(folder / "questions.parquet")
    assert set(PINNED) <= set(table.column_names)
    rows = rows_of(folder)
    assert len(rows) == 32

    ok = rows["q001"]
    assert ok["answer"] == "Fact 1 is 7."
    assert ok["retrieved_ids"] == ["f1", "f2"] and ok["gold_ranks"] == [1]
    assert ok["recall_at_1"] == 1.0 and ok["mrr"] == 1.0
    assert ok["faithfulness"] == 1.0 and ok["claims"][0]["verdict"] == "supported"
    assert ok["failure_type"] == "ok"
    assert ok["cost_usd"] == pytest.approx(1000 * 0.002 / 1000 + 100 * 0.01 / 1000)
    assert (ok["retrieval_ms"], ok["generation_ms"], ok["ttft_ms"], ok["total_ms"]) == (
        10.0,
        20.0,
        5.0,
        30.0,
    )
    assert rows["q005"]["gold_ranks"] == [2] and rows["q005"]["mrr"] == 0.5

    err = rows["q003"]
    assert err["error"].startswith("ValueError: cannot handle")
    assert err["failure_type"] == "error" and err["answer"] is None
    # A crash retrieved nothing: it counts as a miss in the retrieval means, not as absent.
    assert err["recall_at_5"] == 0.0 and err["mrr"] == 0.0 and err["gold_ranks"] == [None]

    # Unanswerable: declining is the right answer, scored 1.0; retrieval metrics NULL.
    un = rows["u001"]
    assert un["refused"] is True and un["answer_correctness"] == 1.0
    assert un["recall_at_5"] is None and un["failure_type"] == "ok"

    m = json.loads((folder / "manifest.json").read_text())
    assert m["status"] == "complete" and m["run_id"] == "r1"
    assert m["dataset"]["n_questions"] == 32 and len(m["dataset"]["sha256"]) == 64
    assert m["config"]["pipeline"]["factory"] == "toy_pipeline:build"
    assert m["judge"]["kind"] == "offline" and m["tags"] == ["test"]
    assert m["totals"]["n_questions"] == 32 and m["totals"]["n_errors"] == 1
    assert m["totals"]["cost_usd"] == pytest.approx(31 * 0.003)
    assert "answer_correctness" in json.loads((folder / "summary.json").read_text())
    assert inspect_run(str(toy.results), "r1").ok


def test_measured_timings_when_the_pipeline_reports_none(toy):
    config = load_config(toy.config(params={"timings": False, "delay": 0.02}))
    run(config, RunOptions(results=str(toy.results), run_id="r", progress=False))
    row = rows_of(toy.results / "r")["q001"]
    assert row["retrieval_ms"] is None  # cannot be told apart from the outside
    assert row["generation_ms"] >= 20 and row["ttft_ms"] == row["generation_ms"]
    assert row["total_ms"] == row["generation_ms"]
    assert row["input_tokens"] is None and row["cost_usd"] is None


def test_existing_run_id_is_refused(toy):
    config = load_config(toy.config())
    run(config, RunOptions(results=str(toy.results), run_id="r", progress=False))
    with pytest.raises(ResultsError, match="already exists"):
        run(config, RunOptions(results=str(toy.results), run_id="r", progress=False))


def test_results_location_that_is_a_file_is_one_clear_error(toy, capsys):
    (toy.root / "not-a-folder").write_text("")
    path = toy.config()
    args = ["run", str(path), "--results", str(toy.root / "not-a-folder"), "--run-id", "r"]
    assert main([*args, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rageval run: error: cannot write run r in ") and "not-a-folder" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_default_run_id_is_time_and_config_name(toy):
    config = load_config(toy.config(name="my config"))
    result = run(config, RunOptions(results=str(toy.results), progress=False))
    assert (
        result.run_id.endswith("-my-config") and len(result.run_id) == len("yyyymmdd-hhmmss-") + 9
    )


def test_import_failure_is_a_clear_pipeline_error(toy, capsys):
    path = toy.config(pipeline={"factory": "no_such_module:build"})
    with pytest.raises(PipelineError, match="cannot import pipeline module 'no_such_module'"):
        run(load_config(path), RunOptions(results=str(toy.results), progress=False))
    assert main(["run", str(path), "--results", str(toy.results)]) == 1
    err = capsys.readouterr().err
    assert "no_such_module" in err and "Traceback" not in err


def test_bad_factory_params_are_a_pipeline_error(toy):
    path = toy.config(params={"no_such_param": 1})
    with pytest.raises(PipelineError, match="TypeError"):
        run(load_config(path), RunOptions(results=str(toy.results), progress=False))


def test_resume_with_a_changed_config_is_refused(toy):
    run(load_config(toy.config()), RunOptions(results=str(toy.results), run_id="r", progress=False))
    changed = load_config(toy.config(params={"delay": 0.001}))
    with pytest.raises(ConfigError, match="other settings"):
        run(changed, RunOptions(results=str(toy.results), resume="r", progress=False))


def test_secrets_reach_no_file_and_no_log(toy, monkeypatch, capsys):
    secret = "sk-FAKE-7c1e9d0b2a44-do-not-leak"
    monkeypatch.setenv("TOY_SECRET", secret)
    path = toy.config(params={"secret_env": "TOY_SECRET", "fail_word": "fact 2?"})
    assert main(["run", str(path), "--results", str(toy.results), "--run-id", "s"]) == 0
    captured = capsys.readouterr()
    folder = toy.results / "s"
    rows = pq.read_table(folder / "questions.parquet").to_pylist()
    assert "key=***" in rows_of(folder)["q002"]["error"]
    assert rows_of(folder)["q001"]["answer"] == "Fact 1 is 7. Key ***."
    texts = [json.dumps(rows, default=str), captured.out, captured.err]
    texts += [p.read_bytes().decode("latin-1") for p in folder.rglob("*")]
    assert not [t for t in texts if secret in t]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["config"]["pipeline"]["params"]["secret_env"] == "TOY_SECRET"


def test_manifest_masks_values_under_secret_keys(toy, monkeypatch):
    monkeypatch.setenv("TOY_SECRET", "another-fake-secret-value")
    path = toy.config(thresholds={"password": "hunter2-fake", "recall_at_5": {"min": 0.5}})
    run(load_config(path), RunOptions(results=str(toy.results), run_id="m", progress=False))
    text = (toy.results / "m" / "manifest.json").read_text()
    assert "hunter2-fake" not in text and '"password": "***"' in text
    assert '"input_per_1k_tokens": 0.002' in text  # a price is not a secret


def test_shards_union_to_the_full_set_without_overlap(toy):
    config = load_config(toy.config())
    opts = RunOptions(results=str(toy.results), run_id="sh", progress=False)
    first = run(config, replace(opts, shard=Shard.parse("1/2")))
    assert first.status == "running" and first.missing_shards == ("2/2",)
    assert inspect_run(str(toy.results), "sh").status == "running"
    last = run(config, replace(opts, shard=Shard.parse("2/2")))
    assert last.status == "complete" and last.missing_shards == ()

    folder = toy.results / "sh"
    a = pq.read_table(folder / "questions-0.parquet").column("question_id").to_pylist()
    b = pq.read_table(folder / "questions-1.parquet").column("question_id").to_pylist()
    assert a and b and not set(a) & set(b)
    assert len(a) + len(b) == 32 and set(a) | set(b) == {q.id for q in _questions(config)}
    info = inspect_run(str(toy.results), "sh")
    assert info.status == "complete" and info.ok
    table, problems = read_run_rows(info)
    assert table.num_rows == 32 and not problems
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["shards"] == 2 and manifest["totals"]["n_questions"] == 32
    assert (folder / "summary.json").exists()


def _questions(config):
    from rageval_core.dataset import load_dataset

    return load_dataset(config.dataset_path).questions


def test_shard_split_is_stable_and_total():
    ids = [f"q{i}" for i in range(500)]
    owners = [[k for k in range(3) if Shard(k, 3).owns(q)] for q in ids]
    assert all(len(o) == 1 for o in owners)
    assert {o[0] for o in owners} == {0, 1, 2}


@pytest.mark.parametrize("text", ["1", "a/b", "-1/2", "0/0", "1/10001", "1/" + "9" * 5000])
def test_bad_shard_is_a_config_error(text):
    with pytest.raises(ConfigError, match="--shard"):
        Shard.parse(text)


@pytest.mark.parametrize("text", ["0/2", "3/2", "4/3"])
def test_shards_are_numbered_from_one_to_n(text):
    """`--shard 1/N` … `N/N` as Playwright and Jest number them; 0 and K > N name the value."""
    k = text.split("/")[0]
    with pytest.raises(ConfigError, match=f"--shard {text}: .*K = {k} is not one of them"):
        Shard.parse(text)


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_one_based_shards_cover_every_question_once(n):
    ids = [f"q{i}" for i in range(300)]
    shards = [Shard.parse(f"{k}/{n}") for k in range(1, n + 1)]
    assert [s.label for s in shards] == [f"{k}/{n}" for k in range(1, n + 1)]
    owners = [[s for s in shards if s.owns(q)] for q in ids]
    assert all(len(o) == 1 for o in owners)


def test_shard_needs_a_run_id(toy, capsys):
    assert main(["run", str(toy.config()), "--shard", "1/2", "--results", str(toy.results)]) == 2
    assert "--run-id" in capsys.readouterr().err


def test_concurrency_below_one_is_a_config_error(toy, capsys):
    assert (
        main(["run", str(toy.config()), "--concurrency", "0", "--results", str(toy.results)]) == 2
    )
    assert "--concurrency must be >= 1" in capsys.readouterr().err


def test_a_secret_written_in_the_params_reaches_no_row(toy):
    # The manifest masks `api_key` by its name; a pipeline error echoing the value must not
    # put it back into the row (SPEC §4: secrets never appear in a result row).
    secret = "sk-INLINE-5e0c7a1f-do-not-leak"
    (toy.root / "echo_key_pipeline.py").write_text(
        "def build(api_key):\n"
        "    def pipe(question):\n"
        "        raise RuntimeError(f'401 invalid key {api_key}')\n"
        "    return pipe\n"
    )
    path = toy.config(
        name="inline",
        pipeline={"factory": "echo_key_pipeline:build", "params": {"api_key": secret}},
    )
    run(load_config(path), RunOptions(results=str(toy.results), run_id="i", progress=False))
    folder = toy.results / "i"
    assert rows_of(folder)["q001"]["error"] == "RuntimeError: 401 invalid key ***"
    texts = [p.read_bytes().decode("latin-1") for p in folder.rglob("*")]
    assert not [t for t in texts if secret in t]


def test_stale_questions_are_left_out_of_the_run_and_named(toy, capsys):
    """A question `rageval dataset refresh` marked stale has gold that no longer matches
    its documents: the run leaves it out and says how many and which."""
    path = toy.root / "data" / "dataset.yaml"
    data = yaml.safe_load(path.read_text())
    for q in data["questions"]:
        if q["id"] in ("q003", "q007"):
            q.update(stale="true", stale_reason="gold_spans[0]: 'x' is no longer in 'doc'")
    path.write_text(yaml.safe_dump(data))
    config = load_config(toy.config())
    result = run(config, RunOptions(results=str(toy.results), run_id="r1", progress=False))

    assert result.status == "complete"
    rows = rows_of(toy.results / "r1")
    assert len(rows) == 30 and "q003" not in rows and "q007" not in rows
    assert (
        "left out 2 stale question(s), whose gold no longer matches the documents "
        "(docs/datasets.md#refreshing-gold): q003, q007"
    ) in capsys.readouterr().err
    # recorded in the run, so every page can say so (dashboard/streamlit_app.py)
    why = "gold_spans[0]: 'x' is no longer in 'doc'"
    assert inspect_run(str(toy.results), "r1").stale_questions == {"q003": why, "q007": why}
    manifest = json.loads((toy.results / "r1" / "manifest.json").read_text())
    assert manifest["stale_questions"] == {"q003": why, "q007": why}


def test_a_run_without_stale_questions_writes_no_key(toy):
    run(load_config(toy.config()), RunOptions(results=str(toy.results), run_id="r", progress=False))
    assert "stale_questions" not in json.loads((toy.results / "r" / "manifest.json").read_text())
    assert inspect_run(str(toy.results), "r").stale_questions == {}
