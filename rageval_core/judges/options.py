"""Reading a judge's config mapping: typed values, defaults, and every problem at once.

A user who writes three bad keys should see three problems in one error, not fix them one
run at a time, so `Options` collects problems and `finish()` raises one ConfigError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rageval_core.errors import ConfigError, shown
from rageval_core.models import JUDGE_METRICS

_MISSING = object()


class Options:
    """Typed access to one `judge:` mapping; unknown keys are problems too."""

    def __init__(self, config: Mapping[str, Any], kind: str):
        self.kind = kind
        self._config = config
        self._seen = {"kind"}
        self.problems: list[str] = []

    def get(
        self,
        key: str,
        kind: type | tuple[type, ...],
        default: Any = _MISSING,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
    ) -> Any:
        """The value of `key` if it has type `kind` (and lies in range), else the default.

        Booleans are not accepted as numbers: `concurrency: true` is a mistake.
        """
        self._seen.add(key)
        if key not in self._config or self._config[key] is None:
            if default is _MISSING:
                self.problems.append(f"judge.{key} is required for kind {self.kind!r}")
                return None
            return default
        value = self._config[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        numeric = any(k in (int, float) for k in kinds)
        if (numeric and isinstance(value, bool) and bool not in kinds) or not isinstance(
            value, kinds
        ):
            names = " or ".join(k.__name__ for k in kinds)
            self.problems.append(
                f"judge.{key} must be {names}, got {type(value).__name__} {shown(value)}"
            )
            return None if default is _MISSING else default
        if minimum is not None and value < minimum:
            self.problems.append(f"judge.{key} must be >= {minimum}, got {shown(value)}")
        if maximum is not None and value > maximum:
            self.problems.append(f"judge.{key} must be <= {maximum}, got {shown(value)}")
        return float(value) if float in kinds and not isinstance(value, bool) else value

    def metrics(self) -> tuple[str, ...]:
        """The `metrics:` a judge is asked for (every one of `JUDGE_METRICS` by default),
        in the catalogue's order; an unknown or repeated name is a problem."""
        raw = self.get("metrics", list, None)
        if raw is None:
            return JUDGE_METRICS
        bad = [m for m in raw if m not in JUDGE_METRICS]
        if bad or not raw:
            self.problems.append(
                f"judge.metrics must list some of {', '.join(JUDGE_METRICS)}"
                + (f"; got {', '.join(shown(m) for m in bad[:3])}" if bad else "")
            )
            return JUDGE_METRICS
        return tuple(m for m in JUDGE_METRICS if m in raw)

    def finish(self) -> None:
        """Raise one ConfigError listing every problem, unknown keys included."""
        unknown = sorted(shown(k, bare=True) for k in self._config if k not in self._seen)
        problems = self.problems + [
            f"judge.{k} is not a setting of kind {self.kind!r}" for k in unknown
        ]
        if problems:
            raise ConfigError(f"invalid judge config (kind {self.kind!r})", problems)
