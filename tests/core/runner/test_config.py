"""Run configs: paths relative to the config file, defaults, every problem in one error."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.catalogue import DEFAULT_KS
from rageval_core.cli import main
from rageval_core.config import load_config
from rageval_core.errors import ConfigError
from rageval_core.judges import make_judge


def write(tmp_path: Path, data) -> Path:
    path = tmp_path / "conf" / "run.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


GOOD = {
    "name": "bm25",
    "dataset": "../data/dataset.yaml",
    "pipeline": {"factory": "my_rag.pipeline:build", "params": {"top_k": 5}},
    "judge": {
        "kind": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m",
        "api_key_env": "OPENAI_API_KEY",
    },
    "prices": {"input_per_1k_tokens": 0.00015, "output_per_1k_tokens": 0.0006},
    "concurrency": 8,
    "tags": ["nightly"],
    "ks": [2, 5],
    "failure_thresholds": {"faithfulness_min": 0.7},
    "thresholds": {"recall_at_5": {"min": 0.7}},
}


def test_a_full_config(tmp_path):
    c = load_config(write(tmp_path, GOOD))
    assert c.dataset_path == (tmp_path / "data" / "dataset.yaml").resolve()
    assert c.pipeline.factory == "my_rag.pipeline:build" and c.pipeline.params == {"top_k": 5}
    assert c.prices.cost(1000, 1000) == pytest.approx(0.00075)
    assert c.concurrency == 8 and c.tags == ("nightly",)
    assert c.ks == (1, 2, 3, 5, 10, 20)  # pinned columns always filled
    assert c.failure_thresholds.faithfulness_min == 0.7
    assert c.secret_env_names() == ["OPENAI_API_KEY"]
    assert c.to_manifest()["pipeline"] == {
        "factory": "my_rag.pipeline:build",
        "params": {"top_k": 5},
    }


def test_defaults(tmp_path):
    c = load_config(write(tmp_path, {k: GOOD[k] for k in ("name", "dataset", "pipeline")}))
    assert c.judge is None and c.concurrency == 4 and c.ks == DEFAULT_KS
    assert c.prices is None and "prices" not in c.to_manifest()  # unpriced: cost unknown
    assert c.to_manifest()["judge"] == {"kind": "offline"}


def test_every_problem_is_listed_with_the_file(tmp_path):
    bad = {
        "dataset": 3,
        "pipeline": {"factory": "no-colon", "params": [1], "extra": 1},
        "prices": {"input_per_1k_tokens": -1, "per_call": 2},
        "concurrency": 0,
        "tags": "nightly",
        "ks": [0],
        "failure_thresholds": {"rank_K": 3},
        "colour": "blue",
    }
    path = write(tmp_path, bad)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    text = str(err.value)
    assert str(path) in text
    for expected in (
        "name is required",
        "dataset is required",
        "pipeline.factory must look like",
        "pipeline.params must be a mapping",
        "unknown key pipeline.extra",
        "prices.input_per_1k_tokens must be a number >= 0",
        "unknown key prices.per_call",
        "concurrency must be an integer >= 1",
        "tags must be a list of strings",
        "ks must be a list of integers >= 1",
        "failure_thresholds: unknown key 'rank_K'",
        "unknown key 'colour'",
    ):
        assert expected in text
    assert len(err.value.problems) == 12


def test_the_judges_problems_come_with_the_others_in_one_pass_naming_the_file(tmp_path, capsys):
    # the dataset does not exist: the judge used to be checked only after it loaded
    judge = {"kind": "openai", "model": 3, "temprature": 0}
    path = write(tmp_path, {**GOOD, "concurrency": 0, "judge": judge})
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "dataset" not in err
    for expected in (
        "concurrency must be an integer >= 1",
        "judge.base_url is required",
        "judge.model must be str",
        "judge.temprature is not a setting",
    ):
        assert expected in err, err


judge_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 300),
    st.floats(-1, 2),
    st.text(max_size=8),
    st.sampled_from(["http://127.0.0.1:9/v1", "m", "faithfulness"]),
    st.lists(st.sampled_from(["faithfulness", "nope"]), max_size=2),
)
judge_keys = st.sampled_from(
    [
        "kind",
        "base_url",
        "model",
        "threshold",
        "concurrency",
        "timeout_s",
        "max_retries",
        "metrics",
        "cache",
        "conservative",
        "prices",
        "backoff_base_s",
        "colour",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["offline", "openai"]), st.dictionaries(judge_keys, judge_values))
def test_a_judge_section_that_loads_builds_a_judge(tmp_path_factory, kind, judge):
    # the check at load time and the judge's own reading never disagree
    judge = {**judge, "kind": judge.get("kind", kind), "cache": False}
    path = write(tmp_path_factory.mktemp("c"), {**GOOD, "judge": judge})
    try:
        config = load_config(path)
    except ConfigError as exc:
        assert str(path) in exc.message
        with pytest.raises(ConfigError):
            make_judge(judge).close()
        return
    make_judge(config.judge).close()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file is empty"),
        ("- a\n- b\n", "found list"),
        ("name: [unclosed\n", "not valid YAML"),
    ],
)
def test_not_a_config(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, text))


def test_missing_file_exits_2_with_one_line(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.yaml")]) == 2
    err = capsys.readouterr().err
    assert "cannot read run config" in err and "Traceback" not in err
