"""Reading config values: ``ConfigError``, :func:`flatten` and the coercion of ``--set``/TOML/JSON values.

Split from :mod:`hierviz.experiments.config` (no module over 700 lines); every name
is re-exported there, the public import path.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from hierviz.methods import LOSS_HPARAMS

__all__ = ["ConfigError", "flatten"]


class ConfigError(ValueError):
    """A bad preset, key or value; the message names it and the fix."""

    __module__ = "hierviz.experiments.config"  # its public home (tracebacks, pickles, doctests)


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"train": {"epochs": 3}} -> {"train.epochs": 3}`` (the ``loss`` section and lists stay values).

    Examples
    --------
    >>> flatten({"seeds": 2, "train": {"epochs": 3}, "loss": {"tau": 0.1}})
    {'seeds': 2, 'train.epochs': 3, 'loss.tau': 0.1}
    """
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError):
        low = text.strip().lower()
        if low in ("none", "null"):
            return None
        return text


def _expect(where: str, what: str, value: Any) -> ConfigError:
    return ConfigError(f"{where}: expected {what}, got {value!r}")


def _is_integral(value: Any) -> bool:
    """An int, or a finite float with an integer value (``int(nan)``/``int(inf)`` raise without a key)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or (math.isfinite(value) and float(value).is_integer())


def _coerce(value: Any, default: Any, annotation: Any, where: str) -> Any:
    """Coerce ``value`` to the type of a field (given its annotation string and default)."""
    ann = str(annotation)
    optional = "None" in ann
    if value is None:
        if optional:
            return None
        raise _expect(where, f"a value ({ann.replace(' | None', '')})", value)
    if "bool" in ann:
        if isinstance(value, bool):
            return value
        raise _expect(where, "true or false", value)
    if "int" in ann and "float" not in ann:
        if not _is_integral(value):  # NaN, inf and 1e400 (inf in JSON/TOML) too, naming the key
            raise _expect(where, "an integer", value)
        return int(value)
    if "float" in ann and "str" in ann and isinstance(value, str):  # a number or a keyword ("auto")
        return value
    if "list[float]" in ann:
        if not isinstance(value, (list, tuple)) or any(
            isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) for v in value
        ):
            raise _expect(where, "a list of finite numbers, e.g. [0.1, 10]", value)
        return [float(v) for v in value]
    if "float" in ann:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _expect(where, "a finite number", value)
        return float(value)
    if "list" in ann:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise _expect(where, "a list of names (comma-separated)", value)
        return [str(v).strip().lower() for v in value]
    if "str" in ann:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str):
            raise _expect(where, "a string", value)
        return value
    return value


def _coerce_loss(name: str, value: Any, where: str) -> Any:
    default = LOSS_HPARAMS[name].default
    if value is None or default is None:
        return value
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise _expect(where, "true or false", value)
        return value
    if isinstance(default, int):
        if not _is_integral(value):
            raise _expect(where, "an integer", value)
        return int(value)
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _expect(where, "a finite number", value)
        return float(value)
    if isinstance(default, str) and not isinstance(value, str):
        raise _expect(where, "a string", value)
    return value
