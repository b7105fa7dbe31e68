"""Framework objects as pipelines (docs/pipeline.md): a factory (or `rageval_core.evaluate`) may
hand over a LlamaIndex query engine or retriever, a LangChain runnable or retriever, or a
Haystack pipeline instead of a callable, and rageval asks it the question itself.

    adapt(obj) -> the pipeline callable (question -> the docs/pipeline.md dict)
    ├── llamaindex.py   QueryEngine, BaseRetriever; stages and tokens from its instrumentation
    ├── langchain.py    Runnable (the "return sources" shapes), BaseRetriever; callbacks
    ├── haystack.py     Pipeline with a retriever (and a generator); its tracer
    └── common.py       the chunk dict, stage timing, the missing-output error

Detection reads only the names of the object's classes' modules, so rageval imports a
framework only when the object already came from it (`pip install rageval` without
extras imports none).
"""

from __future__ import annotations

import importlib
from typing import Any

# The top-level package a framework's classes live in -> the adapter module for it.
FRAMEWORKS = {"llama_index": "llamaindex", "langchain_core": "langchain", "haystack": "haystack"}


def framework_of(obj: Any) -> str | None:
    """The adapter module name for `obj`'s framework, or None for any other object."""
    for cls in type(obj).__mro__:
        adapter = FRAMEWORKS.get(cls.__module__.partition(".")[0])
        if adapter:
            return adapter
    return None


def adapt(obj: Any) -> Any:
    """`obj` as a pipeline callable when it is a framework object, else `obj` unchanged."""
    name = framework_of(obj)
    if name is None:
        return obj
    return importlib.import_module(f"{__name__}.{name}").adapt(obj)
