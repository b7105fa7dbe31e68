"""`rageval dataset generate` offline: generation and verification time for about
`--mb` MB of real documents (docs/generate.md).

    .venv/bin/python bench/generate_bench.py [--mb 1.0] [--n 1000] [--repeat 2]

The documents are the Python standard library's own documentation — each importable
module's docstring and those of the public members it defines — collected in module
order until `--mb` MB: real prose nobody on the project wrote, the same on every machine
with the same Python. The templated generator makes `--n` candidates; every one is then
checked (quotes, support, specificity, near-duplicates), as `generate` does. Each step is
timed by bench/timing.py's `timed`; prints the fastest of `--repeat` (wall and CPU), the
candidates accepted and rejected, the near-duplicate comparisons made against the n(n-1)/2
of comparing every pair, and coverage. Nothing is written.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import pkgutil
import sys
import warnings
from collections import Counter
from collections.abc import Sequence

from timing import Timed, timed  # bench/timing.py: run as a script, bench/ is on the path

from rageval_core.candidates import ACCEPTED, Candidate, templated
from rageval_core.candidates.checks import Vocabulary, verify
from rageval_core.candidates.coverage import coverage
from rageval_core.candidates.similarity import NearIndex
from rageval_core.models import Document

SKIP = ("antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "lib2to3")


def _names() -> list[str]:
    """Public standard-library modules and their packages' public submodules, by name."""
    names = []
    for name in sorted(sys.stdlib_module_names):
        if name.startswith("_") or name in SKIP:
            continue
        names.append(name)
        spec = importlib.util.find_spec(name)
        for sub in pkgutil.iter_modules(spec.submodule_search_locations or []) if spec else ():
            if not sub.name.startswith("_") and sub.name not in ("test", "tests", "__main__"):
                names.append(f"{name}.{sub.name}")
    return names


def stdlib_documents(mb: float) -> tuple[Document, ...]:
    """Documentation of standard-library modules, in name order, up to `mb` MB."""
    docs, size, limit = [], 0, int(mb * 1_000_000)
    for name in _names():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module this build lacks (or cannot run) is skipped
            continue
        parts = [inspect.getdoc(module) or ""]
        for attr, member in sorted(vars(module).items()):
            owner = getattr(member, "__module__", "") or ""
            if not attr.startswith("_") and owner.startswith(name):
                doc = inspect.getdoc(member)
                if doc:
                    parts.append(f"{attr}\n\n{doc}")
        text = "\n\n".join(p for p in parts if p).strip()
        if len(text) < 200:
            continue
        docs.append(Document(id=f"stdlib-{name}", text=text, title=name))
        size += len(text)
        if size >= limit:
            break
    return tuple(docs)


def _verify(
    candidates: Sequence[Candidate], documents: Sequence[Document]
) -> tuple[list[Candidate], NearIndex]:
    """Verification as `generate` runs it offline: the documents' words read, then every
    candidate checked."""
    return verify(candidates, documents, Vocabulary.of(documents))


def _fastest(runs: list[Timed]) -> Timed:
    return min(runs, key=lambda t: t.ms)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    documents = stdlib_documents(args.mb)
    chars = sum(len(d.text) for d in documents)
    print(f"{len(documents)} documents, {chars / 1e6:.2f} MB (Python {sys.version.split()[0]})")
    repeat = max(1, args.repeat)
    made = _fastest([timed(lambda: templated.generate(documents, args.n)) for _ in range(repeat)])
    checked = _fastest([timed(lambda: _verify(made.value, documents)) for _ in range(repeat)])
    candidates, index = checked.value
    n = len(candidates)
    accepted = sum(c.status == ACCEPTED for c in candidates)
    failed = Counter(ch.name for c in candidates for ch in c.checks if not ch.passed)
    print(f"generation   {made.ms:10,.0f} ms wall {made.cpu_ms:10,.0f} ms CPU  ({n} candidates)")
    print(
        f"verification {checked.ms:10,.0f} ms wall {checked.cpu_ms:10,.0f} ms CPU  "
        f"({accepted} accepted, {n - accepted} rejected: {dict(sorted(failed.items()))})"
    )
    print(f"near-duplicate comparisons {index.compared} (every pair would be {n * (n - 1) // 2})")
    c = coverage(candidates, documents).to_json()
    print(
        f"coverage: {c['documents_covered']} of {c['documents']} documents, "
        f"{c['sections_covered']} of {c['sections']} sections"
    )


if __name__ == "__main__":
    main()
