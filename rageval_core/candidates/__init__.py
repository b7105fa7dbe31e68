"""Candidate golden questions (docs/generate.md): generated from documents, offline by
templates or by an LLM through the judge's client, then checked automatically, each
check keeping why. `rageval dataset generate` is its command.

Its modules hold one idea each: the values (`model.py`), where a quote stands
(`quotes.py`), the documents read and cut into sections (`documents.py`), the templated
generator (`templated.py`), the LLM generator (`llm.py`) and its one door into the
judge's HTTP client (`chat.py`), near-duplicates (`similarity.py`), the checks
(`checks.py`), coverage (`coverage.py`), one generation end to end (`generation.py`),
the files written (`files.py`), reviewers' decisions in the labels location
(`decisions.py`) and the accepted ones written as a dataset's next version
(`accepting.py`, `rageval dataset accept`), the review batch of questions a refresh
left stale (`stale.py`), and the batches the dashboard's Candidates page lists
(`batches.py`). Nothing here writes outside the folder (or
labels location) it is given. The generators are imported from `generation.py`, not
here: the dashboard reads batches and decisions, and importing the generators with
them cost its first page about 50 ms.
"""

from rageval_core.candidates.files import read_candidates, write_outputs
from rageval_core.candidates.model import ACCEPTED, REJECTED, Candidate, Check, Quote, Source

__all__ = [
    "ACCEPTED",
    "REJECTED",
    "Candidate",
    "Check",
    "Quote",
    "Source",
    "read_candidates",
    "write_outputs",
]
