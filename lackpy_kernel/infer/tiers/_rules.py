"""Tier 1: fixed rules for the commonest intents, each used only when its tool is in the kit."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lackpy_kernel.infer._provider import KIND_RULES

from ._base import DeterministicProvider


@dataclass(frozen=True)
class Rule:
    """An intent pattern, the tool it needs, and how to write the program."""

    pattern: re.Pattern[str]
    tool: str
    write: Callable[[str], str]


def _program(variable: str, call: str) -> Callable[[str], str]:
    return lambda value: f"{variable} = {call.format(value=repr(value))}\n{variable}"


def _rule(pattern: str, tool: str, variable: str, call: str) -> Rule:
    return Rule(re.compile(pattern, re.IGNORECASE), tool, _program(variable, call))


RULES = (
    _rule(r"read (?:the )?file (?P<value>.+)", "read_file", "content", "read_file({value})"),
    _rule(r"find (?:the )?definitions? (?:of|for) (?P<value>.+)", "find_definitions",
          "results", "find_definitions({value})"),
    _rule(r"find (?:all )?(?:the )?(?:callers|usages|references|uses) (?:of|for) (?P<value>.+)",
          "find_callers", "results", "find_callers({value})"),
    Rule(re.compile(r"(?:find|list) (?:all )?(?:the )?\.?(?P<value>[\w+-]+) files", re.IGNORECASE),
         "find_files", lambda ext: f"files = find_files({'**/*.' + ext.lower()!r})\nfiles"),
    _rule(r"glob (?P<value>.+)", "find_files", "files", "find_files({value})"),
)

_QUOTES = "'\"`"


def clean_value(raw: str) -> str:
    """A captured value without surrounding quotes, trailing punctuation or spaces."""
    value = raw.strip().rstrip(".?!,;").strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in _QUOTES:
        value = value[1:-1]
    return value


# A tool as a namespace description shows it: its name, then its arguments (``read_file(path: str)``).
_CALLED_NAME = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(")


def kit_tool_names(namespace_desc: str, config: Mapping[str, Any]) -> set[str]:
    """The kit's tool names: ``config["tool_names"]`` when the dispatcher gives them, else the
    names the namespace description shows as called (``name(...)``)."""
    if "tool_names" in config:
        return set(config["tool_names"] or ())
    return set(_CALLED_NAME.findall(namespace_desc))


class RulesProvider(DeterministicProvider):
    """Tier 1: regular expressions for reading files and finding files, definitions, callers.

    A rule applies only when its tool is in the kit (see ``kit_tool_names``): the protocol's
    ``generate(intent, namespace_desc)`` with no config finds the tools in the description.
    """

    kind = KIND_RULES

    def __init__(self, name: str = "rules") -> None:
        super().__init__(name)

    def answer(self, intent: str, namespace_desc: str, config: Mapping[str, Any]) -> str | None:
        """The first matching rule's program whose tool is in the kit, else None."""
        tools = kit_tool_names(namespace_desc, config)
        text = " ".join(intent.split())
        for rule in RULES:
            if rule.tool not in tools:
                continue
            found = rule.pattern.fullmatch(text.rstrip(".?!"))
            if found:
                value = clean_value(found.group("value"))
                if value:
                    return rule.write(value)
        return None
