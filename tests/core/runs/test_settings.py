"""A run's settings and their fingerprint (runs/manifest.py): what decides its rows, so
that flakiness counts only runs of one pipeline, config and dataset."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from rageval_core.models import DatasetRef, JudgeRef, RunManifest
from rageval_core.runs.manifest import (
    NOT_SETTINGS,
    config_fingerprint,
    settings_changes,
)

leaves = st.one_of(st.integers(-5, 5), st.booleans(), st.text(max_size=4), st.none())
keys = st.text("abcdefgh_", min_size=1, max_size=6).filter(lambda k: k not in NOT_SETTINGS)
configs = st.dictionaries(
    keys, st.one_of(leaves, st.dictionaries(keys, leaves, min_size=1, max_size=3)), max_size=5
)


def manifest(config: dict) -> RunManifest:
    return RunManifest(
        run_id="r",
        status="complete",
        created_at="2025-01-01T00:00:00Z",
        config=config,
        dataset=DatasetRef("qa", "1", "a" * 64, 3),
        judge=JudgeRef("offline"),
    )


@given(configs, st.randoms())
def test_the_fingerprint_ignores_key_order(config, rnd):
    items = list(config.items())
    rnd.shuffle(items)
    assert config_fingerprint(manifest(config)) == config_fingerprint(manifest(dict(items)))


@given(configs, st.dictionaries(st.sampled_from(sorted(NOT_SETTINGS)), leaves))
def test_the_fingerprint_ignores_how_a_run_was_named_and_run(config, off):
    same = manifest({**config, **off})
    assert config_fingerprint(same) == config_fingerprint(manifest(config))
    assert settings_changes(manifest(config), same) == []


@given(configs, keys, leaves, leaves)
def test_any_setting_changed_changes_the_fingerprint_and_is_named(config, key, a, b):
    if a == b:  # True == 1 too: the same setting as far as the test knows
        return
    before, after = manifest({**config, key: a}), manifest({**config, key: b})
    assert config_fingerprint(before) != config_fingerprint(after)
    [change] = settings_changes(before, after)
    assert change.startswith(f"config.{key} ")


def test_the_judge_and_the_dataset_content_are_settings():
    m = manifest({"pipeline": {"params": {"top_k": 5}}})
    other_judge = replace(m, judge=JudgeRef("openai", model="m1"))
    other_data = replace(m, dataset=DatasetRef("qa", "1", "b" * 64, 3))
    fingerprints = {config_fingerprint(x) for x in (m, other_judge, other_data)}
    assert len(fingerprints) == 3
    assert settings_changes(m, other_judge)[0].startswith("judge.")


def test_a_long_changed_setting_is_shown_bounded():
    long = "You are a helpful assistant. " * 200
    before = manifest({"prompt": long})
    after = manifest({"prompt": long + "Be brief."})
    [change] = settings_changes(before, after)
    assert len(change) < 3 * 80 and "…" in change and "\n" not in change


@given(configs, keys, leaves)
def test_the_kept_fingerprint_is_the_computed_one_and_a_changed_copy_recomputes(config, key, v):
    import pickle
    from dataclasses import asdict

    m = manifest(config)
    first = config_fingerprint(m)
    assert config_fingerprint(m) == first == config_fingerprint(manifest(dict(config)))
    # the kept value is no field: not written, not compared; a pickled copy keeps it right
    assert asdict(m) == asdict(manifest(config)) and m == manifest(config)
    assert config_fingerprint(pickle.loads(pickle.dumps(m))) == first
    changed = replace(m, config={**config, key: v})
    assert config_fingerprint(changed) == config_fingerprint(manifest({**config, key: v}))
