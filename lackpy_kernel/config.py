"""``.lackpy/config.toml``: inference order and providers, default kit, sandbox limits, tool
sources, the agent's model, what a delegated program may do unseen, and telemetry."""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lackpy_kernel.errors import ConfigError

CONFIG_DIR = ".lackpy"
CONFIG_FILE = "config.toml"
BUILTIN_TIERS = ("templates", "rules")
# [delegate] auto_run: the highest tool grade (grade_w) a generated program may call and still
# run without the user looking at it first; "none" runs nothing unseen.
AUTO_RUN_LEVELS = {"none": -1, "pure": 0, "read": 1, "exec": 2, "write": 3}
# [delegate] context: what a model's prompt says about the notebook's variables.
CONTEXT_MODES = {"previews": "names, types, sizes and short previews", "names": "names, types and sizes",
                 "none": "nothing"}
# [sandbox] approve: which of a program's file changes a person sees and applies before they
# land; "never" is the explicit opt-out for unattended runs (tests, CI, papermill).
APPROVE_MODES = {"write": "ask before any file change lands", "never": "let every change land unseen"}

# section -> key -> accepted types
SCHEMA: dict[str, dict[str, tuple[type, ...]]] = {
    "inference": {"order": (list,), "record": (bool,), "providers": (dict,)},
    "kit": {"default": (str, list, dict)},
    "sandbox": {"enabled": (bool,), "timeout": (int, float), "memory_mb": (int,),
                "max_result_mb": (int,), "max_tool_calls": (int,), "approve": (str,),
                "workers": (int,), "reuse": (int,), "reuse_idle": (int, float)},
    "tools": {"providers": (dict,)},
    "agent": {"model": (str,), "provider": (str,)},
    "delegate": {"auto_run": (str,), "context": (str,)},
    "telemetry": {"exporter": (str,), "include_values": (bool,)},
    "kibitzer": {"enabled": (bool,), "mode": (str,)},
    "approval": {"runs_code": (list,)},
}
POSITIVE = {("sandbox", "timeout"), ("sandbox", "memory_mb"), ("sandbox", "max_result_mb"),
            ("sandbox", "max_tool_calls"), ("sandbox", "workers"), ("sandbox", "reuse"),
            ("sandbox", "reuse_idle")}
# [telemetry] exporter: where OpenTelemetry spans go (lackpy_kernel.telemetry)
TELEMETRY_EXPORTERS = {"none": "nowhere: no spans", "console": "stderr", "otlp": "OTLP over HTTP"}
CHOICES: dict[tuple[str, str], Mapping[str, object]] = {
    ("delegate", "auto_run"): AUTO_RUN_LEVELS, ("delegate", "context"): CONTEXT_MODES,
    ("sandbox", "approve"): APPROVE_MODES, ("telemetry", "exporter"): TELEMETRY_EXPORTERS}

# [tools.providers.NAME]: key -> (accepted types, the plugins it belongs to)
TOOL_PLUGINS = ("python", "mcp")
TOOL_SOURCE_KEYS: dict[str, tuple[tuple[type, ...], tuple[str, ...]]] = {
    "plugin": ((str,), TOOL_PLUGINS),
    "grade": ((str,), TOOL_PLUGINS),
    "overrides": ((dict,), TOOL_PLUGINS),
    "module": ((str,), ("python",)),
    "path": ((str,), ("python",)),
    "functions": ((list,), ("python",)),
    "where": ((str,), ("python",)),
    "command": ((list,), ("mcp",)),
    "env": ((dict,), ("mcp",)),
    "cwd": ((str,), ("mcp",)),
    "url": ((str,), ("mcp",)),
    "headers": ((dict,), ("mcp",)),
    "tools": ((list,), ("mcp",)),
    "prefix": ((str,), ("mcp",)),
    "timeout": ((int, float), ("mcp", "python")),
    "startup_timeout": ((int, float), ("mcp",)),
}
# [tools.providers.NAME.overrides.TOOL]: the settings one tool may change
TOOL_OVERRIDE_KEYS = ("grade", "where", "timeout")
TOOL_CHOICES = {"grade": ("read", "write"), "where": ("child", "kernel")}
TOOL_ONE_OF = {"python": ("module", "path"), "mcp": ("command", "url")}
TOOL_NAME_LISTS = {"functions", "tools"}
TOOL_STRING_TABLES = {"env", "headers"}
BUILTIN_TOOL_PROVIDER = "builtin"
_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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
    sandbox_max_tool_calls: int = 10_000
    sandbox_approve: str = "write"  # see APPROVE_MODES
    sandbox_workers: int = 4  # programs of one service run side by side (run_many, bands)
    sandbox_reuse: int = 10  # programs one walled process runs (protocol.DEFAULT_REUSE)
    sandbox_reuse_idle: float = 60.0  # seconds it waits for the next (protocol.DEFAULT_REUSE_IDLE)
    # [approval] runs_code: glob patterns (workspace-relative) of more files that run code,
    # named as such when a program changes them (kit.changes.RUNS_CODE holds the defaults)
    approval_runs_code: list[str] = field(default_factory=list)
    inference_record: bool = False
    tool_providers: dict[str, Any] = field(default_factory=dict)
    agent_model: str | None = None  # %agent's and %replan's model, and its provider
    agent_provider: str | None = None
    delegate_auto_run: str = "read"
    delegate_context: str = "previews"
    telemetry_exporter: str = "none"  # OpenTelemetry spans: none | console | otlp
    telemetry_include_values: bool = False  # tool calls' argument values and results in spans
    kibitzer_enabled: bool | None = None  # Kibitzer's session: None = on when it is installed
    kibitzer_mode: str | None = None  # the Kibitzer mode a session starts in (else its own state)


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
    import tomllib  # here: most processes that import this module read no config

    text = _read(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ConfigError(f"{path}: a value is nested too deeply to read; "
                          "flatten its arrays or inline tables") from None
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
    for pattern in data.get("approval", {}).get("runs_code", []):
        if not isinstance(pattern, str) or not pattern:
            raise _error(path, text, "runs_code", "[approval] runs_code must list glob patterns "
                                                  f"such as 'scripts/*', not {pattern!r}")
    for name, table in data.get("tools", {}).get("providers", {}).items():
        _check_tool_source(_Where(path, text, f"tools.providers.{name}"), name, table)


def _check_value(path: Path, text: str, section: str, key: str, value: object,
                 types: tuple[type, ...]) -> None:
    if isinstance(value, bool) and bool not in types:
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        wanted = " or ".join(_TYPE_NAMES[t] for t in types)
        raise _error(path, text, key, f"[{section}] {key} must be {wanted}, not {value!r}")
    if (section, key) in POSITIVE and isinstance(value, int | float) and value <= 0:
        raise _error(path, text, key, f"[{section}] {key} must be greater than 0, not {value!r}")
    choices = CHOICES.get((section, key))
    if choices is not None and isinstance(value, str) and value not in choices:
        close = _close_matches(value, choices)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise _error(path, text, key, f"[{section}] {key} must be one of {', '.join(choices)}, "
                                      f"not {value!r}{hint}")


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


class _Where:
    """A table of the file, for error messages that name the file, the line and the key."""

    def __init__(self, path: Path, text: str, table: str) -> None:
        self.path, self.text, self.table = path, text, table

    def error(self, key: str, problem: str, known: Collection[str] | None = None) -> ConfigError:
        return _error(self.path, self.text, key, f"[{self.table}] {problem}", known, self.table)

    def inner(self, table: str) -> _Where:
        return _Where(self.path, self.text, f"{self.table}.{table}")


def _check_tool_source(where: _Where, name: str, table: object) -> None:
    if not isinstance(table, dict):
        raise where.error(name, "must be a table with plugin = \"python\" or \"mcp\"")
    if name == BUILTIN_TOOL_PROVIDER:
        raise where.error(name, f"'{name}' is the built-in tools' name; call the source otherwise")
    plugin = table.get("plugin")
    if plugin not in TOOL_PLUGINS:
        raise where.error("plugin" if "plugin" in table else name,
                          f"plugin must be \"python\" or \"mcp\", not {plugin!r}")
    for key, value in table.items():
        if key not in TOOL_SOURCE_KEYS:
            known = [k for k, (_, plugins) in TOOL_SOURCE_KEYS.items() if plugin in plugins]
            raise where.error(key, f"unknown key '{key}' for a {plugin} source", known)
        types, plugins = TOOL_SOURCE_KEYS[key]
        if plugin not in plugins:
            raise where.error(key, f"{key} is a setting of {plugins[0]} sources, not {plugin} ones")
        _check_tool_value(where, key, value, types)
    present = [key for key in table if key in TOOL_ONE_OF[plugin]]
    if len(present) != 1:
        first, second = TOOL_ONE_OF[plugin]
        raise where.error(present[-1] if present else name,
                          f"a {plugin} source needs exactly one of {first} and {second}")
    for tool, override in table.get("overrides", {}).items():
        _check_override(where.inner(f"overrides.{tool}"), plugin, tool, override)


def _check_tool_value(where: _Where, key: str, value: object, types: tuple[type, ...]) -> None:
    if isinstance(value, bool) or not isinstance(value, types):
        wanted = " or ".join(_TYPE_NAMES[t] for t in types)
        raise where.error(key, f"{key} must be {wanted}, not {value!r}")
    if key in TOOL_CHOICES and value not in TOOL_CHOICES[key]:
        choices = " or ".join(f'"{choice}"' for choice in TOOL_CHOICES[key])
        raise where.error(key, f"{key} must be {choices}, not {value!r}")
    if isinstance(value, int | float) and value <= 0:
        raise where.error(key, f"{key} must be greater than 0, not {value!r}")
    if isinstance(value, list) and key in TOOL_NAME_LISTS | {"command"} and \
            not all(isinstance(v, str) and v for v in value):
        raise where.error(key, f"{key} must list names (non-empty strings), not {value!r}")
    if key == "command" and not value:
        raise where.error(key, "command must name the server's program, e.g. [\"server\", \"stdio\"]")
    if isinstance(value, dict) and key in TOOL_STRING_TABLES and \
            not all(isinstance(v, str) for v in value.values()):
        raise where.error(key, f"{key} values must be strings (use ${{VAR}} for the environment's)")
    if isinstance(value, str) and key == "url" and not value.startswith(("http://", "https://")):
        raise where.error(key, f"url must start with http:// or https://, not {value!r}")
    if isinstance(value, str) and key == "prefix" and not _PREFIX.fullmatch(value):
        raise where.error(key, f"prefix must start a tool name: letters, digits and '_', not {value!r}")


def _check_override(where: _Where, plugin: str, tool: str, override: object) -> None:
    if not isinstance(override, dict):
        raise where.error(tool, f"must be a table of {', '.join(TOOL_OVERRIDE_KEYS)}")
    for key, value in override.items():
        types, plugins = TOOL_SOURCE_KEYS.get(key, ((), ()))
        if key not in TOOL_OVERRIDE_KEYS:
            raise where.error(key, f"unknown key '{key}' for one tool", TOOL_OVERRIDE_KEYS)
        if plugin not in plugins:
            raise where.error(key, f"{key} is a setting of {plugins[0]} tools, not {plugin} ones")
        _check_tool_value(where, key, value, types)


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
    config.sandbox_max_tool_calls = sandbox.get("max_tool_calls", config.sandbox_max_tool_calls)
    config.sandbox_approve = sandbox.get("approve", config.sandbox_approve)
    config.sandbox_workers = sandbox.get("workers", config.sandbox_workers)
    config.sandbox_reuse = sandbox.get("reuse", config.sandbox_reuse)
    config.sandbox_reuse_idle = float(sandbox.get("reuse_idle", config.sandbox_reuse_idle))
    config.tool_providers = {name: dict(table) for name, table in
                             data.get("tools", {}).get("providers", {}).items()}
    agent = data.get("agent", {})
    config.agent_model = agent.get("model", config.agent_model)
    config.agent_provider = agent.get("provider", config.agent_provider)
    config.delegate_auto_run = data.get("delegate", {}).get("auto_run", config.delegate_auto_run)
    config.delegate_context = data.get("delegate", {}).get("context", config.delegate_context)
    telemetry = data.get("telemetry", {})
    config.telemetry_exporter = telemetry.get("exporter", config.telemetry_exporter)
    config.telemetry_include_values = telemetry.get("include_values", config.telemetry_include_values)
    kibitzer = data.get("kibitzer", {})
    config.kibitzer_enabled = kibitzer.get("enabled", config.kibitzer_enabled)
    config.kibitzer_mode = kibitzer.get("mode", config.kibitzer_mode)
    config.approval_runs_code = list(data.get("approval", {}).get("runs_code", []))


_TYPE_NAMES = {list: "a list", bool: "true or false", str: "a string", dict: "a table",
               int: "an integer", float: "a number"}


def _error(path: Path, text: str, key: str, problem: str, known: Collection[str] | None = None,
           table: str | None = None) -> ConfigError:
    message = f"{path}"
    line = _line_of(text, key, table)
    if line:
        message += f", line {line}"
    message += f": {problem}"
    if known:
        close = _close_matches(key, known)
        message += f"; did you mean '{close[0]}'?" if close else f"; known: {', '.join(known)}"
    return ConfigError(message)


def _close_matches(word: str, known: Collection[str]) -> list[str]:
    """The one entry of ``known`` closest to ``word``, if any is close (a list of 0 or 1)."""
    import difflib  # here: only a mistake needs it

    return difflib.get_close_matches(word, list(known), n=1)


def _line_of(text: str, key: str, table: str | None = None) -> int | None:
    """The line of ``key`` (a key or a table name), after the header of ``table`` if given."""
    pattern = re.compile(rf"^[ \t]*(\[.*\b{re.escape(key)}\b.*\]|{re.escape(key)}\s*=)", re.M)
    match = None
    if table is not None:
        header = re.compile(rf"^[ \t]*\[[ \t]*{re.escape(table)}[ \t]*\]", re.M).search(text)
        if header is not None:
            assignment = re.compile(rf"^[ \t]*{re.escape(key)}\s*=", re.M)
            match = assignment.search(text, header.end()) or header
    match = match or pattern.search(text)
    return text.count("\n", 0, match.start()) + 1 if match else None
