"""Synthetic results in the real on-disk format, fast enough for 1,000 runs × 1,000 questions.

Each run gets `manifest.json`, `questions.parquet` (the full row schema of
`runs.rows.question_schema()`, texts and lists included) and `summary.json`, all written
with the helpers of `rageval_core.runs`. Rows are built as Arrow arrays straight from
vectorised numpy (no per-row Python) and written in parallel processes (`--workers`): a
million rows take about 25 s on 2 cores, ten million about 4 minutes.
Metrics are internally consistent (recall/precision/hit/MRR/nDCG follow from the generated
ranks; failure types follow SPEC §5's precedence), so queries return meaningful figures.

    python bench/synth.py --runs 100 --questions 500 --out /tmp/results
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from rageval_core.catalogue import DEFAULT_KS
from rageval_core.models import DatasetRef, JudgeRef, RunManifest
from rageval_core.runs.atomic import write_parquet
from rageval_core.runs.layout import MANIFEST, SUMMARY, iso
from rageval_core.runs.manifest import manifest_to_dict
from rageval_core.runs.rows import CLAIM_TYPE, question_schema
from rageval_core.runs.source import bind
from rageval_core.runs.summary import (
    SUMMARY_SELECT,
    below_params,
    finish_summary,
    split_declared,
)
from rageval_core.thresholds import DEFAULT_THRESHOLDS

CONFIGS = ("bm25", "bm25-rerank", "dense", "hybrid", "hybrid-rerank")
N_RETRIEVED = 20
N_CHUNKS = 5000
WORDS = (
    "search hybrid index vector chunk rerank answer policy holiday refund invoice product "
    "code latency budget model prompt version embedding corpus handbook gold question"
).split()
START = datetime(2025, 1, 1, tzinfo=UTC)


def figure_log(path: str | None):
    """A bench's `log(line)`: to stderr as it comes, and appended to `path` when given, so
    a long measurement leaves its figures behind even when stopped halfway."""

    def log(line: str) -> None:
        print(line, file=sys.stderr)
        if path:
            with open(path, "a") as fh:
                fh.write(line + "\n")

    return log


def _pool(rng: np.random.Generator, n: int, words: int) -> pa.Array:
    picks = rng.integers(0, len(WORDS), size=(n, words))
    return pa.array([" ".join(WORDS[i] for i in row) for row in picks])


class Pools:
    """Strings built once and reused by index (Arrow `take`), so runs cost only numpy."""

    def __init__(self, n_questions: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.chunk_ids = pa.array([f"doc{i // 8}#{i % 8}" for i in range(N_CHUNKS)])
        self.chunk_texts = _pool(rng, 512, 9)
        self.questions = pa.array(
            [
                f"q{i:05d}: "
                + " ".join(WORDS[j % len(WORDS)] for j in range(i % 7, i % 7 + 8))
                + "?"
                for i in range(n_questions)
            ]
        )
        self.answers = _pool(rng, 256, 14)
        self.claims = _pool(rng, 256, 6)
        self.reasons = pa.array(
            [
                "supported by the evidence sentence",
                "no chunk mentions this",
                "contradicts the retrieved text",
            ]
        )
        self.tag_lists = [
            [],
            ["multi-hop"],
            ["user-vocabulary"],
            ["multi-hop", "numeric"],
            ["numeric"],
        ]
        self.qids = pa.array([f"q{i:05d}" for i in range(n_questions)])
        self.refs = _pool(rng, 128, 5)


def _list(offsets: np.ndarray, values: pa.Array) -> pa.Array:
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), values)


def run_table(
    run_id: str, n: int, pools: Pools, rng: np.random.Generator, skill: float
) -> pa.Table:
    """One run's rows; `skill` in [0, 1] shifts retrieval and generation quality."""
    qidx = np.arange(n)
    answerable = (qidx % 10) != 9  # every tenth question is unanswerable
    n_gold = np.where(answerable, 1 + qidx % 3, 0)
    # rank of each gold chunk (1-based) or 0 when not retrieved in the top 20
    raw = rng.geometric(0.12 + 0.35 * skill, size=(n, 3))
    ranks = np.where(raw <= N_RETRIEVED, raw, 0)
    ranks[np.arange(3)[None, :] >= n_gold[:, None]] = 0
    retrieved = rng.integers(0, N_CHUNKS, size=(n, N_RETRIEVED))
    gold_chunk = (qidx[:, None] * 3 + np.arange(3)[None, :] + 2500) % N_CHUNKS  # never random
    retrieved = np.where(retrieved >= 2500, retrieved - 2500, retrieved)
    hits = np.zeros((n, N_RETRIEVED), dtype=bool)
    for j in range(3):
        has = ranks[:, j] > 0
        rows, cols = np.nonzero(has)[0], ranks[has, j] - 1
        retrieved[rows, cols] = gold_chunk[has, j]
        hits[rows, cols] = True
    g = np.maximum(n_gold, 1).astype(float)
    cols: dict[str, pa.Array] = {}
    nan = np.where(answerable, 1.0, np.nan)
    for k in DEFAULT_KS:
        found = hits[:, :k].sum(axis=1)
        cols[f"recall_at_{k}"] = found / g * nan
        cols[f"precision_at_{k}"] = found / k * nan
        cols[f"hit_at_{k}"] = (found > 0).astype(float) * nan
    first = np.where(hits.any(axis=1), hits.argmax(axis=1) + 1, 0)
    cols["mrr"] = np.where(first > 0, 1.0 / np.maximum(first, 1), 0.0) * nan
    disc = 1.0 / np.log2(np.arange(2, 12))
    dcg = (hits[:, :10] * disc).sum(axis=1)
    idcg = np.array([disc[: min(int(c), 10)].sum() for c in range(4)])[n_gold]
    cols["ndcg_at_10"] = np.divide(dcg, idcg, out=np.zeros(n), where=idcg > 0) * nan

    refused = np.where(answerable, rng.random(n) < 0.03, rng.random(n) < 0.75 + 0.2 * skill)
    n_claims = np.where(refused, 0, rng.integers(1, 4, size=n))
    faith = np.clip(rng.beta(2 + 6 * skill, 1.5, size=n), 0, 1)
    # quantise to what a judge can say with n_claims claims
    supported = np.rint(faith * n_claims).astype(int)
    faithfulness = np.where(n_claims > 0, supported / np.maximum(n_claims, 1), np.nan)
    correctness = np.where(answerable, np.clip(rng.beta(2 + 5 * skill, 2, size=n), 0, 1), np.nan)
    error = rng.random(n) < 0.005
    failure = np.select(
        [
            error,
            ~answerable & ~refused,
            answerable & refused,
            answerable & (cols["recall_at_20"] == 0),
            answerable & (cols["recall_at_5"] == 0),
            (n_claims > 0) & (faithfulness < 0.8),
            answerable & (correctness < 0.5),
        ],
        # the conditions above, in SPEC order (synthetic rows are neither reference-free
        # nor judged by a failing judge)
        [
            "error",
            "missed_refusal",
            "false_refusal",
            "retrieval_miss",
            "ranking_miss",
            "unfaithful",
            "incorrect",
        ],
        "ok",
    )
    retrieval_ms = rng.lognormal(3.0 - 0.3 * skill, 0.4, size=n)
    generation_ms = rng.lognormal(6.0 + 0.4 * skill, 0.3, size=n)
    ttft_ms = generation_ms * rng.uniform(0.1, 0.3, size=n)
    in_tok = rng.integers(800, 3000, size=n)
    out_tok = rng.integers(20, 300, size=n)

    off20 = np.arange(0, (n + 1) * N_RETRIEVED, N_RETRIEVED)
    flat_ret = retrieved.ravel()
    gold_off = np.concatenate([[0], np.cumsum(n_gold)])
    gold_flat = gold_chunk[np.arange(3)[None, :] < n_gold[:, None]]
    rank_flat = ranks[np.arange(3)[None, :] < n_gold[:, None]]
    claim_off = np.concatenate([[0], np.cumsum(n_claims)])
    nc = int(claim_off[-1])
    claim_owner = np.repeat(qidx, n_claims)
    claim_pos = np.arange(nc) - claim_off[claim_owner]
    verdict_ok = claim_pos < supported[claim_owner]
    verdicts = pa.array(np.where(verdict_ok, "supported", "unsupported"))
    claim_text = pools.claims.take(pa.array(rng.integers(0, len(pools.claims), nc)))
    ev_chunk = pools.chunk_ids.take(pa.array(retrieved[claim_owner, 0]))
    claims = pa.StructArray.from_arrays(
        [
            claim_text,
            verdicts,
            pa.array(np.where(verdict_ok, ev_chunk.to_numpy(zero_copy_only=False), None)),
            pa.array(np.where(verdict_ok, claim_text.to_numpy(zero_copy_only=False), None)),
            pools.reasons.take(pa.array(np.where(verdict_ok, 0, 1))),
        ],
        fields=list(CLAIM_TYPE),
    )
    unsup_mask = ~verdict_ok
    unsup_off = np.concatenate([[0], np.cumsum(np.bincount(claim_owner[unsup_mask], minlength=n))])
    tag_pick = qidx % len(pools.tag_lists)
    tag_len = np.array([len(t) for t in pools.tag_lists])[tag_pick]
    tag_vals = pa.array([t for i in tag_pick for t in pools.tag_lists[i]], pa.string())
    data = {
        "run_id": pa.array([run_id] * n),
        "question_id": pools.qids.slice(0, n),
        "question": pools.questions.slice(0, n),
        "reference_answer": pa.array(
            np.where(
                answerable,
                pools.refs.take(pa.array(qidx % len(pools.refs))).to_numpy(zero_copy_only=False),
                None,
            )
        ),
        "answerable": pa.array(answerable),
        "tags": _list(np.concatenate([[0], np.cumsum(tag_len)]), tag_vals),
        "answer": pa.array(
            np.where(
                refused,
                "I don't know.",
                pools.answers.take(pa.array(rng.integers(0, len(pools.answers), n))).to_numpy(
                    zero_copy_only=False
                ),
            )
        ),
        "retrieved_ids": _list(off20, pools.chunk_ids.take(pa.array(flat_ret))),
        "retrieved_texts": _list(off20, pools.chunk_texts.take(pa.array(flat_ret % 512))),
        "retrieved_scores": _list(
            off20, pa.array(np.sort(rng.random((n, N_RETRIEVED)), axis=1)[:, ::-1].ravel())
        ),
        "gold_ids": _list(gold_off, pools.chunk_ids.take(pa.array(gold_flat))),
        "gold_ranks": _list(
            gold_off, pa.array(np.where(rank_flat > 0, rank_flat, None), pa.int32())
        ),
        **{k: pa.array(v, pa.float64(), from_pandas=True) for k, v in cols.items()},
        "faithfulness": pa.array(faithfulness, from_pandas=True),
        "claims": pa.ListArray.from_arrays(pa.array(claim_off.astype(np.int32)), claims),
        "unsupported_claims": _list(unsup_off, claim_text.filter(pa.array(unsup_mask))),
        "answer_correctness": pa.array(correctness, from_pandas=True),
        "refused": pa.array(refused),
        "failure_type": pa.array(failure),
        "retrieval_ms": pa.array(retrieval_ms),
        "generation_ms": pa.array(generation_ms),
        "ttft_ms": pa.array(ttft_ms),
        "total_ms": pa.array(retrieval_ms + generation_ms),
        "input_tokens": pa.array(in_tok),
        "output_tokens": pa.array(out_tok),
        "cost_usd": pa.array(in_tok * 0.00015 / 1000 + out_tok * 0.0006 / 1000),
        "judge_cost_usd": pa.array(np.zeros(n)),
        "error": pa.array(np.where(error, "RuntimeError: synthetic failure", None)),
        "judge_error": pa.nulls(n, pa.string()),
    }
    schema = question_schema()
    # columns these runs do not simulate (span placement and figures) are NULL, as in a
    # run of an id dataset
    data.update({f.name: pa.nulls(n, f.type) for f in schema if f.name not in data})
    return pa.table(data, schema=schema)


def run_manifest(i: int, n: int) -> RunManifest:
    """The manifest of run number `i` (`n` questions): its id, config, dataset and times."""
    config = CONFIGS[i % len(CONFIGS)]
    created = START + timedelta(hours=i)
    return RunManifest(
        run_id=f"{created:%Y%m%d-%H%M%S}-{config}",
        status="complete",
        created_at=iso(created),
        finished_at=iso(created + timedelta(minutes=3)),
        config={
            "name": config,
            "pipeline": {
                "factory": "synth:build",
                "params": {
                    "top_k": N_RETRIEVED,
                    "reranker": "rerank" in config,
                    "retriever": config.split("-")[0],
                    "prompt_version": 1 + i % 3,
                },
            },
        },
        dataset=DatasetRef("synth-qa", "1" if i < 10_000 else "2", "ab" * 32, n),
        judge=JudgeRef("offline", None, "1"),
        git_commit=f"{i:07x}",
        tags=("nightly",) if i % 4 else ("nightly", "release"),
    )


def summaries(con: duckdb.DuckDBPyConnection, rows: pa.Table) -> dict[str, dict]:
    """Each run's `summary.json` content from its rows in memory, by run id: the SELECT
    `summarize_run` runs over a run's file, grouped by run. One query per block of runs,
    because planning that SELECT costs more than a 1,000-question run's file."""
    sql = f"SELECT run_id, {SUMMARY_SELECT} FROM rows GROUP BY run_id"
    below = below_params(DEFAULT_THRESHOLDS)  # the synthetic configs set no thresholds
    cur = con.cursor()
    try:
        cur.register("rows", rows)
        rel = cur.execute(sql, bind(sql, below))
        names = [d[0] for d in rel.description][1:]
        return {
            run_id: split_declared(finish_summary(dict(zip(names, values, strict=True))), ())
            for run_id, *values in rel.fetchall()
        }
    finally:
        cur.close()


def _write_json(path: Path, value: dict) -> None:
    # what atomic_write_json writes, without its fsync: 20,000 of them at 10M rows
    path.write_text(json.dumps(value, indent=2, sort_keys=True, default=str) + "\n")


def write_runs(
    out: Path,
    numbers: range,
    n: int,
    pools: Pools,
    seed: int = 0,
    con: duckdb.DuckDBPyConnection | None = None,
) -> list[str]:
    """Write runs `numbers` (questions.parquet, summary.json, then manifest.json, last as
    a run writes it); return their ids. `con`: a connection to summarise on."""
    manifests, narrow = [], []
    for i in numbers:
        rng = np.random.default_rng(seed * 1_000_003 + i)
        manifest = run_manifest(i, n)
        skill = 0.3 + 0.1 * (i % len(CONFIGS)) + 0.2 * (i / max(i + 50, 1))
        table = run_table(manifest.run_id, n, pools, rng, skill)
        write_parquet(out / manifest.run_id / "questions.parquet", table)
        manifests.append(manifest)
        # the summary reads no list column: leave the texts behind
        narrow.append(
            table.select([f.name for f in table.schema if not pa.types.is_nested(f.type)])
        )
    own = con is None
    con = con or duckdb.connect()
    try:
        by_run = summaries(con, pa.concat_tables(narrow))
    finally:
        if own:
            con.close()
    for manifest in manifests:
        _write_json(out / manifest.run_id / SUMMARY, by_run[manifest.run_id])
        _write_json(out / manifest.run_id / MANIFEST, manifest_to_dict(manifest))
    return [m.run_id for m in manifests]


def _write_range(out: str, first: int, stop: int, questions: int, seed: int) -> list[str]:
    """Runs number `first` … `stop - 1` (one worker process's share)."""
    con = duckdb.connect()
    con.execute("SET threads = 1")  # one per worker process
    try:
        return write_runs(
            Path(out), range(first, stop), questions, Pools(questions, seed), seed, con
        )
    finally:
        con.close()


def generate(
    out: str | Path,
    runs: int,
    questions: int,
    *,
    start: int = 0,
    seed: int = 0,
    progress: bool = False,
    workers: int = 1,
) -> list[str]:
    """Write runs number `start` … `start + runs - 1` into `out`; return their ids.

    `workers` > 1 writes in that many processes, in blocks of 50 runs (every run is
    seeded by its number, so the files are the same whatever the number of workers).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    block = 50
    ranges = [(i, min(i + block, start + runs)) for i in range(start, start + runs, block)]
    ids: list[str] = []

    def report(done: int) -> None:
        if progress:
            print(f"  {done}/{runs} runs, {time.perf_counter() - t0:.1f} s", file=sys.stderr)

    if workers <= 1:
        for first, stop in ranges:
            ids += _write_range(str(out), first, stop, questions, seed)
            report(len(ids))
        return ids
    with ProcessPoolExecutor(workers) as pool:
        futures = [pool.submit(_write_range, str(out), a, b, questions, seed) for a, b in ranges]
        for f in futures:
            ids += f.result()
            report(len(ids))
    return ids


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--questions", type=int, default=500)
    p.add_argument("--out", required=True)
    p.add_argument("--start", type=int, default=0, help="number of the first run (to append)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="processes (default: cores)"
    )
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    generate(
        a.out, a.runs, a.questions, start=a.start, seed=a.seed, progress=True, workers=a.workers
    )
    print(
        f"wrote {a.runs} runs × {a.questions} questions to {a.out} "
        f"in {time.perf_counter() - t0:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
