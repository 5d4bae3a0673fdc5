"""Checks graphwright's MCP server with the Python `mcp` client (2.x).

`python py_client.py URL` connects over streamable HTTP, checks the tool list (names,
descriptions, schemas as `#[tool]` derives them) and the answers to good, bad and failing
calls, and prints "ok". Any mismatch fails with a message saying what differed.
"""

import asyncio
import json
import sys

from mcp.client import Client


def expect(what, got, want):
    if got != want:
        sys.exit(f"{what}: expected {want!r}, got {got!r}")


def text(result):
    return "\n".join(block.text for block in result.content)


async def main(url):
    async with Client(url) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        expect("tool names", sorted(tools), ["add", "crash", "forecast", "refuse"])
        add = tools["add"]
        expect("add's description", add.description, "Add two integers.")
        schema = add.input_schema
        expect("add's required", sorted(schema["required"]), ["a", "b"])
        expect("a's type", schema["properties"]["a"]["type"], "integer")
        expect("a's description", schema["properties"]["a"].get("description"), "The first term.")

        result = await client.call_tool("add", {"a": 2, "b": 3})
        expect("add's error flag", bool(result.is_error), False)
        expect("add's text", text(result), "5")

        result = await client.call_tool("forecast", {"city": "Oslo"})
        expect("forecast's error flag", bool(result.is_error), False)
        expect("forecast's structured content", result.structured_content, {"city": "Oslo", "celsius": 4})
        expect("forecast's text", json.loads(text(result)), {"city": "Oslo", "celsius": 4})

        result = await client.call_tool("add", {"a": "two", "b": 3})
        expect("bad arguments' error flag", result.is_error, True)
        if "`a`" not in text(result):
            sys.exit(f"bad arguments: the message does not name field `a`: {text(result)!r}")

        result = await client.call_tool("refuse", {"why": "no"})
        expect("refuse's error flag", result.is_error, True)
        if "not today: no" not in text(result):
            sys.exit(f"refuse: the tool's error is not in the message: {text(result)!r}")

        result = await client.call_tool("crash", {})
        expect("crash's error flag", result.is_error, True)

        try:
            await client.call_tool("missing", {})
        except Exception as error:  # the server answers an unknown tool with a JSON-RPC error
            if "missing" not in str(error):
                sys.exit(f"unknown tool: the error does not name it: {error}")
        else:
            sys.exit("unknown tool: expected an error")
    print("ok")


asyncio.run(main(sys.argv[1]))
