"""Describe a Python function as a tool: its signature, annotations and docstring.

Docstrings may be written in the Google style (``Args:`` / ``Returns:``), the
NumPy style (``Parameters`` / ``Returns`` underlined with dashes) or the Sphinx
style (``:param x:``, ``:type x:``, ``:returns:``, ``:rtype:``). The text before
the first section is the tool's description; an annotation wins over a type
written in the docstring.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lackpy_kernel.errors import ToolSourceError

from ..plain import find_non_plain
from ..spec import KEYWORD_ONLY_MARK, POSITIONAL_ONLY_MARK, ArgSpec

MAX_DEFAULT_CHARS = 60
_GOOGLE_ARGS = {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments"}
_GOOGLE_RETURNS = {"returns", "return", "yields"}
_GOOGLE_OTHER = {"raises", "example", "examples", "note", "notes", "see also", "warning",
                 "warnings", "todo", "attributes", "references"}
_STARS: dict[inspect._ParameterKind, str] = {
    inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
_GOOGLE_SECTION = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
_GOOGLE_ARG = re.compile(r"^(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_NUMPY_UNDERLINE = re.compile(r"^-{3,}\s*$")
_NUMPY_ARG = re.compile(r"^(\*{0,2}\w+)\s*(?::\s*(.*))?$")
_SPHINX_FIELD = re.compile(r"^:(\w+)(?:\s+([^:]+?))?\s*:\s*(.*)$")


@dataclass
class Docstring:
    """What a docstring says: a summary, each argument's type and text, and the return's."""

    summary: str = ""
    arg_text: dict[str, str] = field(default_factory=dict)
    arg_types: dict[str, str] = field(default_factory=dict)
    returns_text: str = ""
    returns_type: str = ""


@dataclass
class FunctionDescription:
    """A function as a tool sees it: the description, the arguments and the return type."""

    description: str
    args: list[ArgSpec]
    returns: str


def describe_function(fn: Callable[..., Any]) -> FunctionDescription:
    """Describe ``fn`` from its signature, annotations and docstring.

    Raises ToolSourceError, saying why, for what cannot be a tool: a class, an async or
    generator function, or a callable whose signature Python cannot read.
    """
    _check_callable_kind(fn)
    signature = _signature(fn)
    doc = parse_docstring(inspect.getdoc(fn) or "")
    module = getattr(fn, "__module__", None)
    args = _arg_specs(signature, doc, module)
    returns = _format_annotation(signature.return_annotation, module) or doc.returns_type or "Any"
    description = doc.summary
    if doc.returns_text:
        description = f"{description} Returns: {doc.returns_text}".strip()
    return FunctionDescription(description, args, returns)


def parse_docstring(text: str) -> Docstring:
    """Split a cleaned docstring into its summary, arguments and return description."""
    lines = inspect.cleandoc(text).splitlines() if text else []
    doc = Docstring()
    summary: list[str] = []
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        if _SPHINX_FIELD.match(stripped):
            index = _read_sphinx_field(lines, index, doc)
        elif _is_numpy_header(lines, index):
            index = _read_numpy_section(lines, index, doc)
        elif _is_google_header(lines[index]):
            index = _read_google_section(lines, index, doc)
        else:
            summary.append(stripped)
            index += 1
            continue
        summary.append("")  # a section ends the summary's paragraph
    doc.summary = _first_paragraph(summary)
    return doc


def _first_paragraph(lines: list[str]) -> str:
    paragraph: list[str] = []
    for line in lines:
        if not line:
            if paragraph:
                break
            continue
        paragraph.append(line)
    return " ".join(paragraph)


# -- Google style ------------------------------------------------------------------


def _is_google_header(line: str) -> bool:
    match = _GOOGLE_SECTION.match(line)
    return match is not None and match.group(1).lower() in _GOOGLE_ARGS | _GOOGLE_RETURNS | _GOOGLE_OTHER


def _read_google_section(lines: list[str], index: int, doc: Docstring) -> int:
    title = _GOOGLE_SECTION.match(lines[index].strip()).group(1).lower()  # type: ignore[union-attr]
    body, index = _indented_block(lines, index + 1)
    if title in _GOOGLE_ARGS:
        for name, kind, text in _google_entries(body):
            doc.arg_text[name.lstrip("*")] = text
            if kind:
                doc.arg_types[name.lstrip("*")] = kind
    elif title in _GOOGLE_RETURNS:
        first, _, rest = " ".join(line.strip() for line in body).partition(":")
        if rest and _looks_like_type(first):
            doc.returns_type, doc.returns_text = first.strip(), rest.strip()
        else:
            doc.returns_text = " ".join(line.strip() for line in body).strip()
    return index


def _google_entries(body: list[str]) -> list[tuple[str, str, str]]:
    entries: list[tuple[str, str, str]] = []
    indent = min((_indent(line) for line in body if line.strip()), default=0)
    for line in body:
        if not line.strip():
            continue
        match = _GOOGLE_ARG.match(line.strip()) if _indent(line) == indent else None
        if match:
            entries.append((match.group(1), (match.group(2) or "").strip(), match.group(3).strip()))
        elif entries:
            name, kind, text = entries[-1]
            entries[-1] = (name, kind, f"{text} {line.strip()}".strip())
    return entries


def _looks_like_type(text: str) -> bool:
    return bool(re.fullmatch(r"[\w\[\]., |]+", text.strip()))


# -- NumPy style ------------------------------------------------------------------


def _is_numpy_header(lines: list[str], index: int) -> bool:
    return index + 1 < len(lines) and bool(lines[index].strip()) \
        and bool(_NUMPY_UNDERLINE.match(lines[index + 1].strip()))


def _read_numpy_section(lines: list[str], index: int, doc: Docstring) -> int:
    title = lines[index].strip().lower()
    index += 2
    body: list[str] = []
    while index < len(lines) and not _is_numpy_header(lines, index):
        body.append(lines[index])
        index += 1
    entries = _numpy_entries(body)
    if title in _GOOGLE_ARGS:
        for name, kind, text in entries:
            doc.arg_text[name.lstrip("*")] = text
            if kind:
                doc.arg_types[name.lstrip("*")] = kind
    elif title in _GOOGLE_RETURNS and entries:
        name, kind, text = entries[0]
        doc.returns_type = kind or name
        doc.returns_text = text
    return index


def _numpy_entries(body: list[str]) -> list[tuple[str, str, str]]:
    entries: list[tuple[str, str, str]] = []
    for line in body:
        if not line.strip():
            continue
        if _indent(line) == 0:
            match = _NUMPY_ARG.match(line.strip())
            name, kind = (match.group(1), (match.group(2) or "").strip()) if match else (line, "")
            entries.append((name.strip(), kind, ""))
        elif entries:
            name, kind, text = entries[-1]
            entries[-1] = (name, kind, f"{text} {line.strip()}".strip())
    return entries


# -- Sphinx style -----------------------------------------------------------------


def _read_sphinx_field(lines: list[str], index: int, doc: Docstring) -> int:
    match = _SPHINX_FIELD.match(lines[index].strip())
    assert match is not None
    field_name, argument, text = match.group(1), (match.group(2) or "").strip(), match.group(3)
    more, index = _indented_block(lines, index + 1)
    text = " ".join([text.strip(), *(line.strip() for line in more)]).strip()
    if field_name in ("param", "parameter", "arg", "argument") and argument:
        kind, _, name = argument.rpartition(" ")
        doc.arg_text[name] = text
        if kind:
            doc.arg_types[name] = kind.strip()
    elif field_name == "type" and argument:
        doc.arg_types[argument] = text
    elif field_name in ("returns", "return"):
        doc.returns_text = text
    elif field_name == "rtype":
        doc.returns_type = text
    return index


def _indented_block(lines: list[str], index: int) -> tuple[list[str], int]:
    block: list[str] = []
    while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > 0):
        block.append(lines[index])
        index += 1
    while block and not block[-1].strip():
        block.pop()
    return block, index


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


# -- the signature ----------------------------------------------------------------


def _check_callable_kind(fn: object) -> None:
    if inspect.isclass(fn):
        raise ToolSourceError("it is a class; a tool is a function that returns plain data")
    if not callable(fn):
        raise ToolSourceError(f"it is a {type(fn).__name__}, not a function")
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        raise ToolSourceError("it is an async function; lackpy calls tools synchronously, so "
                              "wrap it in a plain function (asyncio.run(...))")
    if inspect.isgeneratorfunction(fn):
        raise ToolSourceError("it is a generator function; return a list instead of yielding")


def _signature(fn: Callable[..., Any]) -> inspect.Signature:
    try:
        return inspect.signature(fn, eval_str=True)
    except (NameError, SyntaxError, TypeError, AttributeError, ValueError):
        pass  # an annotation that does not evaluate (or no signature): try without evaluating
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ToolSourceError(f"Python cannot read its signature ({exc}); define it with def "
                              "and named parameters") from None


def _arg_specs(signature: inspect.Signature, doc: Docstring, module: str | None) -> list[ArgSpec]:
    specs: list[ArgSpec] = []
    kinds = [parameter.kind for parameter in signature.parameters.values()]
    for position, parameter in enumerate(signature.parameters.values()):
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and \
                inspect.Parameter.VAR_POSITIONAL not in kinds[:position] and \
                inspect.Parameter.KEYWORD_ONLY not in kinds[:position]:
            specs.append(ArgSpec(KEYWORD_ONLY_MARK, ""))
        specs.append(_arg_spec(parameter, doc, module))
        following = kinds[position + 1] if position + 1 < len(kinds) else None
        if parameter.kind is inspect.Parameter.POSITIONAL_ONLY and \
                following is not inspect.Parameter.POSITIONAL_ONLY:
            specs.append(ArgSpec(POSITIONAL_ONLY_MARK, ""))
    return specs


def _arg_spec(parameter: inspect.Parameter, doc: Docstring, module: str | None) -> ArgSpec:
    name = parameter.name
    kind = _format_annotation(parameter.annotation, module) or doc.arg_types.get(name) or "Any"
    shown = _STARS.get(parameter.kind, "") + name
    default = None if parameter.default is inspect.Parameter.empty else _default_text(
        parameter.default)
    return ArgSpec(shown, kind, doc.arg_text.get(name, ""), default)


def _format_annotation(annotation: object, module: str | None) -> str:
    if annotation is inspect.Parameter.empty or annotation is inspect.Signature.empty:
        return ""
    if isinstance(annotation, str):
        return annotation
    return inspect.formatannotation(annotation, base_module=module)


def _default_text(value: object) -> str:
    if find_non_plain(value) is not None:
        return "..."
    text = repr(value)
    return text if len(text) <= MAX_DEFAULT_CHARS else "..."
