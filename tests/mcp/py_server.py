"""A Python MCP server (mcp 2.x) for graphwright's MCP tests.

`python py_server.py http PORT` serves streamable HTTP on 127.0.0.1:PORT at /mcp;
`python py_server.py stdio` serves over stdin and stdout. The tools cover the cases the
tests need: plain results, a tool that reports an error, one that answers with a JSON-RPC
error, one that ends the process in the middle of the call, and one that never answers.
"""

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

server = MCPServer("py-tools")
calls = {"add": 0}


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    calls["add"] += 1
    return str(a + b)


@server.tool()
def add_calls() -> str:
    """How many times `add` has run."""
    return str(calls["add"])


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason given (a result with isError)."""
    raise ToolError(f"refused: {reason}")


@server.tool()
def refuse() -> str:
    """Answers with a JSON-RPC error instead of a result."""
    raise MCPError(code=-32001, message="the quota is used up")


@server.tool()
def die() -> str:
    """Ends the server's process in the middle of the call."""
    os._exit(1)


@server.tool()
async def hang() -> str:
    """Never answers."""
    await asyncio.sleep(3600)
    return "too late"


if __name__ == "__main__":
    if sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
