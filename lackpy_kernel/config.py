"""``.lackpy/config.toml``: inference order and providers, default kit, sandbox limits."""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lackpy_kernel.errors import ConfigError

CONFIG_DIR = ".lackpy"
CONFIG_FILE = "config.toml"
BUILTIN_TIERS = ("templates", "rules")

# section -> key -> accepted types
SCHEMA: dict[str, dict[str, tuple[type, ...]]] = {
    "inference": {"order": (list,), "record": (bool,), "providers": (dict,)},
    "kit": {"default": (str, list, dict)},
    "sandbox": {"enabled": (bool,), "timeout": (int, float), "memory_mb": (int,),
                "max_result_mb": (int,)},
    "tools": {"providers": (dict,)},
}
POSITIVE = {("sandbox", "timeout"), ("sandbox", "memory_mb"), ("sandbox", "max_result_mb")}


@dataclass
class LackpyConfig:
    """Settings from ``.lackpy/config.toml``, with defaults for what it leaves out."""

    inference_order: list[str] = field(default_factory=lambda: list(BUILTIN_TIERS))
    inference_providers: dict[str, dict[str, Any]] = field(default_factory=dict)
    kit_default: str | list[str] | dict[str, Any] = "debug"
    sandbox_enabled: bool = True
    sandbox_timeout: float = 120.0
    sandbox_memory_mb: int = 512
    sandbox_max_result_mb: int = 64
    inference_record: bool = False
    tool_providers: dict[str, Any] = field(default_factory=dict)


def config_path(workspace: str | os.PathLike[str] | None = None) -> Path:
    """Where the workspace's config file lives."""
    return Path(workspace or Path.cwd()) / CONFIG_DIR / CONFIG_FILE


def load_config(workspace: str | os.PathLike[str] | None = None) -> LackpyConfig:
    """Read ``<workspace>/.lackpy/config.toml``; defaults when there is none.

    Raises ConfigError, naming the file, the line and the key, for a file that
    is not TOML, an unknown section or key, or a value of the wrong type.
    """
    path = config_path(workspace)
    config = LackpyConfig()
    if not path.is_file():
        return config
    text = _read(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    _check(data, path, text)
    _apply(config, data)
    return config


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from None


def _check(data: dict[str, Any], path: Path, text: str) -> None:
    for section, values in data.items():
        if section not in SCHEMA:
            raise _error(path, text, section, f"unknown section [{section}]", SCHEMA)
        if not isinstance(values, dict):
            raise _error(path, text, section, f"'{section}' must be a [{section}] table")
        for key, value in values.items():
            expected = SCHEMA[section]
            if key not in expected:
                raise _error(path, text, key, f"unknown key '{key}' in [{section}]", expected)
            _check_value(path, text, section, key, value, expected[key])
    _check_order(path, text, data.get("inference", {}))


def _check_value(path, text, section, key, value, types) -> None:
    if isinstance(value, bool) and bool not in types:
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        wanted = " or ".join(_TYPE_NAMES[t] for t in types)
        raise _error(path, text, key, f"[{section}] {key} must be {wanted}, not {value!r}")
    if (section, key) in POSITIVE and value <= 0:
        raise _error(path, text, key, f"[{section}] {key} must be greater than 0, not {value!r}")


def _check_order(path: Path, text: str, inference: dict[str, Any]) -> None:
    providers = inference.get("providers", {})
    for name, settings in providers.items():
        if not isinstance(settings, dict):
            raise _error(path, text, name, f"[inference.providers.{name}] must be a table")
        if not isinstance(settings.get("plugin", name), str):
            raise _error(path, text, name, f"[inference.providers.{name}] plugin must be a string")
    for name in inference.get("order", []):
        if not isinstance(name, str):
            raise _error(path, text, "order", f"[inference] order must list names, not {name!r}")


def _apply(config: LackpyConfig, data: dict[str, Any]) -> None:
    inference = data.get("inference", {})
    order = [name for name in inference.get("order", []) if name not in BUILTIN_TIERS]
    config.inference_order = [*BUILTIN_TIERS, *order]
    config.inference_providers = {k: dict(v) for k, v in inference.get("providers", {}).items()}
    config.inference_record = inference.get("record", False)
    config.kit_default = data.get("kit", {}).get("default", config.kit_default)
    sandbox = data.get("sandbox", {})
    config.sandbox_enabled = sandbox.get("enabled", config.sandbox_enabled)
    config.sandbox_timeout = float(sandbox.get("timeout", config.sandbox_timeout))
    config.sandbox_memory_mb = sandbox.get("memory_mb", config.sandbox_memory_mb)
    config.sandbox_max_result_mb = sandbox.get("max_result_mb", config.sandbox_max_result_mb)
    config.tool_providers = data.get("tools", {}).get("providers", {})


_TYPE_NAMES = {list: "a list", bool: "true or false", str: "a string", dict: "a table",
               int: "an integer", float: "a number"}


def _error(path: Path, text: str, key: str, problem: str, known: Any = None) -> ConfigError:
    message = f"{path}"
    line = _line_of(text, key)
    if line:
        message += f", line {line}"
    message += f": {problem}"
    if known:
        close = difflib.get_close_matches(key, list(known), n=1)
        message += f"; did you mean '{close[0]}'?" if close else f"; known: {', '.join(known)}"
    return ConfigError(message)


def _line_of(text: str, key: str) -> int | None:
    pattern = re.compile(rf"^[ \t]*(\[.*\b{re.escape(key)}\b.*\]|{re.escape(key)}\s*=)", re.M)
    match = pattern.search(text)
    return text.count("\n", 0, match.start()) + 1 if match else None
