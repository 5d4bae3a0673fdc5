// What a chat front end on another origin relies on, checked from inside the browser: the
// preflights pass, the exposed headers can be read, a stream is rejoined through the run id
// the client reads from `Content-Location`, and threads are found by their graph. On an origin
// the server does not allow (`?expect=refused`), every request is blocked instead.
//
// Each scenario's outcome goes into `window.results`; `window.done` is set at the end.

import { Client } from "@langchain/langgraph-sdk";

const params = new URLSearchParams(location.search);
const api = params.get("api");
const client = new Client({ apiUrl: api, apiKey: null, defaultHeaders: { "x-api-key": "not-checked" } });
const results = [];
const out = document.getElementById("results");

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function collect(stream) {
  const parts = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

async function run(name, fn) {
  try {
    const detail = await fn();
    results.push({ name, ok: true, detail });
  } catch (error) {
    results.push({ name, ok: false, detail: String(error?.stack ?? error) });
  }
  out.textContent = JSON.stringify(results, null, 2);
}

async function allowed() {
  let created;
  let thread;
  await run("a chat UI's streamed run, with the run id from Content-Location", async () => {
    thread = await client.threads.create();
    const parts = await collect(
      client.runs.stream(thread.thread_id, "chat", {
        input: { messages: [{ type: "human", content: "hello from the page" }] },
        streamMode: ["values", "messages-tuple", "custom"],
        streamSubgraphs: true,
        streamResumable: true,
        onDisconnect: "continue",
        onRunCreated: (meta) => {
          created = meta;
        },
      }),
    );
    check(created?.run_id, "onRunCreated got no run id: Content-Location was not readable");
    check(created.thread_id === thread.thread_id, `Content-Location names thread ${created.thread_id}`);
    const text = parts
      .filter((p) => p.event === "messages" && p.data[0].type === "AIMessageChunk")
      .map((p) => p.data[0].content)
      .join("");
    check(text === "You said: hello from the page", `the reply streamed as ${JSON.stringify(text)}`);
    check(parts.every((p) => p.id), "a resumable stream gives every event an id");
    return { events: parts.length, run_id: created.run_id };
  });

  await run("the stream rejoined by that run id replays every event", async () => {
    const replay = await collect(client.runs.joinStream(thread.thread_id, created.run_id, { lastEventId: "-1" }));
    const names = replay.map((p) => p.event);
    check(names[0] === "metadata", `the replay starts with ${names[0]}`);
    check(names.includes("values") && names.includes("messages"), `the replay holds ${names}`);
    return { events: replay.length };
  });

  await run("the thread is found by its graph, as the history sidebar lists it", async () => {
    const found = await client.threads.search({ metadata: { graph_id: "chat" }, limit: 100 });
    check(
      found.some((t) => t.thread_id === thread.thread_id),
      `search by graph_id found ${found.map((t) => t.thread_id)}`,
    );
    const own = found.find((t) => t.thread_id === thread.thread_id);
    check(typeof own.metadata.assistant_id === "string", "the thread's metadata names its assistant");
    const history = await client.threads.getHistory(thread.thread_id, { limit: 10 });
    const first = history.at(-1);
    check(JSON.stringify(first.next) === '["__start__"]', `the input checkpoint's next is ${JSON.stringify(first.next)}`);
    return { threads: found.length };
  });

  await run("pagination headers are readable", async () => {
    const response = await fetch(`${api}/threads/search`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ limit: 1 }),
    });
    const total = response.headers.get("x-pagination-total");
    check(total !== null && Number(total) >= 1, `X-Pagination-Total reads ${total}`);
    return { total: Number(total) };
  });
}

async function refused() {
  await run("a client request from this origin is blocked", async () => {
    try {
      await client.threads.search({ limit: 1 });
    } catch (error) {
      return { error: String(error) };
    }
    throw new Error("the page read the server's threads");
  });
  await run("a request with no preflight is refused too, and starts nothing", async () => {
    try {
      await fetch(`${api}/threads`, { method: "POST", headers: { "content-type": "text/plain" }, body: "{}" });
    } catch (error) {
      return { error: String(error) };
    }
    throw new Error("the page read the answer to its request");
  });
}

await (params.get("expect") === "refused" ? refused() : allowed());
window.results = results;
window.done = true;
