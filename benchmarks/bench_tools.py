"""Tool-source benchmarks: the cost of one call of a configured tool, against a direct call.

    python benchmarks/bench_tools.py [--quick]

The same work (add two integers) as:

1. a direct call of a Python function, and the same function traced as any tool
   a program calls is (the runner's tracing and plain-data checks);
2. a tool of a ``plugin = "python"`` source, traced the same way: what the source
   adds is the check that its result is plain data;
3. a tool of a ``plugin = "mcp"`` source: an MCP server written with the
   official SDK, over stdio, called from this thread through the source's
   event-loop thread (the server is started before timing).

Ratios are against the direct call measured in the same run.
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

from lackpy_kernel.kit import Toolbox
from lackpy_kernel.kit.sources import ToolSources
from lackpy_kernel.run import Trace
from lackpy_kernel.run.runner import plain_tool

MODULE = '''
def add(a: int, b: int) -> int:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls, for a smoke run")
    quick = parser.parse_args().quick
    calls, mcp_calls, repeat = (2_000, 50, 3) if quick else (100_000, 500, 5)

    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        (workspace / "adder.py").write_text(textwrap.dedent(MODULE))
        (workspace / "server.py").write_text(textwrap.dedent(SERVER))
        toolbox = Toolbox()
        sources = ToolSources({
            "py": {"plugin": "python", "path": "adder.py"},
            "mcp": {"plugin": "mcp", "command": [sys.executable, "server.py"], "prefix": "mcp_"},
        }, workspace)
        sources.attach(toolbox)
        try:
            python_tool = plain_tool("add", toolbox.resolve("add"), Trace())
            mcp_tool = plain_tool("mcp_add", toolbox.resolve("mcp_add"), Trace())
            mcp_tool(0, 0)  # the server is up and its first call's imports are done

            def direct(a: int, b: int) -> int:
                return a + b

            base = per_call(direct, calls, repeat)
            rows = [("direct call", base),
                    ("traced function", per_call(plain_tool("add", direct, Trace()), calls,
                                                 repeat)),
                    ("python source tool", per_call(python_tool, calls, repeat)),
                    ("mcp source tool (stdio)", per_call(mcp_tool, mcp_calls, repeat))]
        finally:
            sources.close()
    for label, seconds in rows:
        print(f"{label:26} {seconds * 1e6:10.2f} us/call   {seconds / base:10.1f}x direct")


if __name__ == "__main__":
    main()
