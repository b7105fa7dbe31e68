"""Every YAML a user gives rageval besides datasets — run configs, thresholds, labels — is
read through the same guarded reader: alias bombs, deep nesting, bad bytes and huge values
end in one error naming the file, never a traceback, a 2 GB manifest or a 20 GB message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rageval_core.cli import main
from rageval_core.config import load_config
from rageval_core.errors import ConfigError, DatasetError
from rageval_core.labels.gold import next_version, superseded
from rageval_core.labels.older_yaml import load_labels
from rageval_core.models import Chunk
from rageval_core.query import load_thresholds
from rageval_core.userfiles import ascii_int
from tests.core.hostile_files import billion_laughs, cli, limit_memory

EXAMPLE = Path(__file__).resolve().parents[1].parent / "rageval_core" / "example"
CONFIG = f"""name: bm25
dataset: {EXAMPLE / "dataset.yaml"}
pipeline:
  factory: rageval_core.example.pipeline:build
  params: {{top_k: 5}}
"""


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


# ---------------------------------------------------------------------------- run configs


def test_alias_bomb_in_run_config_params_is_refused_before_any_run(tmp_path):
    # 10^7 leaves: before, every one was written out into manifest.json (356 MB).
    bomb = billion_laughs(levels=7)
    text = bomb + CONFIG.replace("params: {top_k: 5}", "params: {top_k: 5, blocks: *l7}")
    path = write(tmp_path, "run.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: run config: YAML aliases expand")
    results = tmp_path / "results"
    done, seconds = cli("run", str(path), "--results", str(results), "--no-progress")
    assert done.returncode == 2 and seconds < 20
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert not results.exists()


def test_a_few_anchors_in_a_run_config_still_load(tmp_path):
    text = CONFIG.replace(
        "params: {top_k: 5}",
        "params: {top_k: 5, a: &shared {model: m, temperature: 0}, b: *shared}",
    )
    config = load_config(write(tmp_path, "run.yaml", text))
    assert config.pipeline.params["b"] == {"model": "m", "temperature": 0}
    assert config.to_manifest()["pipeline"]["params"]["a"] == config.pipeline.params["b"]


def test_non_utf8_run_config_is_one_config_error_with_the_byte_offset(tmp_path, capsys):
    path = write(tmp_path, "run.yaml", CONFIG.encode() + b"tags: [caf\xe9]\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    offset = len(CONFIG.encode()) + len(b"tags: [caf")
    assert str(info.value) == (f"{path}:6: run config is not UTF-8 (byte 0xe9 at offset {offset})")
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "UnicodeDecodeError" not in err


@pytest.mark.parametrize("depth", [70, 900])
def test_deeply_nested_run_config_is_a_config_error(tmp_path, depth):
    text = CONFIG.replace("{top_k: 5}", "[" * depth + "]" * depth)
    with pytest.raises(ConfigError, match="nested more than 64 levels deep"):
        load_config(write(tmp_path, "run.yaml", text))


HUGE = "x" * 1_000_000
HUGE_LIST = "[" + ", ".join(["abcdefgh"] * 100_000) + "]"


@pytest.mark.parametrize(
    "change",
    [
        ("factory: rageval_core.example.pipeline:build", f"factory: {HUGE}"),
        ("params: {top_k: 5}", f"params: {HUGE_LIST}"),
        ("name: bm25", f"name: bm25\ntags: {{a: {HUGE_LIST}}}"),
        ("name: bm25", f"name: bm25\nconcurrency: {HUGE_LIST}"),
        ("name: bm25", f"name: bm25\nks: [{HUGE}]"),
        ("name: bm25", f"name: bm25\n? {HUGE}\n: 1"),
        ("name: bm25", f"name: bm25\nprices: {{input_per_1k_tokens: {HUGE}}}"),
        ("name: bm25", f"name: bm25\nprices: {{? {HUGE} : 1}}"),
        ("name: bm25", f"name: bm25\nfailure_thresholds: {{miss_k: {HUGE_LIST}}}"),
        ("name: bm25", f"name: bm25\nfailure_thresholds: {{? {HUGE} : 1}}"),
        ("params: {top_k: 5}", f"params: {{top_k: 5}}\n  ? {HUGE}\n  : 1"),
    ],
    ids=[
        "factory",
        "params",
        "tags",
        "concurrency",
        "ks",
        "key",
        "price",
        "price-key",
        "failure-threshold",
        "failure-key",
        "pipeline-key",
    ],
)
def test_config_errors_never_echo_an_unbounded_value(tmp_path, change):
    path = write(tmp_path, "run.yaml", CONFIG.replace(*change))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    for line in str(info.value).splitlines():
        assert len(line) < 300 + len(str(path)), line[:400]


# ---------------------------------------------------------------------------- thresholds


def test_threshold_files_are_read_through_the_same_guards(tmp_path):
    bomb = write(tmp_path, "t1.yaml", billion_laughs() + "recall_at_5: {min: 0.5}\n")
    with pytest.raises(ConfigError, match="YAML aliases expand"):
        load_thresholds(bomb)
    latin = write(tmp_path, "t2.yaml", b"# caf\xe9\nrecall_at_5: {min: 0.5}\n")
    with pytest.raises(ConfigError, match=r"t2.yaml:1: thresholds file is not UTF-8 \(byte 0xe9"):
        load_thresholds(latin)
    deep = write(tmp_path, "t3.yaml", "recall_at_5: " + "[" * 500 + "]" * 500 + "\n")
    with pytest.raises(ConfigError, match="nested more than 64 levels deep"):
        load_thresholds(deep)
    keys = write(tmp_path, "t4.yaml", f"recall_at_5: {{? {HUGE} : 1}}\n? {HUGE}\n: {{min: 1}}\n")
    with pytest.raises(ConfigError) as info:
        load_thresholds(keys)
    assert all(len(line) < 300 for line in str(info.value).splitlines())


def test_check_with_an_alias_bomb_thresholds_file_exits_2_quickly(tmp_path):
    bomb = write(tmp_path, "t.yaml", billion_laughs() + "recall_at_5: {min: 0.5}\n")
    (tmp_path / "results").mkdir()
    done, seconds = cli("check", "run1", "--thresholds", str(bomb), "--results", str(tmp_path))
    assert done.returncode == 2 and seconds < 20, done.stderr[-300:]
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


# ---------------------------------------------------------------------------- labels


def test_label_files_are_read_through_the_same_guards(tmp_path):
    bomb = write(tmp_path, "l1.yaml", billion_laughs() + "labels: *l9\n")
    with pytest.raises(DatasetError, match="l1.yaml: labels file: YAML aliases expand"):
        load_labels(bomb)
    latin = write(tmp_path, "l2.yaml", b"labels:\n  - {question_id: q\xe9, faithful: true}\n")
    with pytest.raises(DatasetError, match=r"l2.yaml:2: labels file is not UTF-8"):
        load_labels(latin)
    deep = write(tmp_path, "l3.yaml", "labels: " + "[" * 500 + "]" * 500 + "\n")
    with pytest.raises(DatasetError, match="nested more than 64 levels deep"):
        load_labels(deep)


def test_yaml_subprocess_guard_really_limits_memory():
    # The CLI helper's limit must bite: a process that tries to hold 2 GB dies.
    done = subprocess.run(
        [sys.executable, "-c", "b = bytearray(2_000_000_000)"],
        capture_output=True,
        preexec_fn=limit_memory,
    )
    assert done.returncode != 0 and b"MemoryError" in done.stderr


@given(st.text(max_size=25))
def test_one_integer_rule_for_what_users_write(text: str) -> None:
    """`ascii_int`: an integer exactly when the text is 1-18 ASCII digits (white space
    around it aside); `²`, `٣` and 19 digits are not, and nothing raises."""
    value = ascii_int(text)
    core = text.strip()
    is_int = 1 <= len(core) <= 18 and all("0" <= c <= "9" for c in core)
    assert (value is not None) == is_int
    if is_int:
        assert value == int(core)


def test_versions_of_any_digits_sort_without_an_error() -> None:
    """to-gold with chunk versions `1` and `²`: a ValueError in `_version_key` before."""
    corpus = [Chunk("a@1#1", "a", "t", "1"), Chunk("a@2#1", "a", "t", "²"), Chunk("b#1", "b", "t")]
    assert set(superseded(corpus)) == {"a@1#1"}
    assert next_version("²") == "²-gold" and next_version("v9") == "v10"
