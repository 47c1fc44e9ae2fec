"""Tool-source benchmarks: the cost of one call of a configured tool, against a direct call.

    python benchmarks/bench_tools.py [--quick]

The same work (add two integers) as:

1. a direct call of a Python function, and the same function traced as any tool
   a program calls is (the runner's tracing and plain-data checks), wall-clock;
2. a tool of a ``plugin = "python"`` source, traced the same way, in this process:
   what the source adds is the check that its result is plain data;
3. that tool called by a program in the sandbox, where it runs in the program's
   own process (the default, ``where = "child"``);
4. the same function from a source that says ``where = "kernel"``, called by a
   program in the sandbox: each call is forwarded (child -> worker -> this process
   -> worker -> child);
5. a tool of a ``plugin = "mcp"`` source (an MCP server written with the official
   SDK, over stdio), called from this thread, and called by a program in the
   sandbox (forwarded, then sent to the server).

A tool's cost per call is timed as a program's trace times it, around the call
and its plain-data checks (the trace's own bookkeeping, a few microseconds, is
left out): in this process with the restricted runner, and in the sandbox,
where it includes the whole round trip of a forwarded call. Ratios are against
the direct call (wall-clock) measured in the same run; "forwarding" is the
forwarded call less the in-child one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from lackpy_kernel.kit import builtin_toolbox
from lackpy_kernel.kit.sources import ToolSources
from lackpy_kernel.run import ExecutionResult, RestrictedRunner, Sandbox, SandboxLimits, Trace
from lackpy_kernel.run.runner import plain_tool

MODULE = '''
def {name}(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''

SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


server.run("stdio")
'''


def per_call(fn: Callable[[int, int], object], calls: int, repeat: int) -> float:
    """Median seconds per call over ``repeat`` rounds of ``calls`` calls."""
    rounds = []
    for _ in range(repeat):
        started = time.perf_counter()
        for number in range(calls):
            fn(number, 1)
        rounds.append((time.perf_counter() - started) / calls)
    return statistics.median(rounds)


PROGRAM = "total = 0\nfor i in range(N):\n    total += TOOL(i, 1)\ntotal"


def traced_per_call(run: Callable[[str, str, int], ExecutionResult], tool: str, calls: int,
                    repeat: int) -> float:
    """Median seconds per call of ``tool`` over ``repeat`` programs of ``calls`` calls, as
    the programs' traces time them; ``run(program, tool, calls)`` runs one."""
    rounds = []
    for _ in range(repeat):
        result = run(PROGRAM.replace("TOOL", tool), tool, calls)
        assert result.success and len(result.trace.entries) == calls, result.error
        rounds.append(sum(entry.duration_ms for entry in result.trace.entries) / 1000 / calls)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls, for a smoke run")
    quick = parser.parse_args().quick
    calls, child_calls, forwarded_calls, mcp_calls, repeat = \
        (2_000, 2_000, 200, 50, 3) if quick else (100_000, 20_000, 2_000, 500, 5)

    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        (workspace / "adder.py").write_text(textwrap.dedent(MODULE.format(name="add")))
        (workspace / "kadder.py").write_text(textwrap.dedent(MODULE.format(name="kadd")))
        (workspace / "server.py").write_text(textwrap.dedent(SERVER))
        toolbox = builtin_toolbox(workspace)
        sources = ToolSources({
            "py": {"plugin": "python", "path": "adder.py"},
            # the adders only compute: graded read, their calls are not asked for
            "kernel": {"plugin": "python", "path": "kadder.py", "where": "kernel",
                       "grade": "read"},
            "mcp": {"plugin": "mcp", "command": [sys.executable, "server.py"], "prefix": "mcp_",
                    "grade": "read"},
        }, workspace)
        sources.attach(toolbox)
        box = Sandbox(workspace, SandboxLimits(timeout=600, max_tool_calls=10_000_000),
                      toolbox=toolbox)
        try:
            toolbox.resolve("mcp_add")(0, 0)  # the server is up, its first call's imports done
            for tool in ("add", "kadd", "mcp_add"):  # the worker has imported the modules
                box.run(f"{tool}(1, 1)", [tool], keep=False)

            def direct(a: int, b: int) -> int:
                return a + b

            def here(program: str, tool: str, count: int) -> ExecutionResult:
                return RestrictedRunner().run(program, {tool: toolbox.resolve(tool)},
                                              {"N": count})

            def sandboxed(program: str, tool: str, count: int) -> ExecutionResult:
                return box.run(program, [tool], {"N": count}, keep=False)

            base = per_call(direct, calls, repeat)
            child = traced_per_call(sandboxed, "add", child_calls, repeat)
            forwarded = traced_per_call(sandboxed, "kadd", forwarded_calls, repeat)
            rows = [("direct call", base),
                    ("the same, traced (wall)", per_call(plain_tool("add", direct, Trace()),
                                                         calls, repeat)),
                    ("as the trace times a call:", None),
                    ("python tool, here", traced_per_call(here, "add", child_calls, repeat)),
                    ("python tool, in-child", child),
                    ("python tool, forwarded", forwarded),
                    ("mcp tool (stdio), here", traced_per_call(here, "mcp_add", mcp_calls,
                                                               repeat)),
                    ("mcp tool, forwarded", traced_per_call(sandboxed, "mcp_add", mcp_calls,
                                                            repeat))]
        finally:
            box.close()
            sources.close()
    for label, seconds in rows:
        if seconds is None:
            print(label)
            continue
        print(f"{label:26} {seconds * 1e6:10.2f} us/call   {seconds / base:10.1f}x direct")
    print(f"{'forwarding':26} {(forwarded - child) * 1e6:10.2f} us/call   "
          f"{forwarded / child:10.1f}x in-child")


if __name__ == "__main__":
    main()
