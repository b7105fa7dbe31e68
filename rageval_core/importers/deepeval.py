"""DeepEval's saved test run: `.deepeval/.latest_test_run.json` (key `testRunData`, or the
test run object itself); checked on deepeval 4.3.

Per test case (`testCases[]`): `name` is the question id (DeepEval names cases
`test_case_<n>` unless told otherwise, so `metadata.question_id` — the test case's
`additional_metadata`, `additionalMetadata` in older files — wins when present), `input`
the question, `actualOutput` the answer, `expectedOutput` the reference,
`retrievalContext` the retrieved texts (`metadata.retrieved_ids` their ids, when the
harness recorded them), `completionTime` (seconds) the latency, `tokenCost` the cost,
`inputTokenCount`/`outputTokenCount` the tokens, `tags` the tags; each of
`metricsData[]` (`name`, `score`, `threshold`, `success`, `reason`, `evaluationModel`,
`evaluationCost`, `error`) is a declared metric, except `Faithfulness`,
`Answer Correctness`, `Answer Relevancy` (with its reason), `Contextual Relevancy`,
`Contextual Recall` and `Contextual Precision`, whose scores fill rageval's columns of
those figures (`PINNED`; no per-chunk or per-statement verdict is made up); the claims
and verdicts `FaithfulnessMetric` writes into its `verboseLogs` become the run's claims
(yes → supported, no → contradicted, idk → unsupported, with the verdict's reason), and
an answer with no claims has NULL faithfulness, not DeepEval's 1.0 (docs/metrics.md). The
metrics' `evaluationCost` sum is the judge cost; a metric's `error` is the row's judge
error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rageval_core.bounded_json import BadJSON, loads
from rageval_core.errors import SourceError
from rageval_core.importers.common import (
    Fields,
    Imported,
    declare,
    load_json,
    metric_name,
    slug,
)
from rageval_core.models import JudgeRef

PINNED = {
    "faithfulness": "faithfulness",
    "answer_correctness": "answer_correctness",
    "answer_relevancy": "answer_relevancy",
    "contextual_relevancy": "context_relevance",
    "contextual_recall": "context_recall",
    "contextual_precision": "context_precision",
}
"""The slug of a DeepEval metric's name -> the rageval column its score fills (docs/import.md
says where the meanings differ); only the score: verdict lists stay NULL."""
# DeepEval's faithfulness verdicts: `no` means the context contradicts the claim, `idk`
# that it does not say.
VERDICTS = {"yes": "supported", "no": "contradicted", "idk": "unsupported"}


def _claims(logs: str | None) -> list[dict[str, Any]] | None:
    """The claims and verdicts FaithfulnessMetric writes into its `verboseLogs`
    (`Truths … \n \nClaims:\n[...] \n \nVerdicts:\n[...]`), as rageval claims; None when
    the logs are absent or not in that shape (then no claim is made up)."""
    if not logs:
        return None
    try:
        rest = logs.split(" \n \nClaims:\n", 1)[1]
        claims_text, verdicts_text = rest.split(" \n \nVerdicts:\n", 1)
        claims, verdicts = loads(claims_text), loads(verdicts_text)
    except (IndexError, BadJSON):
        return None
    if not (isinstance(claims, list) and isinstance(verdicts, list)) or len(claims) != len(
        verdicts
    ):
        return None
    out = []
    for text, v in zip(claims, verdicts, strict=True):
        if not isinstance(text, str) or not isinstance(v, dict):
            return None
        verdict = VERDICTS.get(str(v.get("verdict")).strip().lower())
        if verdict is None:
            return None  # an unknown verdict is never read as supported
        reason = v.get("reason")
        out.append({"text": text, "verdict": verdict, "reason": str(reason or "")})
    return out


def _case(c: Fields, labels: dict[str, str], models: set[str]) -> dict[str, Any]:
    meta = c.obj("metadata") or c.obj("additionalMetadata")
    scores: dict[str, float | None] = {}
    pinned: dict[str, float | None] = {}
    judge_cost, errors = None, []
    claims: list[dict[str, Any]] = []
    for j, raw in enumerate(c.items("metricsData")):
        m = Fields(raw, c.source, c.path(f"metricsData[{j}]"))
        label = m.text("name", required=True)
        score = m.number("score")
        if slug(label) in PINNED:
            pinned[PINNED[slug(label)]] = score
            if slug(label) == "answer_relevancy":  # a question-level reason: it fits
                pinned["answer_relevancy_reason"] = m.text("reason")
            found = _claims(m.text("verboseLogs")) if slug(label) == "faithfulness" else None
            if found is not None:
                claims = found
                if not found:  # no claims (a refusal): NULL, not DeepEval's 1.0 (docs/metrics.md)
                    pinned["faithfulness"] = None
        else:
            name = metric_name(label, "deepeval")
            labels[name] = label
            scores[name] = score
        cost = m.number("evaluationCost")
        if cost is not None:
            judge_cost = (judge_cost or 0.0) + cost
        if m.text("error"):
            errors.append(f"{label}: {m.text('error')}")
        if m.text("evaluationModel"):
            models.add(m.text("evaluationModel"))
    seconds = c.number("completionTime")  # the harness's; runDuration is the metrics' own
    retrieved_texts = c.texts("retrievalContext")
    ids = meta.texts("retrieved_ids") if meta else None
    retrieved = None
    if retrieved_texts is not None:
        if ids is not None and len(ids) != len(retrieved_texts):
            raise SourceError(
                f"{c.source}: {c.path('additionalMetadata.retrieved_ids')} has {len(ids)} ids "
                f"for {len(retrieved_texts)} retrieval contexts"
            )
        retrieved = [
            {"text": t, **({"id": ids[i]} if ids else {})} for i, t in enumerate(retrieved_texts)
        ]
    qid = meta.text("question_id") if meta else None
    return {
        "question_id": qid or c.text("name"),
        "question": c.text("input"),
        "answer": c.text("actualOutput"),
        "reference": c.text("expectedOutput"),
        "retrieved": retrieved,
        "tags": c.texts("tags"),
        "total_ms": None if seconds is None else seconds * 1000,
        "cost_usd": c.number("tokenCost"),
        "input_tokens": c.number("inputTokenCount"),
        "output_tokens": c.number("outputTokenCount"),
        "judge_cost_usd": judge_cost,
        "judge_error": "; ".join(errors) or None,
        "scores": scores,
        "claims": claims,
        **pinned,
    }


def read(path: Path) -> Imported:
    source = str(path)
    top = Fields(load_json(path), source, "")
    run = top.obj("testRunData") or top
    if run.raw("testCases") is None:
        raise SourceError(f"{source}: testRunData.testCases is missing: not a DeepEval test run")
    labels: dict[str, str] = {}
    models: set[str] = set()
    records = [
        _case(Fields(raw, source, run.path(f"testCases[{i}]")), labels, models)
        for i, raw in enumerate(run.items("testCases"))
    ]
    all_scores = [r["scores"] for r in records]
    for r in records:
        r["scores"] = {n: r["scores"].get(n) for n in labels}
    model = ", ".join(sorted(models)) or None
    return Imported(
        records=records,
        metrics=declare(labels, all_scores),
        config={
            "pipeline": {"test_file": run.raw("testFile")},
            "identifier": run.raw("identifier"),
        },
        judge=JudgeRef(kind="deepeval", model=model),
        name=run.text("identifier") or None,
    )
