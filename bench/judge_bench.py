"""Throughput of the offline judge on 10,000 synthetic but realistic questions.

    .venv/bin/python bench/judge_bench.py [--questions N] [--threshold T]

Realistic means: a corpus of 2,000 five-sentence chunks with numbers and names, five
retrieved chunks per question (drawn so chunks repeat across questions, as in a real run),
and three-sentence answers mixing copied, paraphrased, altered-number and invented
sentences. Prints questions/second and the verdict mix. Runs on one thread: the judge is
CPU-bound Python, so threads would not add throughput.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter

from rageval_core.judges.offline import OfflineJudge
from rageval_core.judges.text import chunk_tokens, sentence_terms
from rageval_core.models import JUDGE_METRICS, JudgeInput, Judgement, RetrievedChunk

WORDS = (
    "index query vector chunk embedding rerank latency budget cluster shard replica cache "
    "token window prompt context answer source policy contract invoice refund customer "
    "account region server backup storage network release feature ticket support"
).split()
VERBS = "uses stores returns reduces increases requires supports limits replaces".split()
NAMES = "Acme Berlin Oslo Lisbon Kafka Postgres Redis Nova Orion Atlas".split()


def sentence(rng: random.Random) -> str:
    a, b, c = rng.sample(WORDS, 3)
    return (
        f"The {a} {rng.choice(VERBS)} {rng.randint(2, 900)} {b}s in {rng.choice(NAMES)} "
        f"for each {c}."
    )


def make_inputs(n: int, seed: int = 7) -> list[JudgeInput]:
    rng = random.Random(seed)
    corpus = [
        RetrievedChunk(f"doc{i // 4}#{i % 4}", " ".join(sentence(rng) for _ in range(5)))
        for i in range(2000)
    ]
    inputs = []
    for _ in range(n):
        retrieved = tuple(rng.sample(corpus, 5))
        source = rng.choice(retrieved).text.split(". ")
        parts = [
            source[0].rstrip(".") + ".",  # copied: supported
            source[1].replace("The ", "A ", 1).rstrip(".") + ", and it is fast.",  # clauses
            sentence(rng),  # invented: unsupported, or contradicted by a number
        ]
        asked = " ".join(w for w in source[0].rstrip(".").split()[1:] if not w.isdigit())
        inputs.append(JudgeInput(f"How many {asked}?", " ".join(parts), retrieved, source[0]))
    return inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--threshold", type=float, default=0.6)
    args = parser.parse_args()
    inputs = make_inputs(args.questions)
    rates = {}
    for label, metrics in (("claims only", ("faithfulness",)), ("all metrics", JUDGE_METRICS)):
        elapsed, results = timed(OfflineJudge(args.threshold, metrics), inputs)
        rates[label] = len(inputs) / elapsed
        print(f"{label}: {len(inputs)} questions in {elapsed:.2f} s: {rates[label]:,.0f} q/s")
    verdicts = Counter(c.verdict for r in results for c in r.claims)
    print(f"all metrics / claims only: {rates['all metrics'] / rates['claims only']:.2f}x")
    print(f"claims: {sum(verdicts.values())} " + " ".join(f"{k}={v}" for k, v in verdicts.items()))
    relevant = sum(v.relevant for r in results for v in r.chunk_verdicts or ())
    attributed = sum(s.attributed for r in results for s in r.statements or ())
    print(f"relevant chunks: {relevant}; attributed reference statements: {attributed}")


def timed(judge: OfflineJudge, inputs: list[JudgeInput]) -> tuple[float, list[Judgement]]:
    """Seconds to judge every input from cold chunk caches, as a fresh run would start."""
    sentence_terms.cache_clear()
    chunk_tokens.cache_clear()
    start = time.perf_counter()
    results = [judge.judge(inp) for inp in inputs]
    return time.perf_counter() - start, results


if __name__ == "__main__":
    main()
