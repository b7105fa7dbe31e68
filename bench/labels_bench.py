"""Time the Judge page's queries at scale: 1,000 runs × 1,000 questions (bench/synth.py)
with 50,000 human labels by 20 reviewers in 500 label files. Prints the claims cache build
(what `rageval dashboard` does before the server starts), first-view and warm times (ms)
of `judge_reports`, `run_coverage`, `reviewer_agreement` and `review_queue`, the rerun
after a save of one label (a file saved, the labels read again, the views; the file removed
after and the views shown the labels as generated, as the dashboard's next rerun does;
median of --repeat), the labels load, and the ratio against the naive query that unnests every run's
claims column on every view. Asserts nothing but that the naive and
the cached figures agree, and that the rerun after a save gives a full recompute's.

    python bench/labels_bench.py --out /tmp/labels-big        # generates, then times
    python bench/labels_bench.py --results /tmp/labels-big/results --labels /tmp/labels-big/labels
    ... --cache DIR   # reuse a derived cache (its build alone takes minutes at 1,000 runs)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from timing import median_ms, timed  # bench/timing.py: run as a script, bench/ is on the path

HERE = Path(__file__).resolve().parent
REVIEWERS = 20
PER_FILE = 100

# Every run's claims column unnested on every view, joined on the claim text (synthetic
# claims are lower-case words without punctuation, so their text is their claim_key).
NAIVE = """
WITH c AS (
  SELECT run_id, question_id, unnest(claims) AS c FROM read_parquet($paths)
)
SELECT r.judge_kind, l.value AS human, c.c.verdict AS judge, count(*) AS n
FROM c
JOIN runs r ON r.run_id = c.run_id
JOIN labels l ON l.dataset_sha256 = r.dataset_sha256 AND l.question_id = c.question_id
             AND l.claim_key = c.c.text
WHERE l.claim_key IS NOT NULL
GROUP BY ALL
"""


def make_labels(results: str, out: str, n: int, seed: int = 0) -> None:
    """`n` claim labels on claim texts the runs hold, in files of PER_FILE labels."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    from synth import Pools

    from rageval_core.labels import HumanLabel, LabelStore
    from rageval_core.runs.reading import list_runs

    info = list_runs(results)[0]
    ds = info.manifest.dataset
    questions = ds.n_questions
    pools = Pools(questions, seed)
    texts = pools.claims.to_pylist()
    rng = np.random.default_rng(seed)
    store = LabelStore(out)
    verdicts = rng.choice(["supported", "unsupported", "contradicted"], n, p=[0.6, 0.3, 0.1])
    qs = rng.integers(0, questions, n)
    cs = rng.integers(0, len(texts), n)
    for start in range(0, n, PER_FILE):
        who = f"reviewer-{(start // PER_FILE) % REVIEWERS:02d}@example.com"
        store.save(
            [
                HumanLabel(
                    dataset=ds.name,
                    dataset_sha256=ds.sha256,
                    question_id=f"q{qs[i]:05d}",
                    claim=texts[cs[i]],
                    verdict=str(verdicts[i]),
                    question_label=None,
                    reviewer=who,
                    created_at=f"2026-01-01T00:{i // 3600 % 60:02d}:{i % 60:02d}Z",
                )
                for i in range(start, min(start + PER_FILE, n))
            ]
        )


def _one_more(labels, claim: str):
    """A new reviewer's label on `claim`: what one save adds."""
    import dataclasses

    first = labels.labels[0]
    return dataclasses.replace(
        first, claim=claim, reviewer="late@example.com", created_at="2027-01-01T00:00:00Z"
    )


def bench(results: str, labels_dir: str, repeat: int, cache_dir: str | None = None) -> list[str]:
    import pyarrow as pa

    from rageval_core.labels import LabelStore, reviewer_agreement
    from rageval_core.query import (
        ClaimsCache,
        ResultsStore,
        judge_reports,
        label_pairs,
        review_queue,
        run_coverage,
    )
    from rageval_core.query import _label_join as labels_mod

    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)  # as it comes: the whole run takes minutes
        lines.append(line)

    label_store = LabelStore(labels_dir)
    t = timed(label_store.load)
    labels, ms = t.value, t.ms
    files = len(list(Path(labels_dir).rglob("*.jsonl")))
    say(
        f"labels: {len(labels.labels):,} newest of {files} files, first load {ms:,.0f} ms, "
        f"reload with no new file {median_ms(label_store.load, repeat):,.0f} ms"
    )
    with tempfile.TemporaryDirectory() as scratch:
        cache = cache_dir or scratch
        t = timed(lambda: ResultsStore(results, read_only=True, cache_dir=cache))
        store, ms = t.value, t.ms
        say(f"store refresh (derived cache build, every page pays it): {ms:,.0f} ms")
        runs = store.runs()
        newest = runs[-1].run_id
        t = timed(lambda: ClaimsCache(store).build())
        built, ms = t.value, t.ms
        say(
            f"claims cache build of {built:,} runs (rageval dashboard, before the server): "
            f"{ms:,.0f} ms (CPU {t.cpu_ms:,.0f} ms)"
        )

        t = timed(lambda: judge_reports(store, labels))
        reports, first, first_cpu = t.value, t.ms, t.cpu_ms
        warms = [timed(lambda: judge_reports(store, labels)) for _ in range(repeat)]
        warm = statistics.median(w.ms for w in warms)
        warm_cpu = statistics.median(w.cpu_ms for w in warms)
        claims = reports[0].claims
        say(
            f"judge_reports: first view {first:,.0f} ms (CPU {first_cpu:,.0f} ms; the claims "
            f"cache built, the labels' keys read from it), warm {warm:,.0f} ms "
            f"(CPU {warm_cpu:,.0f} ms); "
            f"n {claims.n:,} pairs, kappa "
            f"{claims.kappa:.3f} [{claims.kappa_low:.3f}, {claims.kappa_high:.3f}], "
            f"{len(reports[0].disagreements):,} disagreements"
        )
        restarted = ResultsStore(results, read_only=True, cache_dir=cache)
        labels_mod._joined.clear()  # a new process remembers no claims rows
        again = timed(lambda: judge_reports(restarted, labels)).ms
        say(f"judge_reports on a new store over the same cache files (a restart): {again:,.0f} ms")
        cov_first = timed(lambda: run_coverage(store, labels)).ms
        cov_warm = median_ms(lambda: run_coverage(store, labels), repeat)
        say(f"run_coverage (all runs): {cov_first:,.0f} ms, warm {cov_warm:,.0f} ms")
        for what, claim in (
            ("a claim labelled before", labels.labels[0].claim),
            ("a claim nobody labelled", "a claim nobody labelled"),
        ):

            def rerun():  # what the dashboard's next rerun does after a save: the labels
                after = label_store.load()  # read again (the new file only), then the views
                return judge_reports(store, after), run_coverage(store, after)

            walls, cpus = [], []
            for n in range(repeat):
                saved = label_store.save([_one_more(labels, claim)])
                try:
                    t = timed(rerun)
                    figures = t.value
                    walls.append(t.ms)
                    cpus.append(t.cpu_ms)
                    if n == 0:
                        labels_mod._joined.clear()  # a full recompute: nothing remembered
                        labels_mod._tallies.clear()
                        if figures != rerun():
                            raise SystemExit("the rerun after a save differs from a full recompute")
                finally:
                    Path(saved).unlink()  # the labels location stays as generated
                    rerun()  # and the store and the views hold it as such again (a rerun)
            say(
                f"rerun after a save of one label on {what} (labels load, judge_reports, "
                f"run_coverage), median of {repeat}: {statistics.median(walls):,.0f} ms "
                f"(CPU {statistics.median(cpus):,.0f} ms; CPU of each: "
                f"{', '.join(f'{c:,.0f}' for c in cpus)})"
            )
        rev = median_ms(lambda: reviewer_agreement(labels), repeat)
        say(f"reviewer_agreement: {rev:,.0f} ms")
        q = median_ms(lambda: review_queue(store, newest, labels, 40), repeat)
        say(f"review_queue (40 of one run): {q:,.0f} ms")

        paths = [p for r in runs for p in r.parquet_files]
        with store.cursor() as cur:
            cur.register("labels", labels.table)
            cur.register(
                "runs",
                pa.table(
                    {
                        "run_id": [r.run_id for r in runs],
                        "dataset_sha256": [r.manifest.dataset.sha256 for r in runs],
                        "judge_kind": [r.manifest.judge.kind for r in runs],
                    }
                ),
            )
            t = timed(lambda: cur.execute(NAIVE, {"paths": paths}).fetchall())
            rows, naive, naive_cpu = t.value, t.ms, t.cpu_ms
        total = sum(n for *_, n in rows)
        cached = sum(p.runs for p in label_pairs(store, labels) if p.label.claim is not None)
        if total != cached:
            raise SystemExit(f"naive query found {total:,} run-level pairs, the cache {cached:,}")
        say(
            f"naive (unnest every run's claims on each view): {naive:,.0f} ms (CPU "
            f"{naive_cpu:,.0f} ms), {total:,} run-level pairs (the same as the cache's); "
            f"wall {naive / first:.1f}× the first view, {naive / warm:.0f}× warm; CPU "
            f"{naive_cpu / first_cpu:.1f}× the first view, {naive_cpu / warm_cpu:.0f}× warm"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", help="generate results/ and labels/ here (skipped if present)")
    p.add_argument("--results")
    p.add_argument("--labels")
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--questions", type=int, default=1000)
    p.add_argument("--n-labels", type=int, default=50_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cache", help="derived cache folder to reuse (default: a new one)")
    a = p.parse_args(argv)
    if a.out:
        results, labels = f"{a.out}/results", f"{a.out}/labels"
        if not Path(results).exists():
            sys.path.insert(0, str(HERE))
            from synth import generate

            generate(results, a.runs, a.questions, progress=True)
        if not Path(labels).exists():
            make_labels(results, labels, a.n_labels)
    else:
        results, labels = a.results, a.labels
    bench(results, labels, a.repeat, a.cache)
    return 0


if __name__ == "__main__":
    sys.exit(main())
