"""Which names a program reads from outside itself: its free names."""

from __future__ import annotations

import ast

from .grammar import MAX_PROGRAM_CHARS


def free_names(program: str) -> frozenset[str]:
    """The names ``program`` reads before it binds them (in the order it runs): what it needs
    from its caller (tools, parameters, a session's variables). A name bound in one branch
    of an ``if`` counts as bound after it. Returns an empty set for text that does not parse
    and for a program over ``MAX_PROGRAM_CHARS`` (validation refuses it unparsed; parsing
    it here took seconds).
    """
    if len(program) > MAX_PROGRAM_CHARS:
        return frozenset()
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return frozenset()
    reader = _Reader()
    try:
        reader.visit(tree)
    except RecursionError:
        return frozenset()
    return frozenset(reader.free)


class _Reader(ast.NodeVisitor):
    """Visits a module in the order it runs, noting each name loaded before it is bound."""

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.free: set[str] = set()

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            if node.id not in self.bound:
                self.free.add(node.id)
        else:
            self.bound.add(node.id)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self.visit(target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name):
            self.visit_Name(ast.Name(node.target.id, ast.Load()))
        self.visit(node.value)
        self.visit(node.target)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self.visit(node.target)

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        self.visit(node.target)
        for statement in (*node.body, *node.orelse):
            self.visit(statement)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._scoped([arg.arg for arg in _arguments(node.args)], [node.args, node.body])

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self._comprehension(node.generators, [node.elt])

    def visit_SetComp(self, node: ast.SetComp) -> None:
        self._comprehension(node.generators, [node.elt])

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        self._comprehension(node.generators, [node.elt])

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node.generators, [node.key, node.value])

    def _comprehension(self, generators: list[ast.comprehension], results: list[ast.expr]) -> None:
        """A comprehension's targets are its own: bound inside it, unbound after it."""
        outer = set(self.bound)
        for generator in generators:
            self.visit(generator.iter)
            self.visit(generator.target)
            for condition in generator.ifs:
                self.visit(condition)
        for result in results:
            self.visit(result)
        self.bound = outer

    def _scoped(self, names: list[str], nodes: list[ast.AST]) -> None:
        outer = set(self.bound)
        self.bound.update(names)
        for node in nodes:
            self.visit(node)
        self.bound = outer


def _arguments(args: ast.arguments) -> list[ast.arg]:
    extra = [arg for arg in (args.vararg, args.kwarg) if arg is not None]
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *extra]
