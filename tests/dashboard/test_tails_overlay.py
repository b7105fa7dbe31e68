"""Tails overlays the chosen runs that have the metric: every run for a built-in metric
(no per-run catalogue looked up), only the declaring runs for a declared one."""

from __future__ import annotations

from tests.dashboard.apptest import open_page, trace_names


def _overlaid(at) -> set[str]:
    return {n for n in trace_names(at, 1) if n}


def test_a_built_in_metric_overlays_every_chosen_run(app, declared_results):  # noqa: F811
    at = open_page(app(declared_results, metric="recall_at_5", runs=["plain", "decl-a"]), "tails")
    assert _overlaid(at) == {"plain", "decl-a"}


def test_a_declared_metric_overlays_only_the_runs_that_declare_it(app, declared_results):  # noqa: F811
    at = open_page(app(declared_results, metric="toxicity", runs=["plain", "decl-a"]), "tails")
    assert _overlaid(at) == {"decl-a"}


def test_the_default_overlay_is_the_newest_runs_that_have_the_metric(app, declared_results):  # noqa: F811
    """The newest three were overlaid whatever they held: `plain` has no toxicity."""
    at = open_page(app(declared_results, metric="toxicity"), "tails")
    assert at.multiselect(key="tails_runs").value == ["decl-b", "decl-a"]
    assert _overlaid(at) == {"decl-b", "decl-a"}


def test_over_time_draws_one_line_per_config(app, declared_results):  # noqa: F811
    at = open_page(app(declared_results, metric="recall_at_5"), "tails")
    lines = [n for n in trace_names(at, 0) if n and not n.endswith("p10")]
    assert sorted(lines) == ["decl", "hostile", "plain"]
