"""Metrics a run declares in its manifest (`metrics:`, docs/metrics.md): validated before
any of them names a SQL column, and written back the way they are read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from rageval_core.catalogue.builtin import BUILTIN
from rageval_core.errors import ConfigError
from rageval_core.models import DeclaredMetric

DECLARED_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
UNITS: tuple[str, ...] = ("unit", "ms", "usd", "count", "number")


def parse_declared(raw: object, source: str) -> tuple[DeclaredMetric, ...]:
    """Validate a manifest's `metrics:` mapping; ConfigError naming `source` and the entry.

    A name must match `^[a-z][a-z0-9_]{0,63}$` (it becomes a quoted SQL identifier, so it
    is checked here and never taken as SQL text) and must not shadow a built-in measure or
    figure.
    """
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: metrics must be a mapping of name -> {{label, direction}}")
    out = []
    for name, spec in raw.items():
        where = f"{source}: metrics.{str(name)[:64]!r}"
        if not isinstance(name, str) or not DECLARED_NAME_RE.fullmatch(name):
            raise ConfigError(f"{where}: a name is lowercase letters, digits and _ (<= 64)")
        if BUILTIN.metric(name) is not None or name.endswith("_p10"):
            raise ConfigError(f"{where}: shadows a built-in figure; choose another name")
        spec = {} if spec is None else spec
        if not isinstance(spec, Mapping):
            raise ConfigError(f"{where}: expected a mapping with label, direction, range")
        out.append(_declared(name, spec, where))
    return tuple(out)


def declared_to_spec(d: DeclaredMetric) -> dict[str, Any]:
    """The `metrics:` entry `parse_declared` reads back as `d` (manifests store this)."""
    rng: Any = d.unit
    if d.range is not None and d.unit == "number":
        rng = list(d.range)
    return {"label": d.label, "direction": d.direction, "range": rng}


def _declared(name: str, spec: Mapping[str, Any], where: str) -> DeclaredMetric:
    label = spec.get("label", name.replace("_", " "))
    if not isinstance(label, str) or not label.strip() or len(label) > 80:
        raise ConfigError(f"{where}: label must be text of at most 80 characters")
    direction = spec.get("direction", "higher")
    if direction not in ("higher", "lower"):
        raise ConfigError(f"{where}: direction must be 'higher' or 'lower'")
    rng = spec.get("range", "unit")
    if isinstance(rng, str):
        if rng not in UNITS:
            raise ConfigError(f"{where}: range must be one of {', '.join(UNITS)} or [low, high]")
        unit, bounds = rng, ((0.0, 1.0) if rng == "unit" else None)
    elif (
        isinstance(rng, list | tuple)
        and len(rng) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in rng)
        and all(math.isfinite(v) for v in rng)
        and rng[0] < rng[1]
    ):
        bounds = (float(rng[0]), float(rng[1]))
        unit = "unit" if bounds == (0.0, 1.0) else "number"
    else:
        raise ConfigError(f"{where}: range must be one of {', '.join(UNITS)} or [low, high]")
    return DeclaredMetric(name, label.strip(), direction, unit, bounds)
