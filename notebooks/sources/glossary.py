"""A glossary for the notebook: an MCP server (plugin = "mcp"), with the official SDK.

lackpy starts it over stdio the first time a kit needs its tools and keeps it
for the kernel's life; the terms added while it runs stay in its memory.
"""

import asyncio

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True)
server = MCPServer("glossary", log_level="WARNING")
terms = {
    "kit": "the tools a program may call",
    "program": "lackpy code that composes tools and plain data",
    "sandbox": "the process, with limits and walls, where every program runs",
}


@server.tool(annotations=READ_ONLY)
def define(term: str) -> str:
    """The glossary's definition of a term."""
    return terms.get(term.lower(), f"no entry for {term!r}")


@server.tool()
def add_term(term: str, definition: str) -> str:
    """Add a term to the glossary."""
    terms[term.lower()] = definition
    return f"added {term!r}"


@server.tool(annotations=READ_ONLY)
async def define_slowly(term: str, seconds: float) -> str:
    """The definition of a term, after a wait."""
    await asyncio.sleep(seconds)
    return define(term)


if __name__ == "__main__":
    server.run("stdio")
