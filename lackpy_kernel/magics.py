"""One declaration per magic: its name, options, usage line and whether it is a cell magic.

The kernel and the IPython extension declare each magic once, with :func:`magic` on
its handler; parsing its line, ``%lsmagic`` and ``%name?`` help all read that
declaration. Options the two surfaces share (``%delegate``'s) are declared here, once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from lackpy_kernel.magic_syntax import Kind, MagicLine, parse_magic_line

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "DELEGATE_OPTIONS",
    "DELEGATE_SUMMARY",
    "KIT",
    "PARAM",
    "RUN",
    "Magic",
    "Option",
    "declared_magics",
    "magic",
]


@dataclass(frozen=True)
class Option:
    """A magic's option: ``--name``, whether it is a flag, takes a value or repeats, and help."""

    flag: str
    kind: Kind
    help: str
    metavar: str = "VALUE"

    @property
    def usage(self) -> str:
        """How the option reads in a usage line: ``[--run]``, ``[--kit K]``, ``[--param N=V ...]``."""
        if self.kind == "flag":
            return f"[{self.flag}]"
        more = " ..." if self.kind == "multi" else ""
        return f"[{self.flag} {self.metavar}{more}]"


@dataclass(frozen=True)
class Magic:
    """A magic's declaration. ``rest`` names what follows the options (None: nothing)."""

    name: str
    summary: str  # one line, as %lsmagic lists it
    options: tuple[Option, ...] = ()
    rest: str | None = None
    cell: bool = False

    @property
    def usage(self) -> str:
        """The usage line, e.g. ``%delegate [--kit K] [--run] INTENT``."""
        words = [("%%" if self.cell else "%") + self.name, *(o.usage for o in self.options)]
        if self.rest:
            words.append(self.rest)
        return " ".join(words)

    def help(self) -> str:
        """The usage line, the summary and one line per option."""
        lines = [self.usage, "", self.summary]
        if self.options:
            shown = [o.flag if o.kind == "flag" else f"{o.flag} {o.metavar}" for o in self.options]
            width = max(map(len, shown))
            lines += ["", "options:"]
            lines += [f"  {text.ljust(width)}  {o.help}" for text, o in zip(shown, self.options,
                                                                          strict=True)]
        return "\n".join(lines)

    def parse(self, line: str) -> MagicLine:
        """The options given on ``line`` and the text after them; raises UsageError."""
        return parse_magic_line(line, {o.flag: o.kind for o in self.options}, self.usage)


def magic(name: str, summary: str, *, options: tuple[Option, ...] = (), rest: str | None = None,
          cell: bool = False) -> Callable[[F], F]:
    """Declare the decorated method as the handler of magic ``name``."""
    declared = Magic(name, summary, tuple(options), rest, cell)

    def mark(handler: F) -> F:
        handler.lackpy_magic = declared  # type: ignore[attr-defined]
        handler.__doc__ = declared.help()  # what %name? shows in IPython
        return handler

    return mark


def declared_magics(owner: object) -> dict[str, tuple[Magic, Callable[..., Any]]]:
    """Name -> (declaration, handler) for each method of ``owner`` (an object or a class)
    declared with :func:`magic`, in the order the class declares them."""
    found: dict[str, tuple[Magic, Callable[..., Any]]] = {}
    owner_class = owner if isinstance(owner, type) else type(owner)
    for cls in reversed(owner_class.__mro__):
        for attribute, value in vars(cls).items():
            declared = getattr(value, "lackpy_magic", None)
            if isinstance(declared, Magic):
                found[declared.name] = (declared, getattr(owner, attribute))
    return found


# -- what the kernel's and the extension's %delegate share ------------------------------

KIT = Option("--kit", "value", "the kit the program may use: a kit name or tool,tool,...", "K")
PARAM = Option("--param", "multi", "a named input the program sees; Python literals where "
               "they parse, else text (quote values with spaces)", "NAME=VALUE")
RUN = Option("--run", "flag", "run the program too, not only insert it")
DELEGATE_OPTIONS = (KIT, PARAM, RUN)
DELEGATE_SUMMARY = "write a program for INTENT and insert it as the next cell"
