"""The lackpy subset as a decoding constraint: a GBNF grammar (llama.cpp's ``grammar``).

:func:`lackpy_gbnf` writes a grammar whose every sentence is a Python program that parses
and calls only the names it is given (the kit's tools and the builtins) or methods of
values; a model tier with ``constrain = "grammar"`` sends it with each request, so a server
that takes it (llama.cpp's server, llama-cpp-python's OpenAI-compatible server) can only
sample such programs. It is a subset of what lackpy accepts, chosen so that it is valid by
construction: one statement per line; ``for`` and ``if`` (``elif``, ``else``) one level
deep, their bodies indented four spaces; list, set and dict comprehensions; ``lambda`` only
as a keyword argument; strings in single or double quotes with the common escapes; no
f-strings, no generator expressions, no names starting with ``_``. The validator still
checks every program (a grammar cannot see, say, a dunder string). The request's stop
sequences may follow the program, so that a model can end its program as it would
unconstrained (a base model writes the next example's ``Intent:``; refused it, it wrote on to
the token limit).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from lackpy_kernel.lang import ALLOWED_BUILTINS

# The rules after ``root`` and ``callee``; names use dashes (llama.cpp's rule names allow
# letters, digits and dashes only), and a rule goes on past a line that ends with "|".
_RULES = r'''
line ::= (simple ws?)? comment? | compound
compound ::= "for" ws targets ws "in" ws expr block |
    "if" ws expr block ("\n" "elif" ws expr block)* ("\n" "else" block)?
block ::= ws? ":" ws? comment? ("\n" "    " simple ws? comment?)+
simple ::= targets ws? "=" ws? exprs | ident ws? augop ws? expr | expr
targets ::= target (ws? "," ws? target)*
target ::= ident ("[" ws? expr ws? "]")?
augop ::= "+=" | "-=" | "*=" | "/=" | "//=" | "%="
expr ::= disj (ws "if" ws disj ws "else" ws expr)?
disj ::= conj (ws "or" ws conj)*
conj ::= neg (ws "and" ws neg)*
neg ::= "not" ws neg | comparison
comparison ::= sum (compop sum)*
compop ::= ws? ("==" | "!=" | "<=" | ">=" | "<" | ">") ws? |
    ws ("in" | "not" ws "in" | "is" | "is" ws "not") ws
sum ::= product (ws? ("+" | "-") ws? product)*
product ::= unary (ws? ("*" | "//" | "/" | "%") ws? unary)*
unary ::= "-" unary | number | primary
primary ::= atom trailer*
atom ::= call | ident | string | list | braces | paren
trailer ::= "." attr | "." attr "(" ws? arglist? ws? ")" | "[" ws? slice ws? "]"
slice ::= expr | expr? ws? ":" ws? expr? (ws? ":" ws? expr?)?
call ::= callee "(" ws? arglist? ws? ")"
arglist ::= arg (ws? "," ws? arg)* (ws? ",")?
arg ::= ident ws? "=" ws? (lambda | expr) | "*"? expr
lambda ::= "lambda" ws ident (ws? "," ws? ident)* ws? ":" ws? expr
list ::= "[" ws? (comprehension | exprs)? ws? "]"
braces ::= "{" ws? (pairs | pair comp-for+ | comprehension | exprs)? ws? "}"
paren ::= "(" ws? exprs? ws? ")"
exprs ::= expr (ws? "," ws? expr)* (ws? ",")?
pairs ::= pair (ws? "," ws? pair)* (ws? ",")?
pair ::= expr ws? ":" ws? expr
comprehension ::= expr comp-for+
comp-for ::= ws "for" ws targets ws "in" ws disj (ws "if" ws disj)*
ident ::= [a-zA-Z] [a-zA-Z0-9_]*
attr ::= [a-zA-Z] [a-zA-Z0-9_]*
number ::= [0-9]+ ("." [0-9]+)?
string ::= "'" ([^'\\\n] | escape)* "'" | "\"" ([^"\\\n] | escape)* "\""
escape ::= "\\" [nrt'"\\0]
comment ::= "#" [^\n]*
ws ::= " "+
'''


def whole_statements(text: str) -> str:
    """``text`` as far as its whole lines parse: a reply under the grammar that the token limit
    cut mid-statement, less the statement it cut ("" when no line parses)."""
    lines = text.split("\n")
    for end in range(len(lines), 0, -1):
        try:
            ast.parse("\n".join(lines[:end]))
        except (SyntaxError, ValueError):
            continue
        return "\n".join(lines[:end])
    return ""


def lackpy_gbnf(call_names: Iterable[str], *, stops: Iterable[str] = ()) -> str:
    """The GBNF grammar of programs that call only ``call_names`` (names a program may call
    besides the builtins, which are always in) or methods of values, followed by nothing or
    by one of ``stops`` (the request's stop sequences)."""
    names = sorted({*ALLOWED_BUILTINS, *(name for name in call_names if _is_name(name))})
    callee = " | ".join(f'"{name}"' for name in names)
    ends = " | ".join(_literal(stop) for stop in dict.fromkeys(stops) if stop)
    tail = f" ({ends})?" if ends else ""
    return f'root ::= line ("\\n" line)*{tail}\ncallee ::= {callee}\n{_RULES.strip()}\n'


def _literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + '"'


def _is_name(name: str) -> bool:
    return name.isidentifier() and name.isascii() and not name.startswith("_")
