"""Golden datasets (docs/datasets.md): load and validate, content hash, write, a new
version with the least change, id gold to spans.

The public face of the package; its modules hold one idea each (docs/architecture.md).
It never imports the dashboard and never writes outside the folder it is given. Importers
of other formats (SQuAD) live in `rageval_core/importers/`.
"""

from rageval_core.dataset.hashing import canonical_form, dataset_sha256
from rageval_core.dataset.load import example_dataset_path, load_dataset
from rageval_core.dataset.questions import answerability
from rageval_core.dataset.revising import write_revision
from rageval_core.dataset.spans import document_id, documents_from_chunks, to_spans, write_spans
from rageval_core.dataset.writing import DATASET_FILE, write_dataset
from rageval_core.models import QUESTION_ID_RE

__all__ = [
    "DATASET_FILE",
    "QUESTION_ID_RE",
    "answerability",
    "canonical_form",
    "dataset_sha256",
    "document_id",
    "documents_from_chunks",
    "example_dataset_path",
    "load_dataset",
    "to_spans",
    "write_dataset",
    "write_revision",
    "write_spans",
]
