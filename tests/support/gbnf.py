"""GBNF grammars read by Lark, so that tests can check which programs a grammar admits.

:func:`to_lark` rewrites llama.cpp's GBNF (``name ::= ...``, ``"literals"``, ``[classes]``,
``( ) * + ? |``, a rule going on past a line that ends with ``|``) as a Lark grammar for its
Earley parser: ``::=`` becomes ``:``, dashes in rule names underscores, and each character
class a one-character regular expression.
"""

from __future__ import annotations

import re

from lark import Lark

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|::=|[A-Za-z][A-Za-z0-9-]*|\s+|.')


def to_lark(gbnf: str) -> str:
    """The Lark text of ``gbnf``."""
    out: list[str] = []
    for line in re.sub(r"\|\s*\n\s*", "| ", gbnf).splitlines():
        if not line.strip():
            continue
        for token in _TOKEN.findall(line):
            if token == "::=":
                out.append(":")
            elif token.startswith("["):
                out.append("/" + token.replace("/", "\\/") + "/")
            elif token[0].isalpha():
                out.append(token.replace("-", "_"))
            else:
                out.append(token)
        out.append("\n")
    return "".join(out)


def parser(gbnf: str) -> Lark:
    """An Earley parser of the language of ``gbnf`` (its ``root``)."""
    return Lark(to_lark(gbnf), start="root", parser="earley", lexer="dynamic")


def admits(grammar: Lark, text: str) -> bool:
    """Whether ``text`` is a sentence of ``grammar``."""
    try:
        grammar.parse(text)
    except Exception:  # lark's UnexpectedInput and friends
        return False
    return True
