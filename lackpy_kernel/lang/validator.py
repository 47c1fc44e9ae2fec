"""Validate a lackpy program: parse, then check every node against the grammar."""

from __future__ import annotations

import ast
import copy
import difflib
import re
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

Rule = Callable[[ast.Module], list[str]]

_ISSUE_TEXT = re.compile(r"^line (\d+), col (\d+): (.*)$", re.DOTALL)
_NEWLINE = re.compile(r"\r\n|\r|\n")
MAX_ISSUES = 100
MAX_SUGGESTIONS = 20


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
        """Read back an issue written by ``str(issue)`` or a rule's message."""
        match = _ISSUE_TEXT.match(text)
        if match:
            return cls(int(match[1]), int(match[2]), match[3])
        return cls(0, 0, text)


def issue_at(node: ast.AST, message: str) -> str:
    """Format ``message`` at ``node``'s position, as rules report their errors."""
    line = getattr(node, "lineno", 0)
    return str(Issue(line, getattr(node, "col_offset", 0) + 1 if line else 0, message))


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


def validate(
    program: str,
    allowed_names: Iterable[str] | None = None,
    extra_rules: list[Rule] | None = None,
) -> ValidationResult:
    """Validate ``program`` against the lackpy grammar.

    ``allowed_names`` are the names a program may call besides the builtins:
    kit tools, parameters and session variables. ``extra_rules`` are callables
    ``(ast.Module) -> list[str]`` that can only add errors. All errors are
    collected; the caller never sees an exception for a bad program.
    """
    tree, problem = _parse(program)
    if tree is None:
        return _invalid([problem])
    checker = _Checker(program, set(allowed_names or ()))
    issues = checker.check(tree)
    issues.extend(_apply_rules(extra_rules or [], tree))
    issues.sort(key=lambda issue: (issue.line, issue.col))
    if len(issues) > MAX_ISSUES:
        hidden = len(issues) - MAX_ISSUES
        issues = [*issues[:MAX_ISSUES], Issue(0, 0, f"... and {hidden} more errors")]
    return ValidationResult(
        valid=not issues,
        errors=[str(issue) for issue in issues],
        calls=checker.calls,
        variables=checker.variables,
        issues=issues,
        tree=tree if not issues else None,
    )


def _invalid(issues: list[Issue]) -> ValidationResult:
    return ValidationResult(False, [str(i) for i in issues], issues=issues)


def _parse(program: object) -> tuple[ast.Module | None, Issue | None]:
    if not isinstance(program, str):
        return None, Issue(0, 0, f"a program must be text (str), not {type(program).__name__}")
    if len(program) > MAX_PROGRAM_CHARS:
        return None, Issue(
            0, 0, f"program is {len(program):,} characters; the limit is {MAX_PROGRAM_CHARS:,}"
        )
    if "\0" in program:
        offset = program.index("\0")
        line_start = program.rfind("\n", 0, offset) + 1
        line = program.count("\n", 0, offset) + 1
        return None, Issue(line, offset - line_start + 1, "program contains a NUL byte; remove it")
    try:
        tree = ast.parse(program, "<lackpy>")
    except SyntaxError as exc:
        return None, Issue(exc.lineno or 0, exc.offset or 0, f"syntax error: {exc.msg}")
    except (RecursionError, MemoryError):
        return None, Issue(0, 0, "program is nested too deeply to parse; flatten it")
    except ValueError as exc:
        return None, Issue(0, 0, f"program cannot be parsed: {exc}")
    too_deep = _too_deep(tree)
    if too_deep is not None:
        return None, Issue(
            *_position_of(too_deep),
            f"expression nested more than {MAX_NESTING} levels deep; "
            "split it into steps with variables",
        )
    return tree, None


def _too_deep(tree: ast.AST) -> ast.AST | None:
    """The first positioned node nested deeper than MAX_NESTING, if any."""
    stack = [(tree, 0, tree)]
    while stack:
        node, depth, positioned = stack.pop()
        if hasattr(node, "lineno"):
            positioned = node
        if depth > MAX_NESTING:
            return positioned
        stack.extend((child, depth + 1, positioned) for child in ast.iter_child_nodes(node))
    return None


def _position_of(node: ast.AST) -> tuple[int, int]:
    line = getattr(node, "lineno", 0)
    return line, (getattr(node, "col_offset", 0) + 1) if line else 0


def _apply_rules(rules: list[Rule], tree: ast.Module) -> list[Issue]:
    if not rules:
        return []
    view = copy.deepcopy(tree)  # a rule must not change the tree that will be compiled
    issues = []
    for rule in rules:
        name = getattr(rule, "__name__", repr(rule))
        try:
            issues.extend(Issue.from_text(str(message)) for message in rule(view))
        except Exception as exc:  # a broken rule is a validation error, not a crash
            issues.append(Issue(0, 0, f"rule {name} failed: {type(exc).__name__}: {exc}"))
    return issues


def _target_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _target_names(element)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _assigned_targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
        return [node.target]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [node.optional_vars]
    return []


class _Checker:
    """Runs every per-node check over one parsed program."""

    def __init__(self, source: str, allowed_names: set[str]) -> None:
        self.lines = source_lines(source)
        self.suggestions_left = MAX_SUGGESTIONS
        self.sorted_names: list[str] | None = None
        self.allowed = allowed_names
        self.calls: list[str] = []
        self.variables: list[str] = []
        self.issues: list[Issue] = []
        self.parents: dict[int, ast.AST] = {}

    def check(self, tree: ast.Module) -> list[Issue]:
        nodes = list(ast.walk(tree))
        for node in nodes:
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
        self._collect_variables(nodes)
        bound = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        bound |= {n.arg for n in nodes if isinstance(n, ast.arg)}
        self.callable_names = ALLOWED_BUILTINS | self.allowed | bound
        for node in nodes:
            self._check_node(node)
        return self.issues

    def _collect_variables(self, nodes: list[ast.AST]) -> None:
        for node in nodes:
            for target in _assigned_targets(node):
                for name in _target_names(target):
                    if name not in self.variables:
                        self.variables.append(name)

    def _inside_forbidden(self, node: ast.AST) -> bool:
        # Report a forbidden statement once, not again for each of its parts.
        while id(node) in self.parents:
            node = self.parents[id(node)]
            if type(node) not in ALLOWED_NODES:
                return True
        return False

    def _report(self, node: ast.AST, message: str) -> None:
        while not hasattr(node, "lineno") and id(node) in self.parents:
            node = self.parents[id(node)]
        line = getattr(node, "lineno", 0)
        self.issues.append(Issue(line, self._column(node) if line else 0, message))

    def _column(self, node: ast.AST) -> int:
        # col_offset counts UTF-8 bytes; report characters, as editors do.
        line_text = self.lines[node.lineno - 1] if node.lineno <= len(self.lines) else ""
        prefix = line_text.encode("utf-8")[: node.col_offset]
        return len(prefix.decode("utf-8", errors="replace")) + 1

    def _check_node(self, node: ast.AST) -> None:
        if type(node) not in ALLOWED_NODES:
            if not self._inside_forbidden(node):
                self._report(node, _forbidden_node_message(node))
            return
        check = getattr(self, f"_check_{type(node).__name__}", None)
        if check is not None:
            check(node)

    def _check_Name(self, node: ast.Name) -> None:
        self._check_identifier(node, node.id)
        if isinstance(node.ctx, ast.Store) and node.id in ALLOWED_BUILTINS:
            self._report(node, f"cannot assign to the builtin '{node.id}'; choose another name")
        elif isinstance(node.ctx, ast.Load) and not self._is_known(node):
            self._report(node, f"unknown name '{node.id}': not a builtin, a kit tool, a parameter "
                         "or a variable; assign it before using it")

    def _is_known(self, node: ast.Name) -> bool:
        name = node.id
        if name in self.callable_names or name in FORBIDDEN_NAMES or name.startswith("__"):
            return True  # forbidden and reserved names have their own error
        parent = self.parents.get(id(node))
        return isinstance(parent, ast.Call) and parent.func is node  # reported as a call

    def _check_arg(self, node: ast.arg) -> None:
        self._check_identifier(node, node.arg)

    def _check_identifier(self, node: ast.AST, name: str) -> None:
        if name in FORBIDDEN_NAMES:
            hint = NAME_HINTS.get(name, "it is not available in lackpy")
            self._report(node, f"the name '{name}' is forbidden: {hint}")
        elif name.startswith("__"):
            self._report(node, f"names starting with '__' are reserved: rename '{name}'")

    def _check_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if attr.startswith("_"):
            self._report(
                node,
                f"attribute '.{attr}' is private: lackpy allows no attribute starting "
                "with '_'; use the value's public methods or dict keys",
            )
        elif attr in DENIED_ATTRIBUTES or DENIED_ATTRIBUTE_PATTERN.match(attr):
            hint = "use an f-string" if attr.startswith("format") else "it is not available"
            self._report(node, f"attribute '.{attr}' is forbidden: {hint}")
        if not isinstance(node.ctx, ast.Load):
            self._report(node, f"cannot assign to the attribute '.{attr}'; use a dict and d[key]")

    def _check_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            self.calls.append(func.id)
            if func.id not in self.callable_names and func.id not in FORBIDDEN_NAMES:
                self._report(func, self._unknown_function_message(func.id))
        elif not isinstance(func, ast.Attribute):
            self._report(
                node,
                "only named functions and methods can be called; "
                "assign the value to a variable first",
            )

    def _unknown_function_message(self, name: str) -> str:
        message = f"unknown function '{name}': not a builtin, a kit tool, a parameter or a variable"
        # Suggestions cost a scan of every name: only the first few unknown names get them.
        self.suggestions_left -= 1
        close = []
        if self.suggestions_left >= 0:
            if self.sorted_names is None:
                self.sorted_names = sorted(self.callable_names)
            close = difflib.get_close_matches(name, self.sorted_names, n=3)
        if close:
            message += f"; did you mean {', '.join(close)}?"
        elif name in NAME_HINTS:
            message += f"; {NAME_HINTS[name]}"
        return message

    def _check_For(self, node: ast.For) -> None:
        if not isinstance(node.iter, (ast.Call, ast.Name)):
            self._report(
                node.iter,
                "a for loop must iterate over a function call or a variable; "
                "assign the collection to a variable first",
            )

    def _check_Lambda(self, node: ast.Lambda) -> None:
        keyword = self.parents.get(id(node))
        call = self.parents.get(id(keyword))
        is_key = isinstance(keyword, ast.keyword) and keyword.arg == "key"
        if not (is_key and isinstance(call, ast.Call) and _takes_key_function(call)):
            self._report(node, "lambda is only allowed as the key= of sorted, min, max or "
                         ".sort, as in sorted(rows, key=lambda r: r['n'])")
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
            self._report(node, "a lambda takes plain positional parameters only: lambda x: ...")

    def _check_comprehension(self, node: ast.comprehension) -> None:
        if node.is_async:
            self._report(node.target, "async comprehensions are not part of lackpy")

    def _check_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and "__" in node.value:
            self._report(node, "strings containing '__' are forbidden (dunder access)")
        elif isinstance(node.value, bytes):
            self._report(node, "bytes literals are not part of lackpy; use a str")


def _takes_key_function(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in KEY_FUNCTION_CALLS
    return isinstance(func, ast.Attribute) and func.attr == "sort"


def _forbidden_node_message(node: ast.AST) -> str:
    name = type(node).__name__
    hint = NODE_HINTS.get(type(node), "it is not part of lackpy")
    return f"{name} is not allowed: {hint}"
