"""Run validated lackpy programs in a restricted namespace, in this process."""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import re
import types
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from lackpy_kernel import errors
from lackpy_kernel.kit import effects
from lackpy_kernel.lang import ALLOWED_BUILTINS, Issue, Rule, ValidationResult, validate
from lackpy_kernel.lang import no_rebinding as no_rebinding  # re-exported: lackpy_kernel.run
from lackpy_kernel.lang.validator import source_lines

from .plain import display_problem, find_non_plain
from .trace import Trace, make_traced, summarize

PROGRAM_FILENAME = "<lackpy>"
OUTPUT_NAME = "__lackpy_output__"  # programs cannot name it: '__' names are reserved
_FUNCTION = "__lackpy_program__"  # the function a program's statements are compiled into
_LOCALS = "__lackpy_locals__"  # ``locals`` for that function, in its globals
# where the nodes a loop's function adds to the program's tree are placed: its first line
_FIRST_LINE: dict[str, Any] = {"lineno": 1, "col_offset": 0, "end_lineno": 1,
                               "end_col_offset": 0}
_UNBOUND = re.compile(r"cannot access (?:local|free) variable '([^']+)'")
STDOUT_LIMIT = 1_000_000
VALIDATION_ERROR = "LackpyValidationError"
KIT_ERROR = "KitError"
CHANGE_REFUSED = "ChangeRefusedError"  # the error_type of a program whose file changes were refused
# A run of characters between ASCII punctuation and whitespace: every identifier is one
# (outside strings, Python separates tokens only with those), combining marks and the
# other identifier characters that ``\w`` does not match included.
_WORD = re.compile(r"[^\s!-/:-@\[-^`{-~]+")
# error_type -> the exception raise_for_error raises (programs cannot raise: no `raise` in lackpy).
_FAILURES: dict[str, type[errors.LackpyRuntimeError]] = {
    "TimeoutError": errors.ProgramTimeoutError,
    "MemoryError": errors.ProgramMemoryError,
    "ResultTooLarge": errors.ResultTooLargeError,
    "KeyboardInterrupt": errors.ProgramInterrupted,
    "SandboxError": errors.SandboxError,
    CHANGE_REFUSED: errors.ChangeRefusedError,
}


@dataclass
class ExecutionResult:
    """What running a program produced.

    ``output`` is the last expression's value; ``variables`` the program's
    variables afterwards (session variables included, parameters and tools
    not); ``stdout`` what it printed. On failure ``error`` says what went
    wrong, ``error_type`` names it and ``error_line`` points into the program;
    ``issues`` hold validation errors with their positions.
    """

    success: bool
    output: Any = None
    error: str | None = None
    trace: Trace = field(default_factory=Trace)
    variables: dict[str, Any] = field(default_factory=dict)
    stdout: str = ""
    error_type: str | None = None
    error_line: int | None = None
    issues: list[Issue] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (the output and variables are passed as they are)."""
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["trace"] = self.trace.to_dict()
        data["issues"] = [asdict(issue) for issue in self.issues]
        return data

    def __repr__(self) -> str:
        # Bounded: the output and variables may be huge or shared many times over.
        shown = f"output={summarize(self.output)!r}" if self.success else f"error={self.error!r}"
        return (f"ExecutionResult(success={self.success}, {shown}, error_type={self.error_type!r}, "
                f"variables={sorted(self.variables)[:20]!r}, tool_calls={len(self.trace.entries)})")

    def raise_for_error(self) -> ExecutionResult:
        """This result when it succeeded; otherwise raise the ProgramError that says why.

        Raises LackpyValidationError, LackpyRuntimeError, a LimitError, ProgramInterrupted,
        SandboxError or KitError, each carrying this result as ``result``.
        """
        if self.success:
            return self
        message = self.error or f"{self.error_type or 'the program'} failed"
        if self.error_type == VALIDATION_ERROR:
            listed = "\n".join(f"  {issue}" for issue in self.issues) or f"  {message}"
            raise errors.LackpyValidationError(f"invalid lackpy program:\n{listed}",
                                               issues=self.issues, result=self)
        if self.error_type == KIT_ERROR:
            raise errors.KitError(message)
        kind = _FAILURES.get(self.error_type or "", errors.LackpyRuntimeError)
        raise kind(message, error_type=self.error_type, error_line=self.error_line, result=self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExecutionResult:
        """Rebuild a result from ``to_dict``'s output."""
        values = dict(data)
        values["trace"] = Trace.from_dict(values.get("trace", {}))
        values["issues"] = [Issue(**issue) for issue in values.get("issues", [])]
        return cls(**values)


def validation_failure(issues: list[Issue]) -> ExecutionResult:
    """The result for a program that did not pass validation."""
    error = "invalid program:\n" + "\n".join(f"  {issue}" for issue in issues)
    first_line = next((issue.line for issue in issues if issue.line), None)
    return ExecutionResult(
        False, error=error, error_type=VALIDATION_ERROR, error_line=first_line, issues=issues
    )


def names_in(program: str) -> set[str]:
    """Every word of ``program`` (after NFKC, as Python reads identifiers): a superset of the
    names it uses, whatever letters, digits and marks they are made of."""
    return set(_WORD.findall(unicodedata.normalize("NFKC", program)))


class RestrictedRunner:
    """Validate, compile and run lackpy programs with empty ``__builtins__``.

    ``max_tool_calls`` caps the tool calls of each program (None: no cap); a call past
    it raises ToolCallBudgetError in the program, however the calls are made
    (``sorted(paths, key=read_file)`` makes one per path).
    """

    def __init__(self, *, max_tool_calls: int | None = None) -> None:
        self.max_tool_calls = max_tool_calls

    def run(
        self,
        program: str,
        namespace: Mapping[str, Callable[..., Any]],
        params: Mapping[str, Any] | None = None,
        variables: Mapping[str, Any] | None = None,
        extra_rules: list[Rule] | None = None,
        on_file_modified: Callable[[str], None] | None = None,
        *,
        sources: Mapping[str, str] | None = None,
        kibitzer_session: Any = None,
    ) -> ExecutionResult:
        """Run ``program`` with the tools in ``namespace``.

        ``params`` are named inputs; ``variables`` are session variables from
        earlier programs; ``on_file_modified`` hears of each file a tool
        changes, as it happens. Every tool call is traced, with the tool's
        source from ``sources`` (name -> ``ToolSpec.source``), and goes through
        ``kibitzer_session`` (see ``make_traced``) when one is given. Returns a
        failed result, never raises, for invalid programs and runtime errors.
        """
        params = dict(params or {})
        variables = dict(variables or {})
        check = validate(program, {*namespace, *params, *variables}, extra_rules,
                         protected_names=namespace)
        return self.run_validated(program, check, namespace, params, variables,
                                  on_file_modified=on_file_modified, sources=sources,
                                  kibitzer_session=kibitzer_session)

    def run_validated(
        self,
        program: str,
        check: ValidationResult,
        namespace: Mapping[str, Callable[..., Any]],
        params: Mapping[str, Any] | None = None,
        variables: Mapping[str, Any] | None = None,
        *,
        on_file_modified: Callable[[str], None] | None = None,
        sources: Mapping[str, str] | None = None,
        kibitzer_session: Any = None,
    ) -> ExecutionResult:
        """Run the tree ``check`` holds, the validator's verdict on ``program`` with these
        tools, parameters and variables, without validating again (``sources`` and
        ``kibitzer_session`` as for ``run``). An invalid ``check`` gives its failed result.
        Never raises for the program's own errors."""
        if not check.valid or check.tree is None:
            return validation_failure(check.issues)
        return self._execute(program, check.tree, namespace, dict(params or {}),
                             dict(variables or {}), on_file_modified, dict(sources or {}),
                             kibitzer_session)

    def _execute(self, program: str, tree: ast.Module,
                 namespace: Mapping[str, Callable[..., Any]], params: dict[str, Any],
                 variables: dict[str, Any], on_file_modified: Callable[[str], None] | None,
                 sources: dict[str, str], kibitzer_session: Any = None) -> ExecutionResult:
        trace = Trace()
        stdout = BoundedText(STDOUT_LIMIT)
        scope: dict[str, Any] = {"__builtins__": {}}
        scope.update(safe_builtins(stdout))
        scope.update(variables)
        scope.update(params)
        budget = CallBudget(self.max_tool_calls)
        named = names_in(program)  # the only tools it can reach: a kit may have hundreds
        scope.update({name: plain_tool(name, fn, trace, budget=budget,
                                       source=sources.get(name, ""),
                                       kibitzer_session=kibitzer_session)
                      for name, fn in namespace.items() if name in named})
        with effects.recording(on_file_modified) as log:
            try:
                scope.update(_run_compiled(_compile(tree, scope), scope))
            except Exception as raised:
                exc = _as_unbound(raised)
                error, line = describe_runtime_error(exc, program)
                trace.files_read, trace.files_modified = log.files_read, log.files_modified
                return ExecutionResult(
                    False, error=error, trace=trace, stdout=stdout.getvalue(),
                    error_type=type(exc).__name__, error_line=line,
                )
        trace.files_read, trace.files_modified = log.files_read, log.files_modified
        output = scope.pop(OUTPUT_NAME, None)
        notes = []
        problem = display_problem(output)
        if problem is not None:
            notes.append(f"the output is {problem}; it is shown as a summary")
            output = summarize(output)
        hidden = {"__builtins__", "__annotations__", _LOCALS, *ALLOWED_BUILTINS, *namespace,
                  *params}
        kept = {name: value for name, value in scope.items() if name not in hidden}
        return ExecutionResult(True, output, trace=trace, variables=kept,
                               stdout=stdout.getvalue(), notes=notes)


def _run_compiled(code: types.CodeType, scope: dict[str, Any]) -> dict[str, Any]:
    """Run ``_compile``'s code in ``scope``: the module's, or, for a loop's program, the
    function's with ``scope`` as its globals and its arguments; the variables it bound
    (none for a module's: they are in ``scope`` already)."""
    if code.co_name != _FUNCTION:
        exec(code, scope)
        return {}
    scope[_LOCALS] = locals  # what its last statement calls
    given = code.co_varnames[:code.co_argcount]
    values: dict[str, Any] = types.FunctionType(code, scope)(*[scope[name] for name in given])
    return values


def _compile(tree: ast.Module, scope: Mapping[str, Any]) -> types.CodeType:
    """The validated tree's code, storing a final expression's value as the output.

    A program with a ``for`` loop becomes the body of a function (its names are then fast
    locals: a 10,000-item loop runs about twice as fast as with a module's dict, for some
    more compile time) that returns its variables (``locals()``); each name the program
    binds that ``scope`` holds is an argument of it, given its value there, so that a
    program can read a session variable and then assign it. Any other program is compiled
    as a module."""
    body = list(tree.body)
    if body and isinstance(body[-1], ast.Expr):
        last = body[-1]
        target = ast.copy_location(ast.Name(OUTPUT_NAME, ast.Store()), last)
        body[-1] = ast.copy_location(ast.Assign(targets=[target], value=last.value), last)
    if not _loops(body):
        return compile(ast.Module(body=body, type_ignores=[]), PROGRAM_FILENAME, "exec")
    given = [ast.arg(name, **_FIRST_LINE) for name in sorted(_bound_names(body))
             if name in scope]
    done = ast.Return(ast.Call(ast.Name(_LOCALS, ast.Load(), **_FIRST_LINE), [], [],
                               **_FIRST_LINE), **_FIRST_LINE)
    function = ast.FunctionDef(_FUNCTION, ast.arguments([], given, None, [], [], None, []),
                               [*body, done], [], **_FIRST_LINE)
    code = compile(ast.Module(body=[function], type_ignores=[]), PROGRAM_FILENAME, "exec")
    return next(const for const in code.co_consts if isinstance(const, types.CodeType))


def _loops(statements: list[ast.stmt]) -> bool:
    """Whether any of ``statements``, or of the statements they hold, is a ``for`` loop."""
    for statement in statements:
        if isinstance(statement, ast.For):
            return True
        if isinstance(statement, (ast.If, ast.With)) and _loops(statement.body + getattr(
                statement, "orelse", [])):
            return True
    return False


_OWN_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _bound_names(body: list[ast.stmt]) -> set[str]:
    """The names the statements of ``body`` bind in their own scope (not in a comprehension's
    or a lambda's)."""
    bound: set[str] = set()
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif not isinstance(node, _OWN_SCOPES):  # (they bind nothing in the program's)
            todo.extend(ast.iter_child_nodes(node))
    return bound


def _as_unbound(exc: Exception) -> Exception:
    """``exc``, or for a name read before the program bound it (which, in a function, is an
    UnboundLocalError or a free variable's NameError) the NameError a module would raise,
    with the same traceback."""
    if not isinstance(exc, NameError) or not (found := _UNBOUND.match(str(exc))):
        return exc
    return NameError(f"name {found.group(1)!r} is not defined").with_traceback(exc.__traceback__)


class CallBudget:
    """The tool calls one program may still make (``limit`` None: no limit)."""

    def __init__(self, limit: int | None) -> None:
        self.limit, self.made = limit, 0

    def spend(self, tool: str) -> None:
        """Count a call of ``tool``; raise ToolCallBudgetError past the limit."""
        if self.limit is not None and self.made >= self.limit:
            raise errors.ToolCallBudgetError(
                f"tool call budget exceeded: this program already made {self.made} tool calls, "
                f"the most it may, and {tool}() would be one more; call tools on fewer items "
                "or raise [sandbox] max_tool_calls in .lackpy/config.toml (limits are per program)"
            )
        self.made += 1


def plain_tool(name: str, fn: Callable[..., Any], trace: Trace, *,
               budget: CallBudget | None = None, source: str = "",
               kibitzer_session: Any = None) -> Callable[..., Any]:
    """``fn`` traced (from ``source``, through ``kibitzer_session``: see ``make_traced``),
    taking and returning plain data only, each call spent from ``budget``."""

    def checked(*args: Any, **kwargs: Any) -> Any:
        if budget is not None:
            budget.spend(name)
        bad = find_non_plain(args) or (find_non_plain(kwargs) if kwargs else None)
        if bad is not None:
            raise TypeError(f"{name}() takes plain data, not {bad.__name__}; pass strings, "
                            "numbers, lists or dicts (wrap iterators in list(...))")
        result = fn(*args, **kwargs)
        bad = find_non_plain(result)
        if bad is not None:
            raise TypeError(f"{name}() returned a {bad.__name__}, which is not plain data; "
                            "the tool is broken, report it to the kit's author")
        return result

    checked.__signature__ = signature_of(fn)  # type: ignore[attr-defined]  # read by inspect
    return make_traced(name, checked, trace, source, kibitzer_session)


def signature_of(fn: Callable[..., Any]) -> inspect.Signature | None:
    """``inspect.signature(fn)``, read once for each hashable callable; None if it has none."""
    try:
        hash(fn)
    except TypeError:  # an unhashable callable object
        return _signature(fn)
    return _cached_signature(fn)


@functools.lru_cache(maxsize=1024)  # a kit's tools are the same from one program to the next
def _cached_signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    return _signature(fn)


def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def describe_runtime_error(exc: BaseException, program: str) -> tuple[str, int | None]:
    """``Type: message (line N: source)`` for an exception raised by a program."""
    line = program_line(exc)
    message = f"{type(exc).__name__}: {safe_str(exc)}"
    if isinstance(exc, MemoryError):
        message = "MemoryError: the program ran out of memory"
    elif isinstance(exc, RecursionError) and "maximum recursion" in message:
        message = "RecursionError: a value is nested too deeply"
    if line is not None:
        lines = source_lines(program)
        source = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        message += f" (line {line}: {source})" if source else f" (line {line})"
    return message, line


def safe_str(value: object) -> str:
    """``str(value)``, or a bounded stand-in when that fails (huge ints, deep nesting)."""
    try:
        return str(value)
    except Exception:
        if isinstance(value, BaseException):
            return ", ".join(str(summarize(arg)) for arg in value.args)
        return str(summarize(value))


def program_line(exc: BaseException) -> int | None:
    """The program's line where ``exc`` passed last, if it passed through the program."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == PROGRAM_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


class BoundedText:
    """A text sink that keeps at most ``limit`` characters and says when it dropped some."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.truncated = False

    def write(self, text: str) -> None:
        room = self.limit - self.size
        if room <= 0:
            self.truncated = True
            return
        self.parts.append(text[:room])
        self.size += min(len(text), room)
        self.truncated = self.truncated or len(text) > room

    def getvalue(self) -> str:
        text = "".join(self.parts)
        if self.truncated:
            text += f"\n[output truncated at {self.limit:,} characters]\n"
        return text


def sort_by(items: Iterable[Any], key: Any, reverse: bool = False) -> list[Any]:
    """Sort dicts by the value under ``key`` (a dict key, never an attribute), or sort
    ``items`` by what a ``key=`` function returns, as ``sorted`` does. Raises KeyError
    for a dict without that key."""
    if callable(key):
        return sorted(items, key=key, reverse=reverse)
    items = list(items)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping) or key not in item:
            raise KeyError(f"sort_by: item {index} has no key {key!r}")
    return sorted(items, key=lambda item: item[key], reverse=reverse)


MAX_ITERATOR_NESTING = 100


class BoundedIterator:
    """An iterator with bounded nesting: CPython crashes on a zip() chain a million deep."""

    __slots__ = ("_iterator", "_depth")
    _iterator: Iterator[Any]
    _depth: int

    def __init__(self, iterator: Iterator[Any], sources: tuple[Any, ...]) -> None:
        depth = 1 + max((s._depth for s in sources if isinstance(s, BoundedIterator)), default=0)
        if depth > MAX_ITERATOR_NESTING:
            kind = type(self).__name__
            raise RecursionError(f"{kind}() nested more than {MAX_ITERATOR_NESTING} deep")
        self._iterator, self._depth = iterator, depth

    def __iter__(self) -> BoundedIterator:
        return self

    def __next__(self) -> Any:
        return next(self._iterator)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object>"


# Named like the builtins they stand for, so messages and type names read naturally.
_Zip = type("zip", (BoundedIterator,), {"__slots__": ()})
_Enumerate = type("enumerate", (BoundedIterator,), {"__slots__": ()})


def bounded_zip(*iterables: Any, strict: bool = False) -> BoundedIterator:
    """``zip``, with its nesting bounded."""
    zipped: BoundedIterator = _Zip(zip(*iterables, strict=strict), iterables)
    return zipped


def bounded_enumerate(iterable: Any, start: int = 0) -> BoundedIterator:
    """``enumerate``, with its nesting bounded."""
    enumerated: BoundedIterator = _Enumerate(enumerate(iterable, start), (iterable,))
    return enumerated


_BUILTINS: dict[str, Any] = {
    **{name: getattr(builtins, name) for name in ALLOWED_BUILTINS if hasattr(builtins, name)},
    "sort_by": sort_by, "zip": bounded_zip, "enumerate": bounded_enumerate}


def safe_builtins(stdout: BoundedText) -> dict[str, Any]:
    """The curated builtins, with ``print`` writing to ``stdout``."""

    def print_(*values: Any, sep: str | None = " ", end: str | None = "\n") -> None:
        sep = " " if sep is None else sep
        end = "\n" if end is None else end
        if not isinstance(sep, str) or not isinstance(end, str):
            raise TypeError("print: sep and end must be strings")
        stdout.write(sep.join(str(value) for value in values) + end)

    return {**_BUILTINS, "print": print_}

