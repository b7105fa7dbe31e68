"""Human labels of claims and answers (docs/review.md): the label, where labels live, and how
far two raters agree. The dashboard writes them; `query/_review.py` compares them with the
judges' verdicts; `rageval calibrate` and `rageval labels export` read them."""

from rageval_core.labels.agreement import Agreement, agreement, cohen_kappa, reviewer_agreement
from rageval_core.labels.model import (
    QUESTION_LABELS,
    HumanLabel,
    check_reviewer,
    claim_key,
    utc_stamp,
)
from rageval_core.labels.store import LabelSet, LabelStore
from rageval_core.models import VERDICTS
from rageval_core.runs.layout import LABELS_ENV, READ_ONLY_ENV, labels_location, read_only_env

__all__ = [
    "LABELS_ENV",
    "QUESTION_LABELS",
    "READ_ONLY_ENV",
    "VERDICTS",
    "Agreement",
    "HumanLabel",
    "LabelSet",
    "LabelStore",
    "agreement",
    "check_reviewer",
    "claim_key",
    "cohen_kappa",
    "reviewer_agreement",
    "labels_location",
    "read_only_env",
    "utc_stamp",
]
