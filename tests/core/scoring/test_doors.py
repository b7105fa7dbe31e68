"""One question scores the same whichever door its row came through (scoring.py).

The same answers and chunks go through `rageval run` (the runner, via `evaluate`),
`RunWriter`, each importer (a file in that tool's format) and `rageval rescore`, on an id
dataset, a spans-only dataset and a dataset with both; the rows must be equal but for the
fields that name the door and the figures a tool does not carry.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

import rageval_core
from rageval_core.cli import main
from rageval_core.importers import import_run
from rageval_core.writer import RunWriter

C1 = "Glaciers carve U-shaped valleys over thousands of years."
C2 = "Rivers cut V-shaped valleys through softer rock layers."
C3 = "Mitochondria produce most of the energy a cell uses."
C4 = "Ribosomes assemble proteins from amino acid chains."
DOCS = {"geo": f"{C1} {C2}", "bio": f"{C3}\n\n{C4}"}
CHUNKS = {"c1": ("geo", C1), "c2": ("geo", C2), "c3": ("bio", C3), "c4": ("bio", C4)}
REFUSAL = "I don't know based on the provided documents."
# question id -> (question, gold chunk, answer, retrieved chunk ids)
ASKED = {
    "q1": ("How do glaciers shape valleys?", "c1", C1, ["c1", "c3"]),  # gold first: ok
    "q2": ("How do rivers shape valleys?", "c2", C2, ["c3", "c4"]),  # a retrieval miss
    "q3": ("What is the capital of Mars?", None, REFUSAL, ["c4"]),  # declined: ok
    "q4": ("Who named the ribosome?", None, "George Palade named it.", ["c4"]),  # missed
}
KINDS = ("ids", "spans", "both")
TIMES = {"retrieval_ms": 10.0, "generation_ms": 20.0, "ttft_ms": 5.0}
TOKENS = {"input_tokens": 120, "output_tokens": 12}

JUDGED = {
    "claims",
    "unsupported_claims",
    "faithfulness",
    "answer_correctness",
    "context_relevance",
    "context_precision",
    "context_relevance_chars",
    "context_precision_chars",
    "chunk_verdicts",
    "answer_relevancy",
    "answer_relevancy_reason",
    "context_recall",
    "recall_statements",
    "judge_cost_usd",
    "judge_error",
}
STAGES = {"retrieval_ms", "generation_ms", "ttft_ms"}
# Beside the run id, the judge's figures and cost (prices belong to a run config): what
# each door does not carry.
NOT_CARRIED = {
    "writer": set(),
    "ragas": STAGES | {"total_ms", "input_tokens", "output_tokens", "retrieved_scores"},
    "deepeval": STAGES | {"retrieved_scores"},
    "promptfoo": STAGES | {"retrieved_texts", "retrieved_scores"},
    "inspect": STAGES | {"retrieved_texts", "retrieved_scores"},
    "otel": {"ttft_ms"},
}


def score(cid: str) -> float:
    return 1.0 - int(cid[1:]) / 10


def write_dataset(root: Path, kind: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    data: dict = {"name": f"doors-{kind}", "version": "1", "questions": []}
    if kind != "ids":
        with open(root / "documents.jsonl", "w") as fh:
            for doc_id, text in DOCS.items():
                fh.write(json.dumps({"id": doc_id, "text": text}) + "\n")
        data["documents"] = "documents.jsonl"
    if kind != "spans":
        with open(root / "corpus.jsonl", "w") as fh:
            for cid, (doc_id, text) in CHUNKS.items():
                fh.write(json.dumps({"id": cid, "doc_id": doc_id, "text": text}) + "\n")
        data["corpus"] = "corpus.jsonl"
    for qid, (question, gold, answer, _) in ASKED.items():
        q: dict = {"id": qid, "question": question}
        if gold is None:
            q["answerable"] = False
        else:
            q["reference_answer"] = answer
            doc_id, text = CHUNKS[gold]
            start = DOCS[doc_id].index(text)
            if kind != "spans":
                q["gold_chunk_ids"] = [gold]
            if kind != "ids":
                q["gold_spans"] = [{"doc_id": doc_id, "start": start, "end": start + len(text)}]
        data["questions"].append(q)
    path = root / "dataset.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def chunks(qid: str) -> list[dict]:
    return [{"id": c, "text": CHUNKS[c][1], "score": score(c)} for c in ASKED[qid][3]]


def pipeline(question: str) -> dict:
    qid = next(q for q, asked in ASKED.items() if asked[0] == question)
    return {"answer": ASKED[qid][2], "retrieved": chunks(qid), **TIMES, **TOKENS}


# ---------------------------------------------------------------------------- tool files


def ragas_file(folder: Path) -> Path:
    path = folder / "scores.csv"
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["user_input", "retrieved_contexts", "retrieved_context_ids", "response"])
        for question, _, answer, ids in ASKED.values():
            out.writerow([question, repr([CHUNKS[c][1] for c in ids]), repr(ids), answer])
    return path


def deepeval_file(folder: Path) -> Path:
    cases = [
        {
            "name": qid,
            "input": question,
            "actualOutput": answer,
            "retrievalContext": [CHUNKS[c][1] for c in ids],
            "inputTokenCount": TOKENS["input_tokens"],
            "outputTokenCount": TOKENS["output_tokens"],
            "completionTime": 0.03,
            "success": True,
            "metricsData": [],
            "metadata": {"question_id": qid, "retrieved_ids": ids},
        }
        for qid, (question, _, answer, ids) in ASKED.items()
    ]
    path = folder / "latest_test_run.json"
    path.write_text(json.dumps({"testRunData": {"testCases": cases}}))
    return path


def promptfoo_file(folder: Path) -> Path:
    results = [
        {
            "id": f"r-{qid}",
            "latencyMs": 30,
            "provider": {"id": "echo", "label": ""},
            "response": {
                "output": answer,
                "tokenUsage": {
                    "prompt": TOKENS["input_tokens"],
                    "completion": TOKENS["output_tokens"],
                },
            },
            "success": True,
            "score": 1,
            "testCase": {"description": qid, "metadata": {"retrieved_ids": ids}},
            "vars": {"question_id": qid, "question": question},
            "failureReason": 0,
        }
        for qid, (question, _, answer, ids) in ASKED.items()
    ]
    path = folder / "results.json"
    path.write_text(json.dumps({"evalId": "e", "results": {"version": 3, "results": results}}))
    return path


def inspect_file(folder: Path) -> Path:
    samples = [
        {
            "id": qid,
            "epoch": 1,
            "input": question,
            "target": "",
            "output": {"completion": answer},
            "metadata": {"retrieved_ids": ids},
            "model_usage": {"m": dict(TOKENS)},
            "total_time": 0.03,
        }
        for qid, (question, _, answer, ids) in ASKED.items()
    ]
    log = {"version": 2, "status": "success", "eval": {"task": "doors"}, "samples": samples}
    path = folder / "log.json"
    path.write_text(json.dumps(log))
    return path


def _attrs(**values: object) -> list[dict]:
    def one(v: object) -> dict:
        return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": str(v)}

    return [{"key": k.replace("__", "."), "value": one(v)} for k, v in values.items()]


def otel_file(folder: Path) -> Path:
    """OTLP JSON with OpenInference attributes: a chain span over a retriever (10 ms)
    and an LLM (20 ms), one trace per question."""
    lines = []
    for n, (question, _, answer, ids) in enumerate(ASKED.values(), start=1):
        t0 = n * 10**9
        trace = f"{n:032x}"
        docs = {}
        for i, c in enumerate(ids):
            docs[f"retrieval__documents__{i}__document__id"] = c
            docs[f"retrieval__documents__{i}__document__content"] = CHUNKS[c][1]
            docs[f"retrieval__documents__{i}__document__score"] = str(score(c))
        spans = [
            {
                "traceId": trace,
                "spanId": f"{n:015x}a",
                "name": "query",
                "startTimeUnixNano": str(t0),
                "endTimeUnixNano": str(t0 + 30_000_000),
                "attributes": _attrs(
                    openinference__span__kind="CHAIN", input__value=question, output__value=answer
                ),
            },
            {
                "traceId": trace,
                "spanId": f"{n:015x}b",
                "parentSpanId": f"{n:015x}a",
                "name": "retrieve",
                "startTimeUnixNano": str(t0),
                "endTimeUnixNano": str(t0 + 10_000_000),
                "attributes": _attrs(openinference__span__kind="RETRIEVER", **docs),
            },
            {
                "traceId": trace,
                "spanId": f"{n:015x}c",
                "parentSpanId": f"{n:015x}a",
                "name": "llm",
                "startTimeUnixNano": str(t0 + 10_000_000),
                "endTimeUnixNano": str(t0 + 30_000_000),
                "attributes": _attrs(
                    openinference__span__kind="LLM",
                    llm__token_count__prompt=TOKENS["input_tokens"],
                    llm__token_count__completion=TOKENS["output_tokens"],
                ),
            },
        ]
        lines.append(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    path = folder / "traces.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


TOOL_FILES = {
    "ragas": ragas_file,
    "deepeval": deepeval_file,
    "promptfoo": promptfoo_file,
    "inspect": inspect_file,
    "otel": otel_file,
}

# ---------------------------------------------------------------------------- the doors


def rows(location: Path, run_id: str) -> dict[str, dict]:
    table = pq.read_table(location / run_id / "questions.parquet")
    return {r["question_id"]: r for r in table.to_pylist()}


def direct(results: Path, dataset: Path) -> dict[str, dict]:
    rageval_core.evaluate(
        pipeline, dataset, results=results, run_id="direct", concurrency=1, progress=False
    )
    return rows(results, "direct")


def written(results: Path, dataset: Path) -> dict[str, dict]:
    with RunWriter("doors", results_dir=results, dataset=dataset, run_id="writer") as run:
        for qid, (_, _, answer, _) in ASKED.items():
            run.add(qid, answer=answer, retrieved=chunks(qid), **TIMES, **TOKENS)
    return rows(results, "writer")


def same(got: dict[str, dict], want: dict[str, dict], ignored: set[str], door: str) -> None:
    assert set(got) == set(want), door
    for qid, row in want.items():
        for col, value in row.items():
            if col in ignored or col == "run_id":
                continue
            other = got[qid].get(col)
            if isinstance(value, float) and isinstance(other, float):
                assert other == pytest.approx(value), (door, qid, col)
            else:
                assert other == value, (door, qid, col, other, value)


@pytest.fixture(params=KINDS)
def scene(request, tmp_path):
    kind = request.param
    dataset = write_dataset(tmp_path / "data", kind)
    results = tmp_path / "results"
    return kind, dataset, results, direct(results, dataset)


def test_the_direct_run_scores_what_the_answers_say(scene):
    """The reference every door is held to: right on its own terms."""
    kind, _, _, want = scene
    assert {q: r["failure_type"] for q, r in want.items()} == {
        "q1": "ok",
        "q2": "retrieval_miss",
        "q3": "ok",
        "q4": "missed_refusal",
    }
    assert want["q1"]["recall_at_5"] == 1.0 and want["q2"]["recall_at_5"] == 0.0
    # the verdicts weighed by characters, so rescore below is held to them too
    assert 0 < want["q1"]["context_relevance_chars"] < 1
    assert want["q1"]["context_precision_chars"] == 1.0  # the relevant chunk ranked first
    if kind != "ids":
        assert want["q1"]["span_recall_at_5"] == 1.0 and want["q1"]["n_unplaced"] == 0


def test_the_writer_scores_as_the_runner_does(scene):
    kind, dataset, results, want = scene
    same(written(results, dataset), want, JUDGED | {"cost_usd"}, "writer")


@pytest.mark.parametrize("tool", list(TOOL_FILES))
def test_each_importer_scores_as_the_runner_does(scene, tool, tmp_path):
    kind, dataset, results, want = scene
    path = TOOL_FILES[tool](tmp_path)
    import_run(tool, path, results_dir=results, run_id=tool, dataset=dataset)
    got = rows(results, tool)
    ignored = JUDGED | {"cost_usd"} | NOT_CARRIED[tool]
    if kind == "spans" and tool in ("promptfoo", "inspect"):
        # Ids alone, no text, no corpus to look them up in: where the chunks are is not
        # known, so the retrieval figures are NULL and never a miss.
        for row in got.values():
            assert row["recall_at_5"] is None and row["span_recall_at_5"] is None
            assert row["n_unplaced"] == len(row["retrieved_ids"])
        assert got["q2"]["failure_type"] == "ok"
        got = {q: {**r, "failure_type": want[q]["failure_type"]} for q, r in got.items()}
        ignored |= {c for c in want["q1"] if "_at_" in c or c in ("mrr", "gold_ranks")}
        ignored |= {"retrieved_doc_ids", "retrieved_starts", "retrieved_ends", "n_unplaced"}
    same(got, want, ignored, tool)


def test_a_written_run_rescored_by_the_offline_judge_is_the_direct_run(scene, tmp_path):
    kind, dataset, results, want = scene
    written(results, dataset)
    judge = tmp_path / "judge.yaml"
    judge.write_text("kind: offline\n")
    code = main(
        ["rescore", "writer", "--judge", str(judge), "--results", str(results)]
        + ["--run-id", "rescored", "--no-progress"]
    )
    assert code == 0
    same(rows(results, "rescored"), want, {"cost_usd"}, "rescore")
