// Scenarios for graphwright-server's `/mcp`, driven by the official TypeScript MCP client
// (@modelcontextprotocol/sdk) over streamable HTTP: the assistants as tools, calls that run
// graphs, bad arguments, a failing graph, and the session's end.
//
// Usage: node mcp_client.mjs http://127.0.0.1:PORT SDK_DIR
//
// SDK_DIR is a folder whose node_modules holds the client (scripts/test prepares one). The
// graphs (chat, ask, slow, adder, broken) are served by tests/server_protocols.rs.

import assert from "node:assert/strict";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [url, sdkDir] = process.argv.slice(2);
const dist = path.join(path.resolve(sdkDir), "node_modules/@modelcontextprotocol/sdk/dist/esm");
const load = (file) => import(pathToFileURL(path.join(dist, file)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const { McpError } = await load("types.js");

async function connect(endpoint = `${url}/mcp`) {
  const client = new Client({ name: "graphwright-tests", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(endpoint));
  await client.connect(transport);
  return { client, transport };
}

const scenarios = [];
const scenario = (fn) => scenarios.push(fn);

// An assistant made through the API, with a name that is not a valid tool name as it is.
const made = await fetch(`${url}/assistants`, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ graph_id: "chat", name: "Echo bot v2!", description: "Repeats what you say." }),
});
assert.equal(made.status, 200, await made.clone().text());

// initialize: the server names itself, offers tools, and opens a session.
scenario(async function initialize_opens_a_session() {
  const { client, transport } = await connect();
  assert.equal(client.getServerVersion().name, "graphwright-server");
  assert.ok(client.getServerCapabilities().tools, "tools are offered");
  assert.match(client.getInstructions(), /assistant/);
  assert.ok(transport.sessionId, "a session id");
  await client.close();
});

// tools/list: one tool per assistant, named after it, described, with the graph's input
// schema (its real one when served with schemas; message fields as a plain string).
scenario(async function every_assistant_is_a_tool() {
  const { client } = await connect();
  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  assert.deepEqual(
    Object.keys(byName).sort(),
    ["Echo_bot_v2", "adder", "ask", "broken", "chat", "slow"],
  );

  const echo = byName.Echo_bot_v2;
  assert.equal(echo.title, "Echo bot v2!");
  assert.equal(echo.description, "Repeats what you say.");
  assert.equal(echo.annotations.readOnlyHint, false);
  assert.equal(echo.annotations.openWorldHint, true);

  const chat = byName.chat;
  assert.match(chat.description, /graph `chat`/);
  assert.equal(chat.inputSchema.type, "object");
  assert.equal(chat.inputSchema.properties.messages.type, "string");

  const adder = byName.adder;
  assert.equal(adder.inputSchema.type, "object");
  assert.deepEqual(Object.keys(adder.inputSchema.properties).sort(), ["a", "b", "sum"]);
  assert.equal(adder.inputSchema.properties.a.type, "integer");
  assert.equal(adder.inputSchema.properties.a.description, "The first number.");
  assert.equal(adder.inputSchema.required, undefined, "an input writes any of the fields");

  // A graph served without schemas takes any object; its tool still names its messages.
  assert.equal(byName.broken.inputSchema.type, "object");
  await client.close();
});

// tools/call: the graph runs; the result is its output values, as JSON text and structured.
scenario(async function a_call_runs_the_graph() {
  const { client } = await connect();
  const sum = await client.callTool({ name: "adder", arguments: { a: 2, b: 3 } });
  assert.equal(sum.isError ?? false, false);
  assert.deepEqual(sum.structuredContent, { a: 2, b: 3, sum: 5 });
  assert.deepEqual(JSON.parse(sum.content[0].text), { a: 2, b: 3, sum: 5 });

  const echoed = await client.callTool({ name: "chat", arguments: { messages: "hello there" } });
  const messages = echoed.structuredContent.messages;
  assert.deepEqual(
    messages.map((m) => [m.type, m.content]),
    [
      ["human", "hello there"],
      ["ai", "You said: hello there (1 from you)"],
    ],
  );

  // A call is stateless: a second call does not see the first's messages.
  const again = await client.callTool({ name: "Echo_bot_v2", arguments: { messages: "again" } });
  assert.equal(again.structuredContent.messages.at(-1).content, "You said: again (1 from you)");

  // A graph that pauses on a question answers with the question, as /runs/wait does.
  const asked = await client.callTool({ name: "ask", arguments: { messages: "refund" } });
  assert.equal(asked.isError ?? false, false);
  assert.equal(asked.structuredContent.__interrupt__[0].value.question, "approve?");
  await client.close();
});

// Bad arguments and a failing graph are tool results with isError, saying why; an unknown tool
// is a protocol error.
scenario(async function failures_say_why() {
  const { client } = await connect();
  const wrongType = await client.callTool({ name: "adder", arguments: { a: "two", b: 3 } });
  assert.equal(wrongType.isError, true);
  assert.match(wrongType.content[0].text, /the arguments do not fit tool `adder`/);
  assert.match(wrongType.content[0].text, /does not fit the graph's state/);

  const unknownField = await client.callTool({ name: "adder", arguments: { a: 1, c: 2 } });
  assert.equal(unknownField.isError, true);
  assert.match(unknownField.content[0].text, /unknown field `c`/);

  const failed = await client.callTool({ name: "broken", arguments: { n: 7 } });
  assert.equal(failed.isError, true);
  assert.match(failed.content[0].text, /the run of tool `broken` failed/);
  assert.match(failed.content[0].text, /cannot handle 7/);

  await assert.rejects(client.callTool({ name: "nope", arguments: {} }), (error) => {
    assert.ok(error instanceof McpError, String(error));
    assert.equal(error.code, -32602);
    assert.match(error.message, /no tool named "nope"; the tools are: .*adder/);
    return true;
  });
  await client.close();
});

// DELETE ends the session: the old session id is then unknown (404), and a new client starts
// afresh. `/mcp/` (LangGraph's spelling) is the same endpoint.
scenario(async function ending_the_session() {
  const { client, transport } = await connect(`${url}/mcp/`);
  const session = transport.sessionId;
  assert.ok((await client.listTools()).tools.length > 0);
  await transport.terminateSession();
  assert.equal(transport.sessionId, undefined);
  const stale = await fetch(`${url}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-session-id": session,
      "mcp-protocol-version": "2025-06-18",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list", params: {} }),
  });
  assert.equal(stale.status, 404, await stale.text());
  await client.close();

  const { client: fresh } = await connect();
  assert.ok((await fresh.listTools()).tools.length > 0);
  await fresh.close();
});

let failed = 0;
for (const fn of scenarios) {
  try {
    await fn();
    console.log(`ok   ${fn.name}`);
  } catch (error) {
    failed += 1;
    console.log(`FAIL ${fn.name}: ${error.stack ?? error}`);
  }
}
if (failed) {
  console.log(`${failed} of ${scenarios.length} scenarios failed`);
  process.exit(1);
}
console.log("all scenarios passed");
