"""rageval: evaluate RAG pipelines and explore what got worse, why, and where.

The library never imports streamlit; the dashboard stands on `rageval_core.query`.
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    # `rageval_core.evaluate` without importing the runner (and pandas) on every import.
    if name == "evaluate":
        from rageval_core.notebook import evaluate

        return evaluate
    raise AttributeError(f"module 'rageval_core' has no attribute {name!r}")
