"""Magic syntax and the one registry of magics the kernel and the extension share."""

from __future__ import annotations

import pytest

from lackpy_kernel.errors import UsageError
from lackpy_kernel.extension import IPythonPort
from lackpy_kernel.kernel.magics import KernelMagics
from lackpy_kernel.kernel.output import CellOutput, KernelPort
from lackpy_kernel.notebook.core import CoreMagics
from lackpy_kernel.notebook.declare import DELEGATE_OPTIONS, Magic, Option, declared_magics, magic
from lackpy_kernel.notebook.syntax import split_cell


def segments(cell: str) -> list[tuple[str, str, str]]:
    return [(s.kind, s.name, s.line or s.text) for s in split_cell(cell)]


def test_a_paren_in_a_delegate_intent_does_not_swallow_the_cell():
    assert segments("%delegate read the file (notes.txt\nx = 1\nx") == [
        ("magic", "delegate", "read the file (notes.txt"),
        ("code", "", "\nx = 1\nx"),
    ]


def test_a_magic_line_continues_only_past_a_trailing_backslash():
    assert segments("%delegate read the file \\\nnotes.txt (today\nx") == [
        ("magic", "delegate", "read the file  notes.txt (today"),
        ("code", "", "\n\nx"),
    ]


def test_a_percent_inside_open_brackets_is_code_not_a_magic():
    assert segments("y = [1,\n%2]\n%kit debug") == [
        ("code", "", "y = [1,\n%2]\n"),
        ("magic", "kit", "debug"),
    ]


def test_delegate_shares_its_options_between_the_kernel_and_the_extension():
    kernel = CoreMagics.offered(KernelPort(CellOutput(None), None).offers)["delegate"]
    extension = CoreMagics.offered(IPythonPort(None).offers)["delegate"]
    for declared in (kernel, extension):
        assert declared.options[:len(DELEGATE_OPTIONS)] == DELEGATE_OPTIONS
        assert declared.rest == "INTENT" and not declared.cell
    extras = {o.flag for o in kernel.options} ^ {o.flag for o in extension.options}
    assert extras == {"--replace", "--no-sandbox"}


def test_usage_help_and_parsing_come_from_the_declaration():
    class Owner:
        @magic("greet", "say hello", options=(Option("--loud", "flag", "shout it"),),
               rest="NAME")
        def greet(self, line):
            return line

    declared, handler = declared_magics(Owner())["greet"]
    assert declared == Magic("greet", "say hello", (Option("--loud", "flag", "shout it"),), "NAME")
    assert declared.usage == "%greet [--loud] NAME"
    assert "--loud  shout it" in declared.help() and handler.__doc__ == declared.help()
    parsed = declared.parse("--loud Ada (the first)")
    assert parsed.options == {"--loud": True} and parsed.rest == "Ada (the first)"
    with pytest.raises(UsageError, match=r"unknown option --quiet; usage: %greet \[--loud\] NAME"):
        declared.parse("--quiet Ada")


def test_cell_magics_say_so_in_their_usage():
    create = declared_magics(KernelMagics)["create"][0]
    assert create.cell and create.usage.startswith("%%create [--pattern P] [--kit K] NAME")
