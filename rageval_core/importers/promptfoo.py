"""promptfoo's `promptfoo eval --output results.json` (checked on promptfoo 0.121).

Per result (`results.results[]`): `vars.question_id` / `vars.id` / the test's
`description` give the id, `vars.question` / `vars.query` / `vars.input` the question,
`response.output` the answer, `latencyMs` the latency, `cost` the cost,
`response.tokenUsage` the tokens, `namedScores` the declared metrics, `gradingResult`
the overall score (`promptfoo_score`, `promptfoo_pass`), `error` the error when
`failureReason` is 2 (a provider error; 1 is a failed assertion, which is a score). Retrieved chunk
ids come from the test's `metadata.retrieved_ids` or `vars.retrieved_ids` when present.
One provider and prompt per run: a file with several providers' results is imported one
provider at a time (`--provider ID`); several prompts give the same question twice, which
`resolve_ids` refuses naming the row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rageval_core.errors import SourceError, shown
from rageval_core.importers.common import Fields, Imported, declare, load_json, metric_name
from rageval_core.models import JudgeRef

ID_VARS = ("question_id", "id", "qid")
QUESTION_VARS = ("question", "query", "input", "user_input")
FAILURE_ERROR = 2  # promptfoo's ResultFailureReason.ERROR (NONE 0, ASSERT 1)
REFERENCE_VARS = ("reference", "reference_answer", "expected", "ground_truth", "answer_key")


def _first_text(vars_: Fields, keys: tuple[str, ...]) -> str | None:
    for k in keys:
        v = vars_.raw(k)
        if isinstance(v, str | int) and not isinstance(v, bool):
            return str(v)
    return None


def _retrieved(test: Fields | None, vars_: Fields) -> list[str] | None:
    meta = test.obj("metadata") if test else None
    for holder in (meta, vars_):
        if holder is not None and holder.raw("retrieved_ids") is not None:
            return holder.texts("retrieved_ids")
    return None


def _provider(r: Fields) -> str | None:
    p = r.obj("provider")
    return p.text("id") if p else None


def read(path: Path, provider: str | None = None) -> Imported:
    """The file's results of `provider` (its id), which may be omitted when the file
    holds one provider's results only."""
    source = str(path)
    top = Fields(load_json(path), source, "")
    block = top.obj("results")
    if block is None or block.raw("results") is None:
        raise SourceError(f"{source}: results.results is missing: not a promptfoo output file")
    rows = [
        Fields(raw, source, f"results.results[{i}]") for i, raw in enumerate(block.items("results"))
    ]
    ids = sorted({p for p in map(_provider, rows) if p})
    quoted = ", ".join(shown(p, 40, bare=True) for p in ids[:5]) + (" …" if len(ids) > 5 else "")
    if provider is not None:
        rows = [r for r in rows if _provider(r) == provider]
        if not rows:
            raise SourceError(f"{source}: no results of provider {provider!r} (it holds: {quoted})")
    elif len(ids) > 1:
        raise SourceError(
            f"{source}: holds the results of {len(ids)} providers ({quoted}); a run is one "
            "pipeline: import one with --provider ID"
        )
    records, scores, labels = [], [], {}
    for r in rows:
        vars_ = r.obj("vars") or Fields({}, source, r.path("vars"))
        test = r.obj("testCase")
        response = r.obj("response")
        usage = response.obj("tokenUsage") if response else None
        grading = r.obj("gradingResult")
        named = r.obj("namedScores") or Fields({}, source, r.path("namedScores"))
        row_scores: dict[str, Any] = {}
        for label in named.value:
            name = metric_name(str(label), "promptfoo")
            labels[name] = str(label)
            row_scores[name] = named.number(str(label))
        if grading is not None:
            row_scores["promptfoo_score"] = grading.number("score")
            passed = grading.raw("pass")
            if passed is not None and not isinstance(passed, bool):
                raise SourceError(f"{source}: {grading.path('pass')} must be true or false")
            row_scores["promptfoo_pass"] = None if passed is None else float(passed)
        scores.append(row_scores)
        latency = r.number("latencyMs")
        # `error` also holds a failed assertion's message (failureReason 1, ASSERT): only
        # failureReason 2 (ERROR, the provider failed) is the question's error.
        error = r.raw("error") if r.raw("failureReason") == FAILURE_ERROR else None
        records.append(
            {
                "question_id": _first_text(vars_, ID_VARS)
                or (test.text("description") if test else None),
                "question": _first_text(vars_, QUESTION_VARS),
                "reference": _first_text(vars_, REFERENCE_VARS),
                "answer": response.text("output") if response else None,
                "retrieved": _retrieved(test, vars_),
                "generation_ms": latency,
                "total_ms": latency,
                "cost_usd": r.number("cost"),
                "input_tokens": usage.number("prompt") if usage else None,
                "output_tokens": usage.number("completion") if usage else None,
                "error": None if error in (None, "") else str(error),
                "scores": row_scores,
            }
        )
    if any(s.get("promptfoo_score") is not None for s in scores):
        labels["promptfoo_score"] = "promptfoo score"
        labels["promptfoo_pass"] = "promptfoo pass"
    for rec, s in zip(records, scores, strict=True):
        rec["scores"] = {n: s.get(n) for n in labels}
    meta = top.obj("metadata")
    version = meta.text("promptfooVersion") if meta else None
    ids = [provider] if provider is not None else ids
    return Imported(
        records=records,
        metrics=declare(labels, scores),
        config={"pipeline": {"provider": ", ".join(ids)}, "eval_id": top.raw("evalId")},
        judge=JudgeRef(kind="promptfoo", version=version),
        name=ids[0] if len(ids) == 1 else None,
        tool_version=version,
    )
