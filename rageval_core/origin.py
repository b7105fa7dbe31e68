"""Where a run's rows came from: `rageval run`, the writer API, another tool's file, or
`rageval rescore` of another run.

Recorded in the manifest as `config.origin` (absent for `rageval run`), so every place that
already shows a run's config — Compare's config diff, the Runs table, `rageval compare` —
shows it too, and the derived cache needs no new column. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rageval_core.errors import shown

OriginKind = Literal["writer", "import", "rescore"]
NATIVE = "rageval run"


@dataclass(frozen=True)
class RunOrigin:
    """`kind` writer (a harness wrote it through `RunWriter`; `tool` names the harness),
    import (`tool` is ragas | deepeval | promptfoo | inspect, `file` the file's name as
    given, `sha256` its content hash, `tool_version` when the file records one) or rescore
    (`source_run` judged again by the judge `tool` names)."""

    kind: OriginKind
    tool: str
    file: str | None = None
    sha256: str | None = None
    tool_version: str | None = None
    source_run: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> RunOrigin | None:
        """The origin a manifest's config records; None for a native (or damaged) one."""
        raw = (config or {}).get("origin")
        if not isinstance(raw, Mapping) or raw.get("kind") not in ("writer", "import", "rescore"):
            return None
        fields = ("file", "sha256", "tool_version", "source_run")
        return cls(
            kind=raw["kind"],
            tool=str(raw.get("tool") or "?"),
            **{f: str(raw[f]) for f in fields if raw.get(f) is not None},
        )

    def label(self) -> str:
        """One short line for a table cell: `imported from ragas (scores.csv)`."""
        if self.kind == "import":
            where = f" ({self.file})" if self.file else ""
            return shown(f"imported from {self.tool}{where}", 120, bare=True)
        if self.kind == "rescore":
            return shown(f"rescore of {self.source_run or '?'} by {self.tool}", 120, bare=True)
        return shown(f"written by {self.tool} (writer)", 120, bare=True)


def origin_label(config_json: object) -> str:
    """The origin label of a run from its config as JSON text (the runs overview's
    `config` column, NULL or NaN for a run whose manifest is unreadable); `rageval run`
    when it records none."""
    try:
        config = json.loads(config_json) if isinstance(config_json, str) else None
    except (ValueError, RecursionError):
        config = None
    origin = RunOrigin.from_config(config if isinstance(config, Mapping) else None)
    return origin.label() if origin else NATIVE
