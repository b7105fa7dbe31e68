"""rageval: evaluate RAG pipelines and explore what got worse, why, and where.

The library never imports streamlit; the dashboard stands on `rageval_core.query`.
"""

__version__ = "0.1.0"
