// Scenarios for graphwright-server, driven by LangGraph's JavaScript client
// (@langchain/langgraph-sdk), the way chat UIs built on it call the server.
//
// Usage: node js_scenarios.mjs http://127.0.0.1:PORT SDK_DIR
//
// SDK_DIR is a folder whose node_modules holds the client (scripts/test prepares one). The
// graphs (chat, approval, nested, layered, shipping) are served by tests/server_sdk.rs.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import path from "node:path";

const [url, sdkDir] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(sdkDir), "package.json"));
const { Client } = require("@langchain/langgraph-sdk");
const client = new Client({ apiUrl: url, apiKey: null });

const scenarios = [];
const scenario = (fn) => scenarios.push(fn);

async function collect(stream) {
  const parts = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

const named = (parts, name) => parts.filter((p) => p.event === name).map((p) => p.data);

// A chat UI's call: values + messages-tuple + custom, subgraphs and resumable on. The reply is
// assembled from its chunks, every event carries an id, and joining the run after one of them
// replays exactly the events that followed it.
scenario(async function streamed_chat_as_a_chat_ui_calls_it() {
  const thread = await client.threads.create({ metadata: { user: "js" } });
  let created;
  const parts = await collect(
    client.runs.stream(thread.thread_id, "chat", {
      input: { messages: [{ type: "human", content: "hello there" }] },
      streamMode: ["values", "messages-tuple", "custom"],
      streamSubgraphs: true,
      streamResumable: true,
      onRunCreated: (meta) => {
        created = meta;
      },
    }),
  );
  assert.equal(parts[0].event, "metadata");
  assert.equal(created.thread_id, thread.thread_id);
  assert.equal(parts[0].data.run_id, created.run_id);
  assert.deepEqual(new Set(parts.map((p) => p.event)), new Set(["metadata", "values", "messages", "custom"]));
  assert.ok(parts.every((p) => p.id), "a resumable stream gives every event an id");

  const tuples = named(parts, "messages");
  const text = tuples
    .filter(([chunk]) => chunk.type === "AIMessageChunk")
    .map(([chunk]) => chunk.content)
    .join("");
  assert.equal(text, "You said: hello there");
  const [chunk, meta] = tuples[0];
  assert.equal(chunk.id, "reply-1");
  assert.equal(meta.langgraph_node, "agent");
  assert.equal(meta.thread_id, thread.thread_id);

  const final = named(parts, "values").at(-1);
  assert.deepEqual(
    final.messages.map((m) => [m.type, m.content]),
    [
      ["human", "hello there"],
      ["ai", "You said: hello there"],
    ],
  );
  assert.deepEqual(named(parts, "custom")[0], { type: "progress", seen: 1 });

  const from = 2;
  const replay = await collect(
    client.runs.joinStream(thread.thread_id, created.run_id, { lastEventId: parts[from].id }),
  );
  assert.deepEqual(
    replay.map((p) => [p.event, p.id]),
    parts.slice(from + 1).map((p) => [p.event, p.id]),
  );
});

// A tool call travels as LangChain renders it: the AI message's tool_calls with parsed args,
// then a `tool` message answering it by id.
scenario(async function tool_calls_in_values() {
  const result = await client.runs.wait(null, "chat", {
    input: { messages: [{ role: "user", content: "what is the weather?" }] },
  });
  const [human, call, tool, reply] = result.messages;
  assert.equal(human.type, "human");
  assert.equal(call.type, "ai");
  assert.deepEqual(
    call.tool_calls.map((c) => [c.id, c.name, c.args]),
    [["call-1", "weather", { city: "Oslo" }]],
  );
  assert.equal(tool.type, "tool");
  assert.equal(tool.tool_call_id, "call-1");
  assert.equal(reply.content, "It is 4 °C and raining there.");
});

// With subgraphs on, a subgraph's events are named `mode|node:task-id`.
scenario(async function subgraph_events_are_namespaced() {
  const parts = await collect(
    client.runs.stream(null, "nested", { input: {}, streamMode: ["updates"], streamSubgraphs: true }),
  );
  const names = parts.map((p) => p.event);
  assert.ok(names.includes("updates"), names);
  const inner = names.find((n) => n.startsWith("updates|inner:"));
  assert.ok(inner, `no subgraph event in ${names}`);
  assert.deepEqual(parts.find((p) => p.event === inner).data, { work: { trail: ["inner"] } });
  assert.deepEqual(named(parts, "updates").at(-1), { after: { trail: ["after"] } });
});

// A paused thread, then the resume a chat UI sends; search and history as a thread list shows
// them.
scenario(async function interrupt_resume_search_and_history() {
  const thread = await client.threads.create({ metadata: { owner: "js-approval" } });
  const paused = await collect(
    client.runs.stream(thread.thread_id, "approval", {
      input: { request: "refund 7" },
      streamMode: ["updates"],
    }),
  );
  const pause = named(paused, "updates").find((u) => "__interrupt__" in u);
  assert.equal(pause.__interrupt__[0].value.question, "approve?");
  assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");

  const resumed = await client.runs.wait(thread.thread_id, "approval", { command: { resume: "yes" } });
  assert.deepEqual(resumed.log, ["answer: yes", "acted"]);

  const found = await client.threads.search({ metadata: { owner: "js-approval" } });
  assert.deepEqual(
    found.map((t) => [t.thread_id, t.status]),
    [[thread.thread_id, "idle"]],
  );
  const history = await client.threads.getHistory(thread.thread_id, { limit: 20 });
  assert.deepEqual(history[0].values.log, ["answer: yes", "acted"]);
  assert.deepEqual(history[0].next, []);
  assert.ok(
    history.some((state) => state.next.includes("ask")),
    "the paused checkpoint is in the history",
  );
  const ids = history.map((state) => state.checkpoint.checkpoint_id);
  assert.equal(new Set(ids).size, ids.length, "each checkpoint once");
  const older = await client.threads.getHistory(thread.thread_id, { limit: 1, before: history[0].checkpoint });
  assert.equal(older[0].checkpoint.checkpoint_id, ids[1]);
});

// streamMode "events": LangChain's run events, the run as the root chain, its tasks under it,
// the reply streamed as chat model chunks under the task that wrote it.
scenario(async function events_stream_mode() {
  const parts = await collect(
    client.runs.stream(null, "chat", {
      input: { messages: [{ type: "human", content: "hello there" }] },
      streamMode: "events",
    }),
  );
  assert.deepEqual(new Set(parts.map((p) => p.event)), new Set(["metadata", "events"]));
  const runId = parts[0].data.run_id;
  const evs = named(parts, "events");
  assert.deepEqual(
    [evs[0].event, evs[0].name, evs[0].run_id, evs[0].parent_ids],
    ["on_chain_start", "chat", runId, []],
  );
  const end = evs.at(-1);
  assert.deepEqual([end.event, end.run_id], ["on_chain_end", runId]);
  assert.equal(end.data.output.messages.at(-1).content, "You said: hello there");
  const task = evs.find((e) => e.event === "on_chain_start" && e.name === "agent");
  assert.deepEqual(task.parent_ids, [runId]);
  const chunks = evs.filter((e) => e.event === "on_chat_model_stream");
  assert.ok(chunks.every((e) => e.parent_ids.join() === [runId, task.run_id].join()));
  assert.equal(chunks.map((e) => e.data.chunk.content).join(""), "You said: hello there");
  const taskEnd = evs.find((e) => e.event === "on_chain_end" && e.run_id === task.run_id);
  assert.equal(taskEnd.data.output.messages[0].content, "You said: hello there");
});

// client.threads.joinStream: the thread's runs one after another, each opened by its metadata
// and closed by its run_done; lastEventId resumes after an event.
scenario(async function join_a_threads_stream() {
  const thread = await client.threads.create();
  const runDone = (p) => p.event === "metadata" && p.data.status === "run_done";
  const follow = async (options, runs) => {
    const controller = new AbortController();
    const parts = [];
    for await (const part of client.threads.joinStream(thread.thread_id, { ...options, signal: controller.signal })) {
      parts.push(part);
      if (parts.filter(runDone).length === runs) break;
    }
    controller.abort();
    return parts;
  };
  const following = follow({ streamMode: ["run_modes", "lifecycle"] }, 2);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const first = await client.runs.create(thread.thread_id, "chat", { input: { messages: ["one"] } });
  const second = await client.runs.create(thread.thread_id, "chat", {
    input: { messages: ["two"] },
    streamMode: ["updates"],
    multitaskStrategy: "enqueue",
  });
  const seen = await following;
  assert.deepEqual(
    seen.filter((p) => p.event === "metadata").map((p) => [p.data.status ?? "start", p.data.run_id]),
    [
      ["start", first.run_id],
      ["run_done", first.run_id],
      ["start", second.run_id],
      ["run_done", second.run_id],
    ],
  );
  const ids = seen.map((p) => p.id);
  assert.ok(ids.every(Boolean));
  assert.equal(new Set(ids).size, ids.length);
  const middle = seen.findIndex(runDone);
  const replay = await follow({ lastEventId: seen[middle].id }, 1);
  assert.deepEqual(
    replay.map((p) => [p.event, p.id]),
    seen.slice(middle + 1).map((p) => [p.event, p.id]),
  );
  assert.deepEqual(named(replay, "updates").at(-1), { agent: named(seen, "updates").at(-1).agent });
});

// Versions and subgraphs as this client asks for them: `latest` takes the version in the body,
// and a nested namespace goes into the path as it is, its `|` unescaped.
scenario(async function assistant_versions_and_subgraphs() {
  const made = await client.assistants.create({ graphId: "shipping", name: "js rates", context: { account: "one" } });
  const updated = await client.assistants.update(made.assistant_id, { context: { account: "two" } });
  assert.equal(updated.version, 2);
  const versions = await client.assistants.getVersions(made.assistant_id);
  assert.deepEqual(
    versions.map((v) => [v.version, v.context.account]),
    [
      [2, "two"],
      [1, "one"],
    ],
  );
  const back = await client.assistants.setLatest(made.assistant_id, 1);
  assert.deepEqual([back.version, back.context], [1, { account: "one" }]);
  await assert.rejects(client.assistants.setLatest(made.assistant_id, 5), (error) => error.status === 404);
  await client.assistants.delete(made.assistant_id);

  assert.deepEqual(Object.keys(await client.assistants.getSubgraphs("layered")), ["outer"]);
  const every = await client.assistants.getSubgraphs("layered", { recurse: true });
  assert.deepEqual(Object.keys(every).sort(), ["outer", "outer|inner"]);
  const deep = await client.assistants.getSubgraphs("layered", { namespace: "outer|inner", recurse: true });
  assert.deepEqual(deep, { "outer|inner": every["outer|inner"] });
  assert.equal(deep["outer|inner"].state_schema.description, "The trail of the subgraph.");
});

// A missing thread is a 404 the client reports, not a hang or a crash.
scenario(async function missing_thread() {
  await assert.rejects(client.threads.get("00000000-0000-0000-0000-000000000000"), (error) => {
    assert.equal(error.status, 404);
    return true;
  });
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
