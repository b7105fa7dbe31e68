"""`rageval dataset generate` offline: generation and verification time for about
`--mb` MB of real documents (docs/generate.md).

    .venv/bin/python bench/generate_bench.py [--mb 1.0] [--n 1000] [--repeat 2]

The documents are the Python standard library's own documentation — each importable
module's docstring and those of the public members it defines — collected in module
order until `--mb` MB: real prose nobody on the project wrote, the same on every machine
with the same Python. The templated generator makes `--n` candidates; every one is then
checked (quotes, support, specificity, near-duplicates). Prints the best of `--repeat`
for each step, the candidates accepted and rejected, the near-duplicate comparisons made
against the n(n-1)/2 of comparing every pair, and coverage. Nothing is written.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import pkgutil
import sys
import warnings

from rageval_core.candidates import generate
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    documents = stdlib_documents(args.mb)
    chars = sum(len(d.text) for d in documents)
    print(f"{len(documents)} documents, {chars / 1e6:.2f} MB (Python {sys.version.split()[0]})")
    best = None
    for _ in range(args.repeat):
        made = generate(documents, args.n)
        s = made.report["seconds"]
        if best is None or s["generation"] + s["verification"] < sum(best["seconds"].values()):
            best = made.report
    r = best
    n = r["candidates"]
    print(f"generation   {r['seconds']['generation']:8.3f} s  ({n} candidates)")
    print(
        f"verification {r['seconds']['verification']:8.3f} s  "
        f"({r['accepted_by_checks']} accepted, {r['rejected']} rejected: {r['failed_checks']})"
    )
    print(
        f"near-duplicate comparisons {r['near_duplicate_comparisons']} "
        f"(every pair would be {n * (n - 1) // 2})"
    )
    c = r["coverage"]
    print(
        f"coverage: {c['documents_covered']} of {c['documents']} documents, "
        f"{c['sections_covered']} of {c['sections']} sections"
    )


if __name__ == "__main__":
    main()
