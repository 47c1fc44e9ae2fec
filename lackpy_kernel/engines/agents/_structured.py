"""Structured output: an agent's final answer read as a dataclass or a TypedDict.

The model is told the JSON shape to answer with (:func:`output_instructions`); its answer
is read back with :func:`read_output`, which names the first thing that does not fit, so
the agent can tell the model and ask once more.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from typing import Any

__all__ = ["from_data", "json_schema", "output_instructions", "read_output", "wants_structure"]

_FENCE = re.compile(r"^```[a-zA-Z]*\n(.*?)\n?```$", re.S)
_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def wants_structure(kind: Any) -> bool:
    """Whether ``kind`` asks for structured output (anything but ``str`` and ``Any``)."""
    return kind not in (str, Any, None)


def output_instructions(kind: Any) -> str:
    """The system prompt's paragraph asking for a final answer of type ``kind``."""
    schema = json.dumps(json_schema(kind), ensure_ascii=False)
    return (f"When you give your final answer (with no tool calls), answer with one JSON value "
            f"and nothing else, no prose and no code fence, matching this JSON schema: {schema}")


def read_output(kind: Any, text: str) -> tuple[Any, str | None]:
    """``text`` read as ``kind``: (the value, None), or (None, what is wrong with it)."""
    if not wants_structure(kind):
        return text, None
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        data = json.loads(body)
    except ValueError as exc:
        return None, f"the answer is not JSON ({exc})"
    except RecursionError:
        return None, "the answer is JSON nested too deeply to read"
    try:
        return from_data(kind, data), None
    except (TypeError, ValueError) as exc:
        return None, str(exc)


def from_data(kind: Any, data: Any, where: str = "the answer") -> Any:
    """``data`` (JSON) as ``kind``: dataclasses and TypedDicts field by field, lists, dicts,
    unions and scalars checked; TypeError or ValueError naming where it does not fit."""
    origin = typing.get_origin(kind)
    if kind is Any or kind is object:
        return data
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(kind):
            try:
                return from_data(option, data, where)
            except (TypeError, ValueError):
                continue
        raise TypeError(f"{where} fits none of {_name(kind)}: {data!r}"[:300])
    if kind is type(None):
        if data is not None:
            raise TypeError(f"{where} must be null")
        return None
    if origin is typing.Literal:
        if data not in typing.get_args(kind):
            raise ValueError(f"{where} must be one of {typing.get_args(kind)}, not {data!r}")
        return data
    if dataclasses.is_dataclass(kind) or typing.is_typeddict(kind):
        return _record(kind, data, where)
    if origin in (list, tuple, set) or kind in (list, tuple, set):
        if not isinstance(data, list):
            raise TypeError(f"{where} must be a list, not {type(data).__name__}")
        (item,) = typing.get_args(kind)[:1] or (Any,)
        return [from_data(item, value, f"{where}[{index}]") for index, value in enumerate(data)]
    if origin is dict or kind is dict:
        if not isinstance(data, dict):
            raise TypeError(f"{where} must be an object, not {type(data).__name__}")
        value_kind = (typing.get_args(kind) or (str, Any))[1]
        return {key: from_data(value_kind, value, f"{where}[{key!r}]") for key, value in data.items()}
    if kind in _SCALARS:
        if kind is float and isinstance(data, int) and not isinstance(data, bool):
            return float(data)
        if not isinstance(data, kind) or (kind is int and isinstance(data, bool)):
            raise TypeError(f"{where} must be a {_SCALARS[kind]}, not {type(data).__name__}")
        return data
    raise TypeError(f"output type {_name(kind)} is not supported: use a dataclass, a "
                    f"TypedDict, list, dict, str, int, float or bool")


def json_schema(kind: Any) -> dict[str, Any]:
    """The JSON schema of ``kind`` (the types ``from_data`` reads)."""
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [json_schema(option) for option in typing.get_args(kind)]}
    if kind is type(None):
        return {"type": "null"}
    if origin is typing.Literal:
        return {"enum": list(typing.get_args(kind))}
    if dataclasses.is_dataclass(kind) or typing.is_typeddict(kind):
        fields, required = _fields(kind)
        return {"type": "object", "properties": {name: json_schema(hint)
                                                 for name, hint in fields.items()},
                "required": required}
    if origin in (list, tuple, set) or kind in (list, tuple, set):
        (item,) = typing.get_args(kind)[:1] or (Any,)
        return {"type": "array", "items": json_schema(item)}
    if origin is dict or kind is dict:
        return {"type": "object"}
    if kind in _SCALARS:
        return {"type": _SCALARS[kind]}
    return {}


def _record(kind: Any, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise TypeError(f"{where} must be a JSON object with the fields of {kind.__name__}, "
                        f"not {type(data).__name__}")
    fields, required = _fields(kind)
    unknown = [name for name in data if name not in fields]
    if unknown:
        raise ValueError(f"{where} has the field(s) {', '.join(map(repr, unknown))}, which "
                         f"{kind.__name__} does not (its fields: {', '.join(fields)})")
    missing = [name for name in required if name not in data]
    if missing:
        raise ValueError(f"{where} lacks the field(s) {', '.join(map(repr, missing))} of "
                         f"{kind.__name__}")
    values = {name: from_data(fields[name], value, f"{where}.{name}") for name, value in data.items()}
    is_dataclass = isinstance(kind, type) and dataclasses.is_dataclass(kind)
    return kind(**values) if is_dataclass else values


def _fields(kind: Any) -> tuple[dict[str, Any], list[str]]:
    hints = typing.get_type_hints(kind)
    if typing.is_typeddict(kind):
        return hints, sorted(kind.__required_keys__, key=list(hints).index)
    fields = {field.name: hints.get(field.name, Any) for field in dataclasses.fields(kind)}
    required = [field.name for field in dataclasses.fields(kind)
                if field.default is dataclasses.MISSING
                and field.default_factory is dataclasses.MISSING]
    return fields, required


def _name(kind: Any) -> str:
    return getattr(kind, "__name__", None) or str(kind)
