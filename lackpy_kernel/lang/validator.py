"""Validate a lackpy program: parse, then check every node against the grammar.

The checks run in one pass over the tree, breadth first, a level at a time: the
level is the nesting depth, so the depth guard costs nothing and no walk
recurses. Names, bindings and positions live in sets, dicts and lists that
only grow, columns are computed once per line, and suggestions are bounded,
so validation takes time linear in the program's size whatever the program.
"""

from __future__ import annotations

import ast
import gc
import heapq
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .grammar import (
    ALLOWED_BUILTINS,
    ALLOWED_NODES,
    DENIED_ATTRIBUTE_PATTERN,
    DENIED_ATTRIBUTES,
    FORBIDDEN_NAMES,
    KEY_FUNCTION_CALLS,
    MAX_NESTING,
    MAX_PROGRAM_CHARS,
    NAME_HINTS,
    NODE_HINTS,
)

_ISSUE_TEXT = re.compile(r"^line (\d+), col (\d+): (.*)$", re.DOTALL)
_NEWLINE = re.compile(r"\r\n|\r|\n")
# A replacement field that names a dunder ('{0.__class__}', '{__globals__}'): what str.format
# would turn into attribute access. A dunder elsewhere ('pkg/__init__.py') is only data.
_DUNDER_FIELD = re.compile(r"\{[^{}]*__")
MAX_ISSUES = 100
# "Did you mean" costs a fuzzy match per candidate: only the first few unknown
# functions get one, only for short names, against a bounded set of names.
MAX_SUGGESTIONS = 10
MAX_SUGGESTED_NAME = 32
MAX_SUGGESTION_CANDIDATES = 300
# Longer names cannot be within difflib's 0.6 cutoff of a name of MAX_SUGGESTED_NAME characters.
_MAX_CANDIDATE_NAME = 3 * MAX_SUGGESTED_NAME
_SHOWN_NAME = 60  # longer names are shortened in messages
_CHUNK = 4096  # nodes between two looks at the deadline


def source_lines(program: str) -> list[str]:
    """The program's lines as Python numbers them (str.splitlines also splits on \\f, \\x1c, ...)."""
    return _NEWLINE.split(program)


@dataclass(frozen=True)
class Issue:
    """One validation error at a 1-based line and column (0 when unknown)."""

    line: int
    col: int
    message: str

    def __str__(self) -> str:
        if self.line:
            return f"line {self.line}, col {self.col}: {self.message}"
        return self.message

    @classmethod
    def from_text(cls, text: str) -> Issue:
        """Read back an issue written as ``str(issue)`` (how rules that return strings write them)."""
        match = _ISSUE_TEXT.match(text)
        if match:
            return cls(int(match[1]), int(match[2]), match[3])
        return cls(0, 0, text)


Rule = Callable[[ast.Module], Iterable[Issue | str]]


def issue_at(node: ast.AST, message: str) -> Issue:
    """An Issue for ``message`` at ``node``, as rules report their errors.

    Its column is the node's 1-based UTF-8 byte column, as ``ast`` counts; ``validate``
    turns the columns of every rule's issues into characters.
    """
    line = getattr(node, "lineno", 0)
    return Issue(line, getattr(node, "col_offset", 0) + 1 if line else 0, message)


@dataclass
class ValidationResult:
    """Result of validating a lackpy program.

    ``errors`` are human-readable strings (``line L, col C: what, and what to do``);
    ``issues`` carry the same errors with their positions; ``tree`` is the
    validated AST, which is what the runner compiles.
    """

    valid: bool
    errors: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    variables: list[str] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    tree: ast.Module | None = field(default=None, repr=False, compare=False)


class NoRebinding:
    """The rule ``no_rebinding(names)`` makes: no binding of ``names`` (a kit's tools).

    ``validate`` takes it out of the rules and checks ``names`` as ``protected_names``,
    in its own pass; called on a tree, it walks the tree itself.
    """

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)
        self.__name__ = "no_rebinding"

    def __call__(self, tree: ast.AST) -> list[Issue]:
        """An Issue for every binding of a protected name in ``tree``."""
        issues = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                name = node.id
            elif isinstance(node, ast.arg):
                name = node.arg
            else:
                continue
            if name in self.names:
                issues.append(issue_at(node, _rebinding_message(name)))
        return issues


def validate(
    program: str,
    allowed_names: Iterable[str] | None = None,
    extra_rules: Iterable[Rule] | None = None,
    *,
    protected_names: Iterable[str] = (),
    deadline: float | None = None,
) -> ValidationResult:
    """Validate ``program`` against the lackpy grammar; every error is collected, none raised.

    ``allowed_names`` are the names a program may use besides the builtins: kit
    tools, parameters and session variables. ``extra_rules`` are callables
    ``(ast.Module) -> list[Issue | str]`` that can only add errors (a rule sees its
    own copy of the tree). ``protected_names`` (the kit's tools) may not be bound
    by the program in any way: assigned, loop or comprehension targets, ``del``,
    walrus, lambda parameters; a ``no_rebinding(names)`` rule among
    ``extra_rules`` adds its names to them. ``deadline`` is a ``time.monotonic()``
    value; a validation still running then stops with a "too large to validate"
    error. Hostile input (deep nesting, huge programs, running out of memory)
    is an invalid program, never an exception.
    """
    # A big tree is millions of new objects, none in a cycle: collections the allocations
    # trigger would cost more than the parse itself.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _validate(program, allowed_names, extra_rules, protected_names, deadline)
    except _OutOfTime:
        return _invalid([Issue(0, 0, "the program is too large to validate in the time allowed; "
                                     "split it into smaller programs")])
    except (MemoryError, RecursionError):
        return _invalid([Issue(0, 0, "the program is too large to validate; "
                                     "split it into smaller programs")])
    finally:
        if collecting:
            gc.enable()


class _OutOfTime(Exception):
    """The validation's deadline passed."""


def _check_time(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise _OutOfTime


def _validate(program: str, allowed_names: Iterable[str] | None, extra_rules: Iterable[Rule] | None,
              protected_names: Iterable[str], deadline: float | None) -> ValidationResult:
    tree = _parse(program)
    if isinstance(tree, Issue):
        return _invalid([tree])
    _check_time(deadline)
    protected = set(protected_names)
    rules: list[Rule] = []
    for rule in extra_rules or ():
        if isinstance(rule, NoRebinding):
            protected |= rule.names
        else:
            rules.append(rule)
    positions = _Positions(program)
    checker = _Checker(positions, allowed_names, protected, deadline)
    too_deep = checker.check(tree)
    if too_deep is not None:
        return _invalid([too_deep])
    issues, hidden = checker.first_issues(MAX_ISSUES)
    if rules:
        issues.extend(_apply_rules(rules, program, positions, deadline))
    if len(issues) > 1:
        issues.sort(key=lambda issue: (issue.line, issue.col))
    hidden += max(0, len(issues) - MAX_ISSUES)
    if hidden:
        issues = [*issues[:MAX_ISSUES], Issue(0, 0, f"... and {hidden} more errors")]
    return ValidationResult(
        valid=not issues,
        errors=[str(issue) for issue in issues],
        calls=checker.calls,
        variables=list(checker.variables),
        issues=issues,
        tree=tree if not issues else None,
    )


def _invalid(issues: list[Issue]) -> ValidationResult:
    return ValidationResult(False, [str(i) for i in issues], issues=issues)


def _parse(program: object) -> ast.Module | Issue:
    """The program's tree, or the Issue that says why there is none."""
    if not isinstance(program, str):
        return Issue(0, 0, f"a program must be text (str), not {type(program).__name__}")
    if len(program) > MAX_PROGRAM_CHARS:
        return Issue(0, 0, f"program is {len(program):,} characters; the limit is {MAX_PROGRAM_CHARS:,}")
    if "\0" in program:
        offset = program.index("\0")
        line_start = program.rfind("\n", 0, offset) + 1
        line = program.count("\n", 0, offset) + 1
        return Issue(line, offset - line_start + 1, "program contains a NUL byte; remove it")
    try:
        return ast.parse(program, "<lackpy>")
    except SyntaxError as exc:
        return Issue(exc.lineno or 0, exc.offset or 0, f"syntax error: {exc.msg}")
    except RecursionError:
        return Issue(0, 0, "program is nested too deeply to parse; flatten it")
    except MemoryError:  # the parser's own stack, or this process's memory, ran out
        return Issue(0, 0, "program is nested too deeply or too large to parse; "
                           "flatten it or split it into smaller programs")
    except ValueError as exc:
        return Issue(0, 0, f"program cannot be parsed: {exc}")


def _apply_rules(rules: list[Rule], program: str, positions: _Positions,
                 deadline: float | None) -> list[Issue]:
    # The rules get a tree of their own: a rule must not change the one that will be compiled.
    # Parsing again is linear, in C; copy.deepcopy recurses and is slower.
    view = ast.parse(program, "<lackpy>")
    issues = []
    for rule in rules:
        _check_time(deadline)
        name = getattr(rule, "__name__", repr(rule))
        try:
            found = [_as_issue(item) for item in rule(view)]
        except Exception as exc:  # a broken rule is a validation error, not a crash
            issues.append(Issue(0, 0, f"rule {name} failed: {type(exc).__name__}: {exc}"))
        else:
            issues.extend(found)
    # A rule's columns are ast's, in UTF-8 bytes (issue_at's): report them in characters.
    columns = positions.columns([(issue.line, issue.col - 1) for issue in issues])
    return [Issue(issue.line, column if issue.col > 0 else 0, issue.message)
            for issue, column in zip(issues, columns, strict=True)]


def _as_issue(item: Issue | str) -> Issue:
    if isinstance(item, Issue):
        return item
    if isinstance(item, str):
        return Issue.from_text(item)
    raise TypeError(f"a rule returns Issue objects or strings, not {type(item).__name__}")


class _Positions:
    """Turns ``ast``'s (line, UTF-8 byte offset) positions into 1-based character columns,
    as editors count them: each line with an issue is encoded once and decoded piecewise
    between its issues, so any number of issues on one long line cost linear time."""

    def __init__(self, program: str) -> None:
        self.program = program
        self.lines: list[str] | None = None  # split on first use

    def columns(self, positions: list[tuple[int, int]]) -> list[int]:
        """The character column of each (line, byte offset); 0 where the line is 0."""
        wanted: dict[int, set[int]] = {}
        for line, offset in positions:
            if line > 0:
                wanted.setdefault(line, set()).add(max(offset, 0))
        found: dict[tuple[int, int], int] = {}
        for line, offsets in wanted.items():
            found.update(((line, offset), column) for offset, column in self._line_columns(line, offsets))
        return [found[line, max(offset, 0)] if line > 0 else 0 for line, offset in positions]

    def _line_columns(self, line: int, offsets: set[int]) -> Iterable[tuple[int, int]]:
        if self.lines is None:
            self.lines = source_lines(self.program)
        text = self.lines[line - 1] if line <= len(self.lines) else ""
        if text.isascii():
            return ((offset, offset + 1) for offset in offsets)
        encoded = text.encode("utf-8", "surrogatepass")
        columns, column, previous = [], 1, 0
        for offset in sorted(offsets):
            piece = encoded[previous:offset]
            column += len(piece.decode("utf-8", "replace")) + max(0, offset - max(previous, len(encoded)))
            previous = offset
            columns.append((offset, column))
        return columns


def _rebinding_message(name: str) -> str:
    return f"cannot assign to the tool '{name}'; choose another name"


def _quoted(name: str) -> str:
    """A name quoted for a message; a long one shortened, with its length."""
    if len(name) <= _SHOWN_NAME:
        return f"'{name}'"
    return f"'{name[:_SHOWN_NAME]}...' ({len(name):,} characters)"


def _takes_key_function(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in KEY_FUNCTION_CALLS
    return isinstance(func, ast.Attribute) and func.attr == "sort"


def _forbidden_node_message(node: ast.AST) -> str:
    name = type(node).__name__
    hint = NODE_HINTS.get(type(node), "it is not part of lackpy")
    return f"{name} is not allowed: {hint}"


# The nodes at one depth of a tree (None: the missing key of a dict's ** entry).
_Level = list[ast.AST | None]


class _Checker:
    """Every per-node check over one parsed program, in one breadth-first pass."""

    def __init__(self, positions: _Positions, allowed_names: Iterable[str] | None,
                 protected: set[str], deadline: float | None) -> None:
        self.positions = positions
        self.known = ALLOWED_BUILTINS.union(allowed_names) if allowed_names else ALLOWED_BUILTINS
        self.protected = protected
        self.deadline = deadline
        self.calls: list[str] = []
        self.variables: dict[str, None] = {}  # an ordered set
        self.bound: set[str] = set()
        self.unknown_loads: list[ast.Name] = []
        self.unknown_calls: list[ast.Name] = []
        self.key_lambdas: set[int] = set()
        self.found: list[tuple[int, int, str]] = []  # line, byte offset, message
        self.muted = False  # inside a forbidden node: its forbidden parts are not reported again
        self.suggestions_left = MAX_SUGGESTIONS
        self.candidates: list[str] | None = None

    def check(self, tree: ast.Module) -> Issue | None:
        """Check every node; return the nesting error if the tree is too deep (then nothing else)."""
        depth = 0
        level: _Level = [tree]
        muted_level: _Level = []
        while level or muted_level:
            if depth > MAX_NESTING:
                return self._too_deep(level + muted_level)
            next_level: _Level = []
            next_muted: _Level = []
            if level:
                self._visit(level, next_level, next_muted)
            if muted_level:
                self.muted = True
                self._visit(muted_level, next_muted, next_muted)
                self.muted = False
            level, muted_level, depth = next_level, next_muted, depth + 1
        self._report_unknown_names()
        return None

    def first_issues(self, limit: int) -> tuple[list[Issue], int]:
        """The first ``limit`` issues in the program's order, and how many more there are.

        Byte offsets order a line's issues as its characters do, so only the issues shown
        get a column and an Issue (a program can have hundreds of thousands).
        """
        found = self.found
        if len(found) > limit:
            found = heapq.nsmallest(limit, found, key=lambda issue: (issue[0], issue[1]))
        columns = self.positions.columns([(line, offset) for line, offset, _ in found])
        issues = [Issue(line, column, message)
                  for (line, _, message), column in zip(found, columns, strict=True)]
        return issues, len(self.found) - len(found)

    def _visit(self, nodes: _Level, out: _Level, muted_out: _Level) -> None:
        """Check ``nodes`` (one level of the tree) and add their children to ``out``."""
        if self.deadline is not None:
            _check_time(self.deadline)
        if len(nodes) > _CHUNK:
            for start in range(0, len(nodes), _CHUNK):
                self._visit(nodes[start:start + _CHUNK], out, muted_out)
            return
        push, extend, table = out.append, out.extend, _NODE_TABLE
        for node in nodes:
            if node is None:  # the key of a dict's ** entry
                continue
            entry = table.get(node.__class__)
            if entry is None:  # not allowed: reported once, with its parts muted
                if not self.muted:
                    self._report(node, _forbidden_node_message(node))
                muted_out.extend(ast.iter_child_nodes(node))
                continue
            check, fields = entry
            if check is not None:
                check(self, node)
            for name in fields:
                child = getattr(node, name)
                if child.__class__ is list:
                    extend(child)
                elif child is not None:
                    push(child)

    def _too_deep(self, level: _Level) -> Issue:
        starts = [(getattr(node, "lineno", 0), getattr(node, "col_offset", 0)) for node in level]
        line, offset = min((start for start in starts if start[0]), default=(0, 0))
        return Issue(line, self.positions.columns([(line, offset)])[0],
                     f"expression nested more than {MAX_NESTING} levels deep; "
                     "split it into steps with variables")

    def _report(self, node: ast.AST, message: str) -> None:
        self.found.append((getattr(node, "lineno", 0), getattr(node, "col_offset", 0), message))

    def _report_unknown_names(self) -> None:
        # Unknown until the whole tree is seen: a name may be bound on a later line.
        bound = self.bound
        call_names = {id(func) for func in self.unknown_calls}
        for node in self.unknown_loads:
            name = node.id
            if name in bound or id(node) in call_names or name in FORBIDDEN_NAMES or name[:2] == "__":
                continue  # forbidden and reserved names have their own error, calls theirs
            self._report(node, f"unknown name {_quoted(name)}: not a builtin, a kit tool, a "
                         "parameter or a variable; assign it before using it")
        for func in self.unknown_calls:
            if func.id not in bound:
                self._report(func, self._unknown_function_message(func.id))

    def _unknown_function_message(self, name: str) -> str:
        message = (f"unknown function {_quoted(name)}: not a builtin, a kit tool, "
                   "a parameter or a variable")
        close = self._close_names(name)
        if close:
            message += f"; did you mean {', '.join(close)}?"
        elif name in NAME_HINTS:
            message += f"; {NAME_HINTS[name]}"
        return message

    def _close_names(self, name: str) -> list[str]:
        if self.suggestions_left <= 0 or len(name) > MAX_SUGGESTED_NAME:
            return []
        self.suggestions_left -= 1
        if self.candidates is None:
            self.candidates = self._suggestion_candidates()
        import difflib  # here: only a program with an unknown name needs it

        return difflib.get_close_matches(name, self.candidates, n=3)

    def _suggestion_candidates(self) -> list[str]:
        """The kit's tools, the builtins, parameters and variables first, then the program's names."""
        candidates: list[str] = []
        for names in (self.known, self.bound - self.known):
            room = MAX_SUGGESTION_CANDIDATES - len(candidates)
            short = (name for name in names if len(name) <= _MAX_CANDIDATE_NAME)
            candidates += heapq.nsmallest(room, short)
        return candidates

    def _identifier_issue(self, node: ast.AST, name: str) -> None:
        if name in FORBIDDEN_NAMES:
            hint = NAME_HINTS.get(name, "it is not available in lackpy")
            self._report(node, f"the name '{name}' is forbidden: {hint}")
        elif name[:2] == "__":
            self._report(node, f"names starting with '__' are reserved: rename {_quoted(name)}")

    def _operator_issue(self, node: ast.AST, operator: ast.AST) -> None:
        if not self.muted:
            self._report(node, _forbidden_node_message(operator))

    def _collect_variables(self, target: ast.AST) -> None:
        """Add the names an assignment target binds, left to right (a, (b, *c) = ...)."""
        if target.__class__ is ast.Name:
            self.variables[target.id] = None
            return
        stack = [target]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Name):
                self.variables[node.id] = None
            elif isinstance(node, (ast.Tuple, ast.List)):
                stack.extend(reversed(node.elts))
            elif isinstance(node, ast.Starred):
                stack.append(node.value)

    # One check per node type (in _CHECKS below); a node's children are visited after it.

    def _check_Name(self, node: ast.Name) -> None:
        name = node.id
        if name in FORBIDDEN_NAMES or name[:2] == "__":
            self._identifier_issue(node, name)
        context = node.ctx.__class__
        if context is ast.Load:
            if name not in self.known:
                self.unknown_loads.append(node)
            return
        if context is ast.Store:
            self.bound.add(name)
            if name in ALLOWED_BUILTINS:
                self._report(node, f"cannot assign to the builtin '{name}'; choose another name")
        if name in self.protected:
            self._report(node, _rebinding_message(name))

    def _check_arg(self, node: ast.arg) -> None:
        name = node.arg
        self._identifier_issue(node, name)
        self.bound.add(name)
        if name in self.protected:
            self._report(node, _rebinding_message(name))

    def _check_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if attr[:1] == "_":
            self._report(
                node,
                f"attribute {_quoted('.' + attr)} is private: lackpy allows no attribute starting "
                "with '_'; use the value's public methods or dict keys",
            )
        elif attr in DENIED_ATTRIBUTES or DENIED_ATTRIBUTE_PATTERN.match(attr):
            hint = "use an f-string" if attr.startswith("format") else "it is not available"
            self._report(node, f"attribute '.{attr}' is forbidden: {hint}")
        if node.ctx.__class__ is not ast.Load:
            self._report(node, f"cannot assign to the attribute {_quoted('.' + attr)}; "
                         "use a dict and d[key]")

    def _check_Call(self, node: ast.Call) -> None:
        func = node.func
        if func.__class__ is ast.Name:
            name = func.id
            self.calls.append(name)
            if name not in self.known and name not in FORBIDDEN_NAMES:
                self.unknown_calls.append(func)
        elif func.__class__ is not ast.Attribute:
            self._report(
                node,
                "only named functions and methods can be called; "
                "assign the value to a variable first",
            )
        if node.keywords and _takes_key_function(func):
            for keyword in node.keywords:
                if keyword.arg == "key" and keyword.value.__class__ is ast.Lambda:
                    self.key_lambdas.add(id(keyword.value))

    def _check_Lambda(self, node: ast.Lambda) -> None:
        if id(node) not in self.key_lambdas:
            self._report(node, "lambda is only allowed as the key= of sorted, min, max, sort_by "
                         "or .sort, as in sorted(rows, key=lambda r: r['n'])")
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
            self._report(node, "a lambda takes plain positional parameters only: lambda x: ...")

    def _check_For(self, node: ast.For) -> None:
        self._collect_variables(node.target)
        if node.iter.__class__ not in (ast.Call, ast.Name):
            self._report(
                node.iter,
                "a for loop must iterate over a function call or a variable; "
                "assign the collection to a variable first",
            )

    def _check_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._collect_variables(target)

    def _check_AugAssign(self, node: ast.AugAssign) -> None:
        self._collect_variables(node.target)
        if node.op.__class__ not in ALLOWED_NODES:
            self._operator_issue(node, node.op)

    def _check_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._collect_variables(node.target)

    def _check_withitem(self, node: ast.withitem) -> None:
        if node.optional_vars is not None:
            self._collect_variables(node.optional_vars)

    def _check_comprehension(self, node: ast.comprehension) -> None:
        if node.is_async:
            self._report(node.target, "async comprehensions are not part of lackpy")

    def _check_Constant(self, node: ast.Constant) -> None:
        value = node.value
        if value.__class__ is str:
            if "__" in value and _DUNDER_FIELD.search(value):
                self._report(node, "strings with '__' inside a {} field are forbidden "
                                   "(attribute access through a format string); a path or "
                                   "name such as 'pkg/__init__.py' is fine")
        elif isinstance(value, bytes):
            self._report(node, "bytes literals are not part of lackpy; use a str")

    # Operators are checked by the node that holds them (the common case is one set lookup).

    def _check_BinOp(self, node: ast.BinOp) -> None:
        if node.op.__class__ not in ALLOWED_NODES:
            self._operator_issue(node, node.op)

    def _check_UnaryOp(self, node: ast.UnaryOp) -> None:
        if node.op.__class__ not in ALLOWED_NODES:
            self._operator_issue(node, node.op)

    def _check_BoolOp(self, node: ast.BoolOp) -> None:
        if node.op.__class__ not in ALLOWED_NODES:
            self._operator_issue(node, node.op)

    def _check_Compare(self, node: ast.Compare) -> None:
        for operator in node.ops:
            if operator.__class__ not in ALLOWED_NODES:
                self._operator_issue(node, operator)


_CHECKS: dict[type[ast.AST], Callable[[_Checker, ast.AST], None]] = {
    getattr(ast, name.removeprefix("_check_")): check
    for name, check in vars(_Checker).items()
    if name.startswith("_check_")
}

# The fields of each allowed node that hold other nodes. Contexts and operators
# are not visited on their own: the check of the node that holds them looks at them.
_CHILD_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {
    ast.Module: ("body",),
    ast.Expr: ("value",),
    ast.Assign: ("targets", "value"),
    ast.AugAssign: ("target", "value"),
    ast.AnnAssign: ("target", "annotation", "value"),
    ast.For: ("target", "iter", "body", "orelse"),
    ast.If: ("test", "body", "orelse"),
    ast.With: ("items", "body"),
    ast.withitem: ("context_expr", "optional_vars"),
    ast.Call: ("func", "args", "keywords"),
    ast.Name: (),
    ast.Attribute: ("value",),
    ast.Subscript: ("value", "slice"),
    ast.List: ("elts",),
    ast.Tuple: ("elts",),
    ast.Set: ("elts",),
    ast.Dict: ("keys", "values"),
    ast.ListComp: ("elt", "generators"),
    ast.SetComp: ("elt", "generators"),
    ast.DictComp: ("key", "value", "generators"),
    ast.comprehension: ("target", "iter", "ifs"),
    ast.Compare: ("left", "comparators"),
    ast.BoolOp: ("values",),
    ast.UnaryOp: ("operand",),
    ast.BinOp: ("left", "right"),
    ast.IfExp: ("test", "body", "orelse"),
    ast.JoinedStr: ("values",),
    ast.FormattedValue: ("value", "format_spec"),
    ast.Constant: (),
    ast.Starred: ("value",),
    ast.Slice: ("lower", "upper", "step"),
    ast.Lambda: ("args", "body"),
    ast.arguments: ("posonlyargs", "args", "vararg", "kwonlyargs", "kw_defaults", "kwarg", "defaults"),
    ast.arg: ("annotation",),
    ast.keyword: ("value",),
}
# Contexts and operators have no fields. A new allowed node type with fields and no
# entry above fails here, at import, rather than going unchecked.
_CHILD_FIELDS.update({kind: () for kind in ALLOWED_NODES - _CHILD_FIELDS.keys() if not kind._fields})

# Each allowed node type's check (or None) and child fields, in one lookup.
_NODE_TABLE: dict[type[ast.AST], tuple[Callable[[_Checker, ast.AST], None] | None, tuple[str, ...]]] = {
    kind: (_CHECKS.get(kind), _CHILD_FIELDS[kind]) for kind in ALLOWED_NODES
}
