"""A file that does not fit is one error naming the file and the first field that did not,
and nothing is written: no run folder, no staging left behind, exit 2 on the CLI."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import pytest

from rageval_core.cli import main
from rageval_core.errors import ConfigError, SourceError
from rageval_core.importers import import_run
from tests.core.importers.conftest import FILES, nothing_written


def edit_json(src: Path, dst: Path, change) -> Path:
    data = json.loads(src.read_text())
    change(data)
    dst.write_text(json.dumps(data))
    return dst


def promptfoo_output_number(d):
    d["results"]["results"][3]["response"]["output"] = 42


def promptfoo_score_text(d):
    d["results"]["results"][2]["namedScores"]["brevity"] = "high"


def promptfoo_two_providers(d):
    extra = json.loads(json.dumps(d["results"]["results"][0]))
    extra["provider"] = {"id": "openai:gpt-4o-mini"}
    d["results"]["results"].append(extra)


def deepeval_score_text(d):
    (d.get("testRunData") or d)["testCases"][1]["metricsData"][0]["score"] = "high"


def inspect_value_word(d):
    d["samples"][4]["scores"]["includes"]["value"] = "maybe"


CASES = [
    ("promptfoo", "promptfoo", promptfoo_output_number, "results.results[3].response.output"),
    ("promptfoo", "promptfoo", promptfoo_score_text, "results.results[2].namedScores.brevity"),
    ("promptfoo", "promptfoo", promptfoo_two_providers, "2 providers (echo, openai:gpt-4o-mini)"),
    ("deepeval", "deepeval", deepeval_score_text, "testCases[1].metricsData[0].score"),
    ("inspect", "inspect-json", inspect_value_word, "samples[4].scores.includes.value"),
]


@pytest.mark.parametrize("tool, kind, change, field", CASES, ids=[c[2].__name__ for c in CASES])
def test_a_field_that_does_not_fit_is_named_and_nothing_is_written(
    tool, kind, change, field, fixture_file, tmp_path
):
    bad = edit_json(fixture_file(kind), tmp_path / f"bad{FILES[kind].suffix}", change)
    results = tmp_path / "results"
    with pytest.raises(SourceError) as err:
        import_run(tool, bad, results_dir=results, run_id="r")
    assert str(bad) in str(err.value) and field in str(err.value), str(err.value)
    nothing_written(results)


def test_ragas_text_in_a_metric_column_names_the_line_and_column(fixture_file, tmp_path):
    table = list(csv.DictReader(io.StringIO(fixture_file("ragas").read_text())))
    metric = next(c for c in table[0] if c.startswith("id_based_context_recall"))
    table[6][metric] = "n/a"
    bad = tmp_path / "bad.csv"
    with open(bad, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(table[0]))
        w.writeheader()
        w.writerows(table)
    with pytest.raises(SourceError, match=rf"bad.csv:\d+: column '{metric}' must be a number"):
        import_run("ragas", bad, results_dir=tmp_path / "results", run_id="r")
    nothing_written(tmp_path / "results")


@pytest.mark.parametrize(
    "tool, kind, message",
    [
        ("deepeval", "promptfoo", "testRunData.testCases is missing"),
        ("promptfoo", "deepeval", "results.results is missing"),
        ("ragas", "ragas-jsonl", None),  # the right tool: control
        ("inspect", "promptfoo", "eval or samples is missing: not an Inspect log"),
    ],
)
def test_another_tools_file_is_refused_by_name(tool, kind, message, fixture_file, tmp_path):
    if message is None:
        import_run(tool, fixture_file(kind), results_dir=tmp_path, run_id="ok")
        return
    with pytest.raises(SourceError, match=message):
        import_run(tool, fixture_file(kind), results_dir=tmp_path, run_id="r")
    nothing_written(tmp_path)


def test_a_damaged_eval_zip_is_one_error(fixture_file, tmp_path):
    good = fixture_file("inspect").read_bytes()
    bad = tmp_path / "bad.eval"
    bad.write_bytes(good[: len(good) // 2])
    with pytest.raises(SourceError, match="bad.eval"):
        import_run("inspect", bad, results_dir=tmp_path / "results", run_id="r")
    members = tmp_path / "m.eval"
    with zipfile.ZipFile(members, "w") as z:  # a zip, but no Inspect log
        z.writestr("other.json", "{}")
    with pytest.raises(SourceError, match="header.json is missing"):
        import_run("inspect", members, results_dir=tmp_path / "results", run_id="r")


def test_a_question_the_dataset_lacks_is_refused(fixture_file, tmp_path):
    def rename(d):
        d["results"]["results"][5]["vars"]["question_id"] = "q999"
        d["results"]["results"][5]["vars"]["question"] = "Not in the handbook?"

    bad = edit_json(fixture_file("promptfoo"), tmp_path / "bad.json", rename)
    from rageval_core.dataset import example_dataset_path

    with pytest.raises(SourceError, match="row 6: question 'q999' is not in dataset"):
        import_run("promptfoo", bad, results_dir=tmp_path / "r", dataset=example_dataset_path())


def test_the_cli_prints_one_line_and_exits_2(fixture_file, tmp_path, capsys):
    bad = edit_json(fixture_file("promptfoo"), tmp_path / "bad.json", promptfoo_output_number)
    code = main(["import", "promptfoo", str(bad), "--results", str(tmp_path / "res")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("rageval import: error: ") and "response.output" in err
    code = main(["import", "promptfoo", str(tmp_path / "nope.json")])
    assert code == 2 and "no such file" in capsys.readouterr().err


def test_an_existing_run_id_is_refused_before_reading(fixture_file, tmp_path, capsys):
    args = ["import", "promptfoo", str(fixture_file("promptfoo")), "--results", str(tmp_path)]
    assert main([*args, "--run-id", "x"]) == 0
    before = (tmp_path / "x" / "manifest.json").read_bytes()
    assert main([*args, "--run-id", "x"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "x" / "manifest.json").read_bytes() == before


def test_a_value_the_writer_refuses_names_the_file_too(fixture_file, tmp_path):
    def huge_tokens(d):
        d["results"]["results"][1]["response"]["tokenUsage"]["prompt"] = 2**70

    bad = edit_json(fixture_file("promptfoo"), tmp_path / "big.json", huge_tokens)
    with pytest.raises(SourceError) as err:
        import_run("promptfoo", bad, results_dir=tmp_path / "results", run_id="r")
    message = str(err.value)
    assert message.startswith(f"{bad}: ") and "question 'q002'" in message, message
    assert "input_tokens" in message
    nothing_written(tmp_path / "results")


def test_one_provider_of_several_is_imported_with_provider(fixture_file, tmp_path, capsys):
    from rageval_core.cli import main

    two = edit_json(fixture_file("promptfoo"), tmp_path / "two.json", promptfoo_two_providers)
    args = ["import", "promptfoo", str(two), "--results", str(tmp_path / "res")]
    assert main(args) == 2 and "--provider ID" in capsys.readouterr().err
    assert main([*args, "--provider", "echo", "--run-id", "e"]) == 0
    assert main([*args, "--provider", "openai:gpt-4o-mini", "--run-id", "o"]) == 0
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "res" / "e" / "questions.parquet").num_rows == 10
    assert pq.read_table(tmp_path / "res" / "o" / "questions.parquet").num_rows == 1
    assert main([*args, "--provider", "nope"]) == 2
    assert "no results of provider 'nope'" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="promptfoo files only"):
        import_run("inspect", fixture_file("inspect"), results_dir=tmp_path, provider="x")
