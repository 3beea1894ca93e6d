"""The bundled presets: small TOML files in ``hierviz/experiments/presets/`` (or your own ``.toml``).

Split from :mod:`hierviz.experiments.config` (no module over 700 lines); the names are
re-exported there.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path
from typing import Any

from hierviz._registry import nearest
from hierviz.experiments.parsing import ConfigError, flatten

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["PRESETS", "preset_names", "load_preset"]


def preset_names() -> list[str]:
    """The bundled presets (``hierviz/experiments/presets/*.toml``)."""
    folder = resources.files("hierviz.experiments") / "presets"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


#: Names of the bundled presets.
PRESETS = (
    "quick",
    "quick-ham10000",
    "medium",
    "full",
    "gpu",
    "paper01-gpu",
    "paper02-cpu",
    "paper02-gpu",
    "paper04-gpu",
)


def load_preset(name: str | Path) -> dict[str, Any]:
    """A preset's overrides as a flat ``{key: value}`` dict (a bundled name or a ``.toml`` path).

    Raises
    ------
    ConfigError
        Unknown name (nearest named), unreadable or invalid TOML (the file named).
    """
    text_name = str(name)
    if not text_name.strip():  # Path("") is the current folder: "" must not mean the defaults
        raise ConfigError(f"--preset: empty name; give a preset ({', '.join(preset_names())}) or a .toml path")
    if text_name.endswith(".toml") or Path(text_name).is_file():
        path = Path(text_name)
        if not path.is_file():
            raise ConfigError(f"--preset {text_name}: no such file")
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            raise ConfigError(f"--preset {text_name}: not UTF-8 text; save the preset as UTF-8 TOML") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"--preset {text_name}: invalid TOML ({exc})") from None
        return flatten(data)
    names = preset_names()
    if text_name not in names:
        close = nearest(text_name, names)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        raise ConfigError(f"--preset: unknown preset {text_name!r}; {hint}valid: {', '.join(names)} (or a .toml path)")
    text = (resources.files("hierviz.experiments") / "presets" / f"{text_name}.toml").read_text(encoding="utf-8")
    return flatten(tomllib.loads(text))
