"""Span metrics and chunk placement: what they cost (docs/metrics.md).

    .venv/bin/python bench/span_bench.py [--questions 1000] [--chunks 20] [--mb 1.5]
                                         [--placements 20000] [--repeat 2]

1. An offline `rageval run` of `--questions` questions × `--chunks` retrieved chunks over
   `--mb` MB of documents, twice: on an id dataset (the chunks are its corpus, gold chunk
   ids) and on the same content as documents + gold spans, where every chunk comes back as
   text only and is placed by rageval. The difference is what placement and span metrics
   add to a run (target: ≤ 10%). Best of `--repeat`.
2. `--placements` chunk texts (a quarter with their white space changed) placed in the
   documents through the index, against the naive way: `str.find` over every document.

Everything is written to a temporary folder; synthetic text, seeded.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

import yaml

from rageval_core.config import parse_config
from rageval_core.models import Document, RetrievedChunk
from rageval_core.placement import Placer
from rageval_core.runner import RunOptions, run

WORDS = (
    "cold chain pallet dock truck reefer sensor alarm probe vaccine dairy seafood frozen "
    "depot route driver shift handover audit excursion threshold carrier customer sla "
    "claim refund return label scan barcode temperature humidity door seal"
).split()

PIPELINE = """
import json, os

def build(plan):
    with open(plan, encoding="utf-8") as fh:
        answers = json.load(fh)

    def pipe(question):
        return answers[question]

    return pipe
"""


def documents(rng: random.Random, total_chars: int) -> list[Document]:
    docs, size, n = [], 0, 0
    while size < total_chars:
        sentences = []
        for _ in range(40):
            words = [rng.choice(WORDS) for _ in range(rng.randint(6, 16))]
            sentences.append(" ".join(words).capitalize() + f" {rng.randint(1, 9999)}.")
        text = " ".join(sentences)
        docs.append(Document(f"doc{n}", text))
        size, n = size + len(text), n + 1
    return docs


def write_inputs(folder: Path, args: argparse.Namespace) -> tuple[Path, Path, Path]:
    """The id dataset, the span dataset (one content) and the pipeline's answer plan."""
    rng = random.Random(7)
    docs = documents(rng, int(args.mb * 1_000_000))
    chunk_len = 300
    corpus, plan, id_questions, span_questions = [], {}, [], []
    pieces = [
        (d, i, min(i + chunk_len, len(d.text)))
        for d in docs
        for i in range(0, len(d.text) - 200, chunk_len)  # every piece > 120 characters
    ]
    for d, s, e in pieces:
        corpus.append({"id": f"{d.id}#{s}", "doc_id": d.id, "text": d.text[s:e]})
    for q in range(args.questions):
        picked = rng.sample(pieces, args.chunks)
        gold = picked[rng.randrange(3)]
        d, s, e = gold
        text = f"What is in question {q}?"
        plan[text] = {
            "answer": d.text[s : s + 80],
            "retrieved": [
                {"id": f"{p[0].id}#{p[1]}", "text": p[0].text[p[1] : p[2]]} for p in picked
            ],
            "retrieval_ms": 5.0,
            "generation_ms": 20.0,
        }
        id_questions.append(
            {
                "id": f"q{q}",
                "question": text,
                "reference_answer": "x",
                "gold_chunk_ids": [f"{d.id}#{s}"],
            }
        )
        span_questions.append(
            {
                "id": f"q{q}",
                "question": text,
                "reference_answer": "x",
                "gold_spans": [{"doc_id": d.id, "start": s + 20, "end": min(s + 120, e)}],
            }
        )
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    (folder / "documents.jsonl").write_text(
        "".join(json.dumps({"id": d.id, "text": d.text}) + "\n" for d in docs)
    )
    ids = folder / "ids.yaml"
    ids.write_text(
        yaml.safe_dump(
            {"name": "b", "version": "1", "corpus": "corpus.jsonl", "questions": id_questions}
        )
    )
    spans = folder / "spans.yaml"
    spans.write_text(
        yaml.safe_dump(
            {
                "name": "b",
                "version": "1",
                "documents": "documents.jsonl",
                "questions": span_questions,
            }
        )
    )
    (folder / "plan.json").write_text(json.dumps(plan))
    (folder / "span_bench_pipe.py").write_text(PIPELINE)
    return ids, spans, folder / "plan.json"


def timed_run(folder: Path, dataset: Path, plan: Path, label: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one offline run; CPU time, of every thread of this process,
    is the steadier figure on a shared machine."""
    config = parse_config(
        {
            "name": label,
            "dataset": str(dataset),
            "pipeline": {"factory": "span_bench_pipe:build", "params": {"plan": str(plan)}},
            "judge": {"kind": "offline"},
            "concurrency": 4,
        },
        folder / f"{label}.yaml",
    )
    start, cpu = time.perf_counter(), time.process_time()
    run(config, RunOptions(results=str(folder / "results"), run_id=label, progress=False))
    return time.perf_counter() - start, time.process_time() - cpu


def placements(args: argparse.Namespace) -> None:
    rng = random.Random(11)
    docs = documents(rng, int(args.mb * 1_000_000))
    chunks = []
    for n in range(args.placements):
        d = rng.choice(docs)
        s = rng.randrange(len(d.text) - 400)
        text = d.text[s : s + rng.randint(150, 400)]
        if n % 4 == 0:
            text = re.sub(" ", "  \n", text, count=3)  # white space changed by a splitter
        chunks.append(RetrievedChunk(f"c{n}", text))
    start, cpu = time.perf_counter(), time.process_time()
    placer = Placer(docs)
    built = time.perf_counter() - start
    placed = [placer.place(c) for c in chunks]
    indexed, indexed_cpu = time.perf_counter() - start, time.process_time() - cpu
    found = sum(p is not None for p in placed)
    sample = chunks[: max(1, args.placements // 20)]
    start = time.perf_counter()
    for c in sample:  # the naive way, exact text only: every document searched
        next((d for d in docs if d.text.find(c.text) >= 0), None)
    naive = (time.perf_counter() - start) * len(chunks) / len(sample)
    mb = sum(len(d.text) for d in docs) / 1e6
    print(
        f"placement: {args.placements:,} chunks in {mb:.2f} MB: {indexed:.2f} s "
        f"({indexed_cpu:.2f} s CPU) through the index, both indexes built included "
        f"(exact {built:.2f} s, {found:,} placed); naive str.find per document ≈ {naive:.1f} s "
        f"(from {len(sample):,}, exact matches only) → {naive / indexed:.0f}× faster"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--mb", type=float, default=1.5)
    parser.add_argument("--placements", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sys.path.insert(0, str(folder))
        ids, spans, plan = write_inputs(folder, args)
        times: dict[str, list[tuple[float, float]]] = {"ids": [], "spans": []}
        for r in range(args.repeat):
            times["ids"].append(timed_run(folder, ids, plan, f"ids-{r}"))
            times["spans"].append(timed_run(folder, spans, plan, f"spans-{r}"))
        for n, what in ((0, "wall"), (1, "CPU")):
            a = min(t[n] for t in times["ids"])
            b = min(t[n] for t in times["spans"])
            print(
                f"run ({what}): {args.questions:,} questions × {args.chunks} chunks, "
                f"{args.mb} MB of documents, offline judge: id dataset {a:.2f} s, span dataset "
                f"(placed by text, span metrics) {b:.2f} s → {(b / a - 1) * 100:+.1f}% "
                f"(best of {args.repeat})"
            )
    placements(args)


if __name__ == "__main__":
    main()
