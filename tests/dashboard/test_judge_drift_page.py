"""The Judge page says "judge drift" when one config's judge model name was served by
another model between two runs (issue 32 item 5), the served name escaped: it comes from
a server."""

from __future__ import annotations

from tests.core.judges.drift_runs import Serving, project, run
from tests.dashboard.apptest import all_text, seen
from tests.dashboard.reviewing import open_page

HOSTILE = "<img src=x onerror=alert(1)> **bold** [b](http://evil.example)"


def _results(scratch, models: list[str]):
    results = scratch / "results"
    with Serving(models[0]) as serving:
        config = project(scratch / "project", serving, cache=False)
        for i, model in enumerate(models):
            serving.model = model
            run(config, results, f"run-{i}")
    return results


def _warnings(at) -> list[str]:
    return [w.value for w in at.warning]


def test_the_judge_page_shows_the_served_model_changing(app, scratch, labels):
    at = open_page(app, _results(scratch, ["judge-a", "judge-a", "judge-b"]), "judge")
    [drift] = [w for w in _warnings(at) if "judge drift" in w]
    assert seen(drift).startswith(
        "judge drift between run-1 and run-2: the openai judge judge-model was served "
        "judge-a → judge-b"
    )


def test_no_drift_no_warning(app, scratch, labels):
    at = open_page(app, _results(scratch, ["judge-a", "judge-a"]), "judge")
    assert not [w for w in _warnings(at) if "drift" in w]
    assert "No judge served another model" in all_text(at)


def test_a_hostile_served_model_is_shown_as_text(app, scratch, labels):
    at = open_page(app, _results(scratch, ["judge-a", HOSTILE]), "judge")
    [drift] = [w for w in _warnings(at) if "judge drift" in w]
    assert "<img" not in drift and "](" not in drift.replace("\\](", "")
    assert "**bold**" not in drift  # no emphasis: the stars are escaped
    assert f"judge-a → {HOSTILE}" in seen(drift)  # what a reader sees: the name, as sent
