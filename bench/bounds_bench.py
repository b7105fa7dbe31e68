"""Bounds of issue 35, measured: each case runs once in a child process of its own and
prints its seconds and the child's peak RSS (and the growth over the child's start).

- placement: `Placer` over 20 MB and 100 MB of generated documents, exact search only,
  then with the white-space-folded and squeezed searches built (a chunk that needs them);
- trace import: `otel.read` of one chain of 16,000 nested LLM spans, and of 1,000,000
  spans (10,000 traces of 100 spans, OTLP JSON lines written here);
- sizes: three 50 MB answers handed to a `RunWriter`, and a trace whose question span's
  `input.value` is 50 MB, imported.

    .venv/bin/python bench/bounds_bench.py [--cases placement,chain,spans,answers,input]

Everything is written to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]

MB = 1 << 20


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _documents(megabytes: int) -> list:
    from rageval_core.models import Document

    rng = random.Random(0)
    words = [
        "".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 9))) for _ in range(5000)
    ]
    docs, size, i = [], 0, 0
    while size < megabytes * MB:
        text = " ".join(rng.choice(words) for _ in range(17_000)).replace(" ", "  ", 3000)
        docs.append(Document(f"d{i}", text))
        size, i = size + len(text), i + 1
    return docs


def placement(megabytes: int, folded: bool) -> dict:
    from rageval_core.models import RetrievedChunk
    from rageval_core.placement import Placer

    docs = _documents(megabytes)
    size = sum(len(d.text) for d in docs)
    start = _rss_mb()
    t = time.perf_counter()
    p = Placer(docs)
    text = docs[len(docs) // 2].text[1000:1400]
    assert p.place(RetrievedChunk("c", text)) is not None
    if folded:  # not found exactly nor folded: all three searches built
        p.place(RetrievedChunk("c", text.replace("  ", " ") + " ~"))
    took = time.perf_counter() - t
    grown = _rss_mb() - start
    return {"seconds": took, "rss_mb": _rss_mb(), "grown_mb": grown, "x_text": grown * MB / size}


def _span(trace: str, i: int, parent: int | None, attrs: list) -> dict:
    return {
        "traceId": trace,
        "spanId": f"{i:016x}",
        **({} if parent is None else {"parentSpanId": f"{parent:016x}"}),
        "name": "llm" if parent is not None else "query",
        "startTimeUnixNano": str(1000 + i),
        "endTimeUnixNano": str(10**12 - i),
        "attributes": attrs,
    }


def _attr(key: str, value: str) -> dict:
    return {"key": key, "value": {"stringValue": value}}


def _question(trace: str, text: str) -> dict:
    return _span(trace, 0, None, [_attr("input.value", text), _attr("output.value", "It.")])


LLM = [_attr("openinference.span.kind", "LLM"), _attr("llm.model_name", "m")]


def _write(path: Path, requests) -> Path:
    with open(path, "w") as fh:
        for spans in requests:
            fh.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
    return path


def _read(path: Path) -> dict:
    from rageval_core.importers import otel

    start = _rss_mb()
    t = time.perf_counter()
    got = otel.read(path)
    took = time.perf_counter() - t
    size = path.stat().st_size
    grown = _rss_mb() - start
    return {
        "seconds": took,
        "rss_mb": _rss_mb(),
        "grown_mb": grown,
        "file_mb": size / MB,
        "x_file": grown * MB / size,
        "questions": len(got.records),
    }


def chain(root: Path, n: int = 16_000) -> dict:
    trace = "ab" * 16
    spans = [_question(trace, "What?")] + [_span(trace, i, i - 1, LLM) for i in range(1, n)]
    return _read(_write(root / "chain.jsonl", [spans]))


def spans(root: Path, traces: int = 10_000, per: int = 100) -> dict:
    def requests():
        for t in range(traces):
            trace = f"{t:032x}"
            yield [_question(trace, f"Question {t}?")] + [
                _span(trace, i, 0, LLM) for i in range(1, per)
            ]

    return _read(_write(root / "spans.jsonl", requests()))


def big_input(root: Path) -> dict:
    trace = "cd" * 16
    spans = [_question(trace, "x" * (50 * MB)), _span(trace, 1, 0, LLM)]
    path = _write(root / "input.jsonl", [spans])
    from rageval_core.importers import import_run

    start = _rss_mb()
    t = time.perf_counter()
    import_run("otel", path, results_dir=root / "r", run_id="big-input", log=lambda _: None)
    return {"seconds": time.perf_counter() - t, "rss_mb": _rss_mb(), "grown_mb": _rss_mb() - start}


def answers(root: Path) -> dict:
    from rageval_core.writer import RunWriter

    huge = "valley " * (50 * MB // 7)
    start = _rss_mb()
    t = time.perf_counter()
    with RunWriter("bench", results_dir=root / "w", run_id="answers", durable=False) as w:
        for i in range(3):
            w.add(
                f"q{i}",
                question=f"Question {i}?",
                answer=huge,
                retrieved=[{"id": "c", "text": huge}],
            )
    return {"seconds": time.perf_counter() - t, "rss_mb": _rss_mb(), "grown_mb": _rss_mb() - start}


def child(case: str, root: Path) -> dict:
    if case.startswith("placement"):
        _, mb, mode = case.split(":")
        return placement(int(mb), mode == "folded")
    return {"chain": chain, "spans": spans, "input": big_input, "answers": answers}[case](root)


CASES = {
    "placement": [f"placement:{mb}:{mode}" for mb in (20, 100) for mode in ("exact", "folded")],
    "chain": ["chain"],
    "spans": ["spans"],
    "answers": ["answers"],
    "input": ["input"],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, Path(args.root))))
        return
    for group in args.cases.split(","):
        for case in CASES[group]:
            with tempfile.TemporaryDirectory(prefix="rageval-bounds-") as d:
                out = subprocess.run(
                    [sys.executable, __file__, "--child", case, "--root", d],
                    capture_output=True,
                    text=True,
                )
                if out.returncode:
                    print(f"{case:24} failed: {out.stderr.strip().splitlines()[-1:]}")
                    continue
                got = json.loads(out.stdout.strip().splitlines()[-1])
                shown = ", ".join(
                    f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in got.items()
                )
                print(f"{case:24} {shown}", flush=True)


if __name__ == "__main__":
    main()
