"""``plugin = "mcp"``: the tools of an MCP server, through the official ``mcp`` client.

The server is a command over stdio (``command``, ``env``, ``cwd``) or a
streamable HTTP endpoint (``url``, ``headers``). It starts the first time the
toolbox needs its tools, stays up for the life of the process, is started
again on the next call after it dies, and stops on ``close``. Its client
lives on an event loop in a thread of its own, so programs, which call tools
synchronously, can call it from any thread.

A tool's grade comes from the server's ``readOnlyHint`` (read-only: ``read``,
otherwise ``write``) unless the config sets one. Results come back as plain
data: structured content when the server sends it, otherwise the text of each
content block (a JSON object or array as a dict or list), or a dict for
content that is not text.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import importlib
import inspect
import json
import keyword
import os
import re
import shlex
import sys
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypeVar

from lackpy_kernel.errors import ToolCallError, ToolCallTimeoutError, ToolSourceError

from ..plain import nesting_problem
from ..spec import ArgSpec, ToolSpec
from .base import ToolSource, time_left
from .describe import MAX_DEFAULT_CHARS

if TYPE_CHECKING:
    import asyncio
    from types import ModuleType

    import mcp_types
    from mcp import Client, MCPError

    from .stdio import StdioState

# asyncio is imported where it is used: the sandbox's children import this package, and
# never start an event loop.

PLUGIN = "mcp"
DEFAULT_STARTUP_TIMEOUT = 30.0
DEFAULT_CALL_TIMEOUT = 120.0
STOP_WAIT = 10.0  # the stdio shutdown takes at most about 6 s (stdin, SIGTERM, SIGKILL)
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
MAX_LIST_PAGES = 100
MAX_SEND_DEPTH = 100
MAX_SCHEMA_DEPTH = 4  # of a schema as a parameter's type
MAX_SCHEMA_NESTING = 64  # of a schema a server sends; past it, or past MAX_SCHEMA_PARTS, the
MAX_SCHEMA_PARTS = 20_000  # server is refused
CLIENT_NAME = "lackpy"
_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_T = TypeVar("_T")
_JSON_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
               "null": "None", "array": "list", "object": "dict"}


@functools.cache
def _sdk() -> SimpleNamespace | None:
    """The MCP SDK's parts, imported on first use (importing them takes half a second), or
    None when the optional extra is not installed."""
    try:
        import mcp_types
        from mcp import Client, MCPError
        from mcp.client.stdio import get_default_environment

        # The SDK's transport module uses create_mcp_http_client without re-exporting it.
        from mcp.client.streamable_http import (  # type: ignore[attr-defined]
            create_mcp_http_client,
            streamable_http_client,
        )
        from pydantic import ValidationError

        from .stdio import StdioState, bounded_stdio
    except ImportError:
        return None
    return SimpleNamespace(
        types=mcp_types, Client=Client, MCPError=MCPError, ValidationError=ValidationError,
        default_environment=get_default_environment, http_client=create_mcp_http_client,
        http_transport=streamable_http_client, StdioState=StdioState, stdio=bounded_stdio)


@functools.cache
def _warm_up_result_checks() -> None:
    """Import jsonschema on a thread of its own, while a server starts: the client checks
    structured results with it, and its first import takes seconds (it builds grammars)."""

    def load() -> None:
        with contextlib.suppress(ImportError):
            importlib.import_module("jsonschema")

    threading.Thread(target=load, name="lackpy-mcp-warm-up", daemon=True).start()


class EventLoopThread:
    """An asyncio event loop on a daemon thread, started on first use."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, coroutine: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        """Schedule ``coroutine`` on the loop; its future, to wait on from any thread."""
        import asyncio  # noqa: PLC0415 - see the note at the top

        return asyncio.run_coroutine_threadsafe(coroutine, self._running_loop())

    def call_soon(self, callback: Callable[[], Any]) -> None:
        """Run ``callback`` on the loop's thread."""
        self._running_loop().call_soon_threadsafe(callback)

    def stop(self) -> None:
        """Stop the loop and its thread (a later ``submit`` starts them again)."""
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(STOP_WAIT)
        if not thread.is_alive():
            loop.close()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        import asyncio  # noqa: PLC0415 - see the note at the top

        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="lackpy-mcp", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop


class _Connection:
    """One MCP client held open on the loop thread: started on first use, dropped when it
    dies, started again on the next use."""

    def __init__(self, source: McpToolSource, loop: EventLoopThread) -> None:
        self.source = source
        self.loop = loop
        self.stdio: StdioState | None = None
        self._client: Any = None
        self._held: concurrent.futures.Future[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = threading.Lock()

    def client(self) -> Any:
        """The connected client, starting the server first when it is not running.

        Raises ToolSourceError when it does not start.
        """
        with self._lock:
            if self._client is not None and not self._dead():
                return self._client
            self._drop_locked()
            return self._start_locked()

    def run(self, make: Callable[[Any], Coroutine[Any, Any, _T]], timeout: float) -> _T:
        """``await make(client)`` on the loop, waiting at most ``timeout`` seconds (then
        cancelling it). Raises what the coroutine raises, or TimeoutError."""
        future = self.loop.submit(make(self.client()))
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no answer within {timeout:g} s") from None
        except BaseException:
            future.cancel()  # an interrupt in the caller's thread: abandon the call
            raise

    def drop(self) -> None:
        """Stop the server (if it runs); the next use starts it again."""
        with self._lock:
            self._drop_locked()

    def _dead(self) -> bool:
        return (self._held is not None and self._held.done()) or \
            (self.stdio is not None and (self.stdio.closed or self.stdio.exited()))

    def _start_locked(self) -> Any:
        _warm_up_result_checks()
        ready: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._held = self.loop.submit(self._hold(ready))
        startup = self.source.startup_timeout
        try:
            self._client = ready.result(startup)
        except concurrent.futures.TimeoutError:
            self._drop_locked()
            raise self.source.error(
                f"the server did not answer within {startup:g} s of starting"
                f"{self.diagnosis()}; check that it is an MCP server, or raise startup_timeout"
            ) from None
        except ToolSourceError:
            self._drop_locked()
            raise
        except Exception as exc:  # whatever the SDK or the transport raised while starting
            self._drop_locked()
            raise self.source.error(f"the server did not start: {_describe(exc)}"
                                    f"{self.diagnosis()}") from None
        return self._client

    async def _hold(self, ready: concurrent.futures.Future[Any]) -> None:
        import asyncio  # noqa: PLC0415 - see the note at the top

        self._stop = asyncio.Event()
        try:
            async with self.source.open_client(self) as client:
                ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else
                                    ToolSourceError(f"{self.source.label}: start cancelled"))
            if not isinstance(exc, Exception):
                raise

    def _drop_locked(self) -> None:
        held, stop, client = self._held, self._stop, self._client
        self._held, self._stop, self._client = None, None, None
        if held is None:
            return
        if client is not None and stop is not None:
            self.loop.call_soon(stop.set)  # a clean goodbye
        else:
            held.cancel()  # still starting: stop where it is
        try:
            held.result(STOP_WAIT)
        except (concurrent.futures.CancelledError, concurrent.futures.TimeoutError, Exception):
            pass  # it ended, one way or another; the transport has stopped the process

    def diagnosis(self) -> str:
        """What the server said besides MCP: its stray stdout lines and the end of its stderr."""
        state = self.stdio
        if state is None:
            return ""
        parts = []
        if state.stray_lines:
            shown = "; ".join(repr(line) for line in state.stray_lines)
            parts.append(f"it printed lines that are not MCP on its stdout ({shown}): an MCP "
                         "server must write only MCP messages there (log to stderr)")
        if state.stderr_text():
            parts.append(f"its stderr ends with: {state.stderr_text()[-500:]}")
        return "".join(f"; {part}" for part in parts)


class McpToolSource(ToolSource):
    """Tools from an MCP server (settings ``command``/``env``/``cwd`` or ``url``/``headers``,
    ``tools``, ``prefix``, ``grade``, ``timeout``, ``startup_timeout`` and ``overrides``)."""

    plugin = PLUGIN

    def __init__(self, name: str, settings: dict[str, Any], workspace: str | os.PathLike[str],
                 loop: EventLoopThread, protected: dict[str, str] | None = None) -> None:
        self.workspace = os.path.realpath(workspace)
        super().__init__(name, settings, protected)
        self.connection = _Connection(self, loop)
        self._wrapped: set[str] = set()  # tools whose structured output is {"result": value}
        self.protect(self.workspace, self._command_files())

    @property
    def origin(self) -> str:
        if self.settings.get("url"):
            return str(self.settings["url"])
        command = self.settings.get("command") or []
        return shlex.join(map(str, command)) if command else "?"

    @property
    def startup_timeout(self) -> float:
        """Seconds the server has to start and answer (``startup_timeout``)."""
        return float(self.settings.get("startup_timeout") or DEFAULT_STARTUP_TIMEOUT)

    def timeout_of(self, tool: str) -> float:
        """Seconds one call of ``tool`` (the server's name) may take."""
        override = self.overrides.get(tool, {}).get("timeout")
        return float(override or self.settings.get("timeout") or DEFAULT_CALL_TIMEOUT)

    def close(self) -> None:
        """Stop the server; it starts again if a tool is called."""
        self.connection.drop()

    # -- loading ------------------------------------------------------------------------

    def _load(self) -> list[ToolSpec]:
        if _sdk() is None:
            raise self.error("the MCP client is not installed; pip install 'lackpy-kernel[mcp]'")
        if not self.settings.get("command") and not self.settings.get("url"):
            raise self.error("set command = [\"server\", \"args\"] or url = \"http://...\"")
        listed = self._list_tools()
        wanted = self.settings.get("tools")
        offered = {tool.name for tool in listed}
        specs = []
        for tool in listed:
            self._check_schemas(tool)
            if wanted is not None and tool.name not in wanted:
                continue
            spec = self._spec(tool)
            if spec is not None:
                specs.append(spec)
        for name in wanted or []:
            if name not in offered:
                self.status.problems.append(f"tools names {name!r}, which the server does not "
                                            f"offer (it offers: {', '.join(sorted(offered))})")
        self.status.problems.extend(self.unused_overrides(offered))
        return specs

    def _check_schemas(self, tool: mcp_types.Tool) -> None:
        """Raise ToolSourceError, naming the tool, for a schema too deep or too big to read."""
        for which, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
            problem = nesting_problem(schema, MAX_SCHEMA_NESTING, MAX_SCHEMA_PARTS)
            if problem is not None:
                raise self.error(f"its tool {str(tool.name)[:80]!r} has an {which} schema of "
                                 f"{problem}, too big to be a tool's; fix the server")

    def _list_tools(self) -> list[Any]:
        async def list_all(client: Client) -> list[mcp_types.Tool]:
            tools, cursor = [], None
            for _ in range(MAX_LIST_PAGES):
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
            return tools

        try:
            return self.connection.run(list_all, self.startup_timeout)
        except ToolSourceError:
            raise
        except TimeoutError:
            self.connection.drop()
            raise self.error(f"the server did not list its tools within {self.startup_timeout:g} "
                             f"s{self.connection.diagnosis()}; raise startup_timeout") from None
        except Exception as exc:  # the SDK's failures: MCP errors, answers that are not MCP
            why = self.connection.stdio.reason if self.connection.stdio else None
            self.connection.drop()
            raise self.error(f"listing its tools failed: {why or _describe(exc)}"
                             f"{self.connection.diagnosis()}") from None

    def _spec(self, tool: mcp_types.Tool) -> ToolSpec | None:
        name = lackpy_name(tool.name, self.settings.get("prefix") or "")
        if name is None:
            self.status.problems.append(f"the server's tool {tool.name!r} has no name programs "
                                        "can call; rename it on the server")
            return None
        if _wrapped_result_schema(tool.output_schema) is not None:
            self._wrapped.add(tool.name)
        schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
        params = _parameters(schema)
        hint = getattr(tool.annotations, "read_only_hint", None) if tool.annotations else None
        return ToolSpec(
            name=name, provider=self.name,
            provider_config={"plugin": PLUGIN, "origin": self.origin, "where": "kernel",
                             "mcp_name": tool.name, "timeout": self.timeout_of(tool.name),
                             "params": params},
            description=_first_paragraph(tool.description or tool.title or ""),
            args=[ArgSpec(python, kind, text, default)
                  for python, _, kind, text, default in params],
            returns=_returns(tool.output_schema),
            **self.grade_of(tool.name, "read" if hint is True else "write"),
        )

    # -- calling ------------------------------------------------------------------------

    def resolve(self, spec: ToolSpec) -> Callable[..., Any]:
        """A function with ``spec``'s parameters that calls the tool on the server."""
        config = spec.provider_config
        params = config["params"]
        signature = inspect.Signature([
            inspect.Parameter(python, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              default=inspect.Parameter.empty if default is None else None)
            for python, _, _, _, default in params])
        required = {python for python, _, _, _, default in params if default is None}
        names = {python: wire for python, wire, _, _, _ in params}

        def call_tool(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            arguments = {names[key]: value for key, value in bound.arguments.items()
                         if value is not None or key in required}
            return self.call(config["mcp_name"], arguments, tool=spec.name)

        call_tool.__signature__ = signature  # type: ignore[attr-defined]
        call_tool.__name__ = spec.name
        call_tool.__doc__ = spec.description
        return call_tool

    def call(self, mcp_name: str, arguments: dict[str, Any], *, tool: str | None = None,
             timeout: float | None = None) -> Any:
        """Call ``mcp_name`` on the server and return its result as plain data.

        Raises ToolCallTimeoutError past ``timeout`` (default: the tool's; less when the
        calling program's deadline comes first, see ``call_deadline``), ToolCallError
        when the server fails, dies or answers what cannot be read, and ToolSourceError when
        it cannot be started.
        """
        shown = f"tool {(tool or mcp_name)!r} from {self.label}"
        limit = time_left(self.timeout_of(mcp_name) if timeout is None else timeout)
        payload = _to_json(arguments, shown)

        async def send(client: Client) -> Any:
            return await client.call_tool(mcp_name, payload, read_timeout_seconds=limit)

        sdk = _sdk()
        assert sdk is not None  # a tool to call means the source loaded, with the SDK
        try:
            result = self.connection.run(send, limit + 1.0)
        except ToolSourceError:
            raise
        except TimeoutError:
            raise ToolCallTimeoutError(f"{shown} took longer than its {limit:g} s timeout; "
                                       "set timeout in the source's settings") from None
        except sdk.MCPError as exc:
            raise self._call_failure(shown, exc, limit, sdk.types) from None
        except sdk.ValidationError as exc:
            raise ToolCallError(f"{shown}: the server answered something that is not an MCP "
                                f"tool result ({_describe(exc)})") from None
        except RuntimeError as exc:  # the client refused the answer: not what the tool declared
            raise ToolCallError(f"{shown}: the client refused the server's answer: "
                                f"{_describe(exc)}") from None
        except Exception as exc:  # a transport failure: the connection is gone
            self.connection.drop()
            raise ToolCallError(f"{shown}: the connection failed during the call "
                                f"({_describe(exc)}); it is started again on the next call"
                                ) from None
        return _result_value(result, shown, unwrap=mcp_name in self._wrapped)

    def _call_failure(self, shown: str, exc: MCPError, limit: float, types: ModuleType
                      ) -> ToolCallError:
        if exc.code == types.REQUEST_TIMEOUT:
            return ToolCallTimeoutError(f"{shown} took longer than its {limit:g} s timeout; set "
                                        "timeout in the source's settings")
        if exc.code == types.CONNECTION_CLOSED:
            why = (self.connection.stdio.reason if self.connection.stdio else None) or \
                "the connection closed"
            diagnosis = self.connection.diagnosis()
            self.connection.drop()
            return ToolCallError(f"{shown} failed: the server stopped answering during the call: "
                                 f"{why}{diagnosis}; it is started again on the next call")
        return ToolCallError(f"{shown}: the server refused the call: {exc}")

    # -- connecting ---------------------------------------------------------------------

    @asynccontextmanager
    async def open_client(self, connection: _Connection) -> AsyncIterator[Any]:
        """A connected MCP client (stdio or HTTP, as configured)."""
        sdk = _sdk()
        assert sdk is not None  # checked when the source loaded
        info = sdk.types.Implementation(name=CLIENT_NAME, version="1")
        if self.settings.get("url"):
            connection.stdio = None
            headers = {key: self._expand(str(value), f"headers.{key}")
                       for key, value in (self.settings.get("headers") or {}).items()}
            async with sdk.http_client(headers=headers) as http:
                transport = sdk.http_transport(str(self.settings["url"]), http_client=http,
                                               max_sse_event_size=MAX_MESSAGE_BYTES)
                async with sdk.Client(transport, client_info=info) as client:
                    yield client
            return
        connection.stdio = state = sdk.StdioState()
        transport = sdk.stdio(self._command(), env=self._environment(sdk), cwd=self._cwd(),
                              max_message_bytes=MAX_MESSAGE_BYTES, state=state,
                              max_nesting=MAX_SCHEMA_NESTING)
        try:
            async with sdk.Client(transport, client_info=info) as client:
                yield client
        except FileNotFoundError as exc:
            raise self.error(f"the command {exc.filename or self._command()[0]!r} was not found; "
                             "check command in the source's settings (and PATH)") from None
        except PermissionError:
            raise self.error(f"the command {self._command()[0]!r} cannot be run (permission "
                             "denied)") from None

    def _command(self) -> list[str]:
        command = [str(part) for part in self.settings["command"]]
        if command[0] == "python":
            command[0] = sys.executable  # the interpreter lackpy runs on, whatever PATH says
        return command

    def _command_files(self) -> list[str]:
        """The files of the workspace the server's command names (``python glossary.py``):
        the server's code, started again whenever it dies."""
        command = self.settings.get("command") or []
        candidates = [os.path.join(self._cwd(), str(part)) for part in command]
        return [path for path in candidates if os.path.isfile(path)]

    def _environment(self, sdk: SimpleNamespace) -> dict[str, str]:
        extra = {key: self._expand(str(value), f"env.{key}")
                 for key, value in (self.settings.get("env") or {}).items()}
        environment: dict[str, str] = sdk.default_environment()
        return environment | extra

    def _cwd(self) -> str:
        return os.path.join(self.workspace, str(self.settings.get("cwd") or "."))

    def _expand(self, value: str, key: str) -> str:
        def lookup(match: re.Match[str]) -> str:
            variable = match.group(1)
            if variable not in os.environ:
                raise self.error(f"{key} uses ${{{variable}}}, which is not set in the "
                                 "environment; set it, or remove it from the settings")
            return os.environ[variable]

        return _ENV_REFERENCE.sub(lookup, value)


def lackpy_name(name: str, prefix: str) -> str | None:
    """The name programs call an MCP tool by: ``prefix`` + the name with ``-``, ``.``, ``/``
    and spaces as ``_``; None when that is still not a name."""
    candidate = prefix + re.sub(r"[-./ ]", "_", name)
    if not candidate.isidentifier() or keyword.iskeyword(candidate):
        return None
    return candidate


def _parameters(schema: dict[str, Any]) -> list[tuple[str, str, str, str, str | None]]:
    """(python name, wire name, type, description, default) per property, required first;
    an optional argument's default is its schema default, else ``None``."""
    declared = schema.get("properties")
    properties: dict[str, Any] = declared if isinstance(declared, dict) else {}
    required = [n for n in schema.get("required") or [] if isinstance(n, str) and n in properties]
    order = required + [name for name in properties if name not in required]
    params: list[tuple[str, str, str, str, str | None]] = []
    used: set[str] = set()
    for wire in order:
        prop = properties[wire] if isinstance(properties[wire], dict) else {}
        python = _python_name(wire, used)
        used.add(python)
        default = None
        if wire not in required:
            default = _default_text(prop["default"]) if "default" in prop else "None"
        params.append((python, wire, json_schema_type(prop), str(prop.get("description") or ""),
                       default))
    return params


def _python_name(wire: str, used: set[str]) -> str:
    name = re.sub(r"\W", "_", wire)
    if not name.isidentifier():
        name = f"arg_{name}"  # empty, or starting with a digit
    if keyword.iskeyword(name):
        name += "_"
    while name in used:
        name += "_"
    return name


def _default_text(value: object) -> str:
    text = repr(value)
    return text if len(text) <= MAX_DEFAULT_CHARS else "..."


def json_schema_type(schema: object, depth: int = 0) -> str:
    """A JSON schema as a Python type string (``list[str]``, ``int | None``, ``dict``)."""
    if not isinstance(schema, dict) or depth > MAX_SCHEMA_DEPTH:
        return "Any"
    for combined in ("anyOf", "oneOf"):
        if isinstance(schema.get(combined), list):
            return _union([json_schema_type(part, depth + 1) for part in schema[combined]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([json_schema_type({**schema, "type": one}, depth + 1) for one in kind])
    if kind == "array":
        items = json_schema_type(schema.get("items"), depth + 1)
        return f"list[{items}]" if items != "Any" else "list"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"dict[str, {json_schema_type(schema['additionalProperties'], depth + 1)}]"
    return _JSON_TYPES.get(kind, "Any") if isinstance(kind, str) else "Any"


def _union(kinds: list[str]) -> str:
    unique = list(dict.fromkeys(kinds))
    return "Any" if "Any" in unique or not unique else " | ".join(unique)


def _returns(output_schema: object) -> str:
    if not isinstance(output_schema, dict):
        return "Any"
    wrapped = _wrapped_result_schema(output_schema)
    return json_schema_type(wrapped) if wrapped is not None else "dict"


def _wrapped_result_schema(output_schema: object) -> dict[str, Any] | None:
    """The schema of ``result`` when the output is the SDK's ``{"result": value}`` wrapper
    of a value that is not an object, else None."""
    if not isinstance(output_schema, dict):
        return None
    properties = output_schema.get("properties")
    if isinstance(properties, dict) and list(properties) == ["result"] \
            and output_schema.get("required") == ["result"]:
        return properties["result"] if isinstance(properties["result"], dict) else {}
    return None


def _first_paragraph(text: str) -> str:
    return " ".join(text.strip().split("\n\n", 1)[0].split())


def _result_value(result: mcp_types.CallToolResult, shown: str, *, unwrap: bool) -> Any:
    """A CallToolResult as plain data (``unwrap``: structured content is the SDK's
    ``{"result": value}`` wrapper); ToolCallError for an error result."""
    if result.is_error:
        text = " ".join(getattr(block, "text", "") for block in result.content).strip()
        raise ToolCallError(f"{shown} failed: {text or 'the server gave no reason'}")
    if result.structured_content is not None:
        value = result.structured_content
        return value.get("result") if unwrap else value
    values = [_block_value(block) for block in result.content]
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _block_value(block: mcp_types.ContentBlock) -> Any:
    text = getattr(block, "text", None)
    if getattr(block, "type", None) != "text" or not isinstance(text, str):
        return block.model_dump(mode="json", by_alias=True, exclude_none=True)
    if text.lstrip().startswith(("{", "[")):
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            pass  # not JSON after all (or too deep to read): it stays text
    return text


def _to_json(value: object, shown: str, depth: int = 0) -> Any:
    """Plain data as JSON data (tuples and sets as lists); ToolCallError for what JSON has no
    form for."""
    if depth > MAX_SEND_DEPTH:
        raise ToolCallError(f"{shown}: an argument is nested more than {MAX_SEND_DEPTH} deep")
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ToolCallError(f"{shown}: JSON has no form for the number {value!r}")
        return value
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise ToolCallError(f"{shown}: dict keys sent to an MCP server must be str")
        return {key: _to_json(item, shown, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_to_json(item, shown, depth + 1) for item in value]
    raise ToolCallError(f"{shown}: a {type(value).__name__} cannot be sent to an MCP server; "
                        "send str, numbers, lists or dicts")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__
