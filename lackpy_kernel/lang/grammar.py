"""The lackpy grammar: which AST nodes, names and attributes a program may use."""

from __future__ import annotations

import ast
import re

ALLOWED_NODES: frozenset[type[ast.AST]] = frozenset({
    # statements
    ast.Module, ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign,
    ast.For, ast.If, ast.With, ast.withitem,
    # expressions
    ast.Call, ast.Name, ast.Attribute, ast.Subscript,
    ast.List, ast.Dict, ast.Tuple, ast.Set,
    ast.ListComp, ast.DictComp, ast.SetComp, ast.comprehension,
    ast.Compare, ast.BoolOp, ast.UnaryOp, ast.BinOp, ast.IfExp,
    ast.JoinedStr, ast.FormattedValue, ast.Constant, ast.Starred, ast.Slice,
    # lambda, only as a key= argument (the validator enforces where)
    ast.Lambda, ast.arguments, ast.arg, ast.keyword,
    # contexts and operators
    ast.Load, ast.Store, ast.Del,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Mod, ast.FloorDiv,
    ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
    ast.Is, ast.IsNot, ast.In, ast.NotIn,
    ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd,
})

FORBIDDEN_NODES: frozenset[type[ast.AST]] = frozenset({
    ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
    ast.While, ast.Try, ast.TryStar, ast.ExceptHandler, ast.Raise, ast.Global, ast.Nonlocal,
    ast.Yield, ast.YieldFrom, ast.Await, ast.AsyncFor, ast.AsyncWith,
    ast.Assert, ast.Delete, ast.Match,
})

FORBIDDEN_NAMES: frozenset[str] = frozenset({
    "__import__", "open", "globals", "locals", "vars", "dir",
    "getattr", "setattr", "delattr", "hasattr",
    "__builtins__", "__build_class__", "breakpoint", "exit", "quit",
    "type", "super", "classmethod", "staticmethod", "property",
    "memoryview", "bytearray", "bytes", "map", "filter", "reduce", "input",
    "eval", "exec", "compile",
    "os", "sys", "pathlib", "subprocess", "shutil",
})

ALLOWED_BUILTINS: frozenset[str] = frozenset({
    "len", "sorted", "reversed", "enumerate", "zip", "range",
    "min", "max", "sum", "any", "all", "abs", "round",
    "str", "int", "float", "bool", "list", "dict", "set", "tuple",
    "isinstance", "print", "sort_by",
})

# The calls whose key= may be a lambda; anywhere else a lambda could be stored and called.
KEY_FUNCTION_CALLS: frozenset[str] = frozenset({"sorted", "min", "max", "sort_by"})

# Attributes without a leading underscore that still open a way out of the
# data: string formatting walks attributes of its arguments at run time, and
# frame, generator, coroutine, traceback and code objects expose namespaces.
DENIED_ATTRIBUTES: frozenset[str] = frozenset({
    "format", "format_map", "mro", "func_globals", "func_code",
})
DENIED_ATTRIBUTE_PATTERN = re.compile(r"^(f|gi|cr|ag|tb|co)_")

# Limits that keep the validator itself, and compile(), safe on hostile input.
MAX_PROGRAM_CHARS = 1_000_000
MAX_NESTING = 200

NODE_HINTS: dict[type[ast.AST], str] = {
    ast.Import: "use the kit's tools instead of importing modules",
    ast.ImportFrom: "use the kit's tools instead of importing modules",
    ast.FunctionDef: "compose tools and expressions directly; programs cannot define functions",
    ast.AsyncFunctionDef: "compose tools and expressions directly; programs cannot define functions",
    ast.ClassDef: "use dicts and lists for data; programs cannot define classes",
    ast.While: "use a for loop over range(n) or a list",
    ast.Try: "errors stop the program; check values with if before using them",
    ast.TryStar: "errors stop the program; check values with if before using them",
    ast.Raise: "a program cannot raise; return or print a message instead",
    ast.Assert: "use if to check a condition",
    ast.Delete: "assign a new value instead of deleting",
    ast.GeneratorExp: "use a list comprehension [...] instead",
    ast.NamedExpr: "assign with = on its own line",
    ast.Pow: "** is not part of lackpy; multiply instead",
    ast.Lambda: "lambda is only allowed as a key= argument",
    ast.Match: "use if/elif",
    ast.Global: "all assignments are already global to the program",
    ast.Nonlocal: "all assignments are already global to the program",
}

NAME_HINTS: dict[str, str] = {
    "open": "use read_file(path) or write_file(path, content)",
    "os": "use the kit's file tools",
    "pathlib": "use the kit's file tools",
    "shutil": "use the kit's file tools",
    "subprocess": "lackpy programs cannot run commands",
    "map": "use a list comprehension",
    "filter": "use a list comprehension with if",
    "getattr": "use d[key] or d.get(key) on dicts",
    "hasattr": "use key in d on dicts",
    "type": "use isinstance(value, str)",
    "format": "use an f-string",
    "repr": "use str(value) or an f-string with !r",
}
