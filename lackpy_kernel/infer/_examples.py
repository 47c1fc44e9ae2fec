"""Few-shot examples of plain-data work on tool results, added to the kit's own examples.

A kit's tools document how to call them; these show what a program does with
what they return (lines, words, filters, sorting, columns, sums), which a
small model cannot guess. An example is offered only when the kit has every
tool it calls.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from lackpy_kernel.lang import ALLOWED_BUILTINS

from .prompt import Example

GENERAL_EXAMPLES = (
    Example("show the second line of log.txt", "lines = read_file('log.txt').splitlines()\nlines[1]",
            ["line", "index"]),
    Example("count the words in essay.txt", "words = read_file('essay.txt').split()\nlen(words)",
            ["count", "words", "number"]),
    Example("which lines of app.log mention error",
            "lines = read_file('app.log').splitlines()\n[line for line in lines if 'error' in line]",
            ["lines", "filter", "contain"]),
    Example("sort the lines of names.txt", "sorted(read_file('names.txt').splitlines())",
            ["lines", "sorted", "order"]),
    Example("the first column of table.csv without its header",
            "rows = read_file('table.csv').splitlines()[1:]\n[row.split(',')[0] for row in rows]",
            ["csv", "column", "rows", "header"]),
    Example("is the word TODO in plan.md", "'TODO' in read_file('plan.md')",
            ["contain", "word", "whether"]),
    Example("the longest line of poem.txt", "lines = read_file('poem.txt').splitlines()\nmax(lines, key=len)",
            ["longest", "length", "line"]),
    Example("list the json files in the config folder", "files = find_files('config/**/*.json')\nfiles",
            ["list", "files", "folder"]),
    Example("total characters in the text files under notes",
            "paths = find_files('notes/**/*.txt')\nsum([len(read_file(path)) for path in paths])",
            ["total", "sum", "files", "characters"]),
    Example("the final entry of history.log",
            "entries = read_file('history.log').splitlines()\nentries[-1]", ["last", "end", "index"]),
    Example("the top five lines of queue.txt", "lines = read_file('queue.txt').splitlines()\nlines[:5]",
            ["first", "head", "slice"]),
    Example("each line of names.txt trimmed and in lower case",
            "lines = read_file('names.txt').splitlines()\n[line.strip().lower() for line in lines]",
            ["each", "every", "convert"]),
    Example("the entries of history.log from newest to oldest",
            "entries = read_file('history.log').splitlines()\nlist(reversed(entries))",
            ["reverse", "backwards", "order"]),
    Example("the names in team.txt on one line, separated by semicolons",
            "names = read_file('team.txt').splitlines()\n'; '.join(names)", ["join", "separator"]),
    Example("how many times does TODO occur in plan.md", "read_file('plan.md').count('TODO')",
            ["count", "occurrences", "appears"]),
    Example("how many lines of app.log mention a timeout",
            "lines = read_file('app.log').splitlines()\nlen([line for line in lines if 'timeout' in line])",
            ["count", "filter", "number"]),
    Example("the lines of plan.md that begin with a dash",
            "lines = read_file('plan.md').splitlines()\n[line for line in lines if line.startswith('-')]",
            ["start", "prefix", "filter"]),
    Example("the text of notes.md without the spaces at its ends", "read_file('notes.md').strip()",
            ["strip", "trailing", "whitespace"]),
)


def general_examples(tool_names: Iterable[str]) -> list[Example]:
    """The examples of :data:`GENERAL_EXAMPLES` whose every call is to a builtin or one of ``tool_names``."""
    known = set(tool_names) | ALLOWED_BUILTINS
    return [example for example, called in _GENERAL_CALLS if called <= known]


def _called(code: str) -> frozenset[str]:
    return frozenset(node.func.id for node in ast.walk(ast.parse(code))
                     if isinstance(node, ast.Call) and isinstance(node.func, ast.Name))


# Each general example with the names it calls, parsed once (tier 0 asks on every intent).
_GENERAL_CALLS = tuple((example, _called(example.code)) for example in GENERAL_EXAMPLES)
