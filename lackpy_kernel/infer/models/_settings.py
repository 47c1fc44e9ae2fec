"""Checks of a model provider's ``[inference.providers.<name>]`` settings: each raises ``ValueError``."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any


def check_settings(plugin: str, name: str, settings: Mapping[str, Any], known: Iterable[str]) -> None:
    """Raise ``ValueError`` for a non-mapping, an unknown key, or a ``plugin`` other than ``plugin``."""
    if not isinstance(settings, Mapping):
        raise ValueError(f"settings of the {plugin} provider {name!r} must be a table, "
                         f"got {type(settings).__name__}")
    known = sorted(known)
    unknown = sorted(str(key) for key in settings if key not in known)
    if unknown:
        raise ValueError(
            f"unknown setting{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} for the "
            f"{plugin} provider {name!r}; known settings: {', '.join(known)}"
        )
    if "plugin" in settings and settings["plugin"] != plugin:
        raise ValueError(f"provider {name!r}: plugin is {settings['plugin']!r}, expected {plugin!r}")


def optional_str(name: str, value: Any, *, allow_empty: bool = False) -> str | None:
    """``value`` when it is None or a string (non-empty unless ``allow_empty``), else ``ValueError``."""
    if value is None:
        return None
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


def optional_number(name: str, value: Any, *, minimum: float | None = None) -> float | None:
    """``value`` as a float when it is None or a number (not a bool) >= ``minimum``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum:g}, got {value!r}")
    return float(value)


def require_bool(name: str, value: Any) -> bool:
    """``value`` when it is a bool, else ``ValueError``."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value


def optional_int(name: str, value: Any, *, minimum: int | None = None) -> int | None:
    """``value`` when it is None or an integer (not a bool) >= ``minimum``, else ``ValueError``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return value


def string_list(name: str, value: Any) -> list[str]:
    """``value`` when it is a list of non-empty strings, else ``ValueError``."""
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ValueError(f"{name} must be a list of non-empty strings, got {value!r}")
    return list(value)
