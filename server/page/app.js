// The studio's page: the chosen graph drawn (graph.js, laid out by layout.js), the thread's
// checkpoints to pick, edit, fork and run from (timeline.js), and a chat that streams the
// thread's runs from the Agent Server API (the same endpoints LangGraph's clients call) and shows
// messages as they arrive, tool calls, and interrupts to answer. Runs stream `values`,
// `messages-tuple` and `updates` for the chat, and `tasks` and `events` (with subgraphs) for the
// graph's lights and notes. Plain ES modules served as they are: no build step.
//
// Query parameters: `graph` picks the graph, `thread` opens a thread, and `message` sends a
// first message once the page has loaded. A server with authentication answers 401: the page
// then asks for an API key, keeps it for the tab (sessionStorage, never in the URL) and sends it
// as `x-api-key`, as LangGraph's clients do (api.js).

import { api, headers, KEY, Unauthorized } from "./api.js";
import { GraphView } from "./graph.js";
import { Timeline } from "./timeline.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
let threadId = params.get("thread");
// Messages streamed token by token, by message id, until the run's values replace them.
const streaming = new Map();
const graph = new GraphView($("graph"), $("graph-status"));
const timeline = new Timeline(
  {
    list: $("timeline"),
    form: $("checkpoint"),
    fields: $("fields"),
    title: $("checkpoint-title"),
    status: $("checkpoint-status"),
    replay: $("replay"),
  },
  {
    select: (state) => graph.showNext(state?.next ?? []),
    fork: () => showLatest().catch((error) => status(String(error.message ?? error), true)),
    replay: (checkpointId) => run({ input: null, checkpoint_id: checkpointId }),
  },
);

// Shows the key form with the server's reason, and resolves once a key is given.
function askForKey(reason) {
  status(reason, true);
  $("key-form").hidden = false;
  $("key").focus();
  return new Promise((resolve) => {
    $("key-form").addEventListener(
      "submit",
      (event) => {
        event.preventDefault();
        sessionStorage.setItem(KEY, $("key").value.trim());
        $("key").value = "";
        $("key-form").hidden = true;
        status("");
        resolve();
      },
      { once: true },
    );
  });
}

function status(text, isError) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "muted";
}

function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part === "string" ? part : part.text ?? "")).join("");
  return content == null ? "" : JSON.stringify(content);
}

function bubble(type, text, id) {
  const item = document.createElement("li");
  item.className = `message ${type}`;
  if (id) item.dataset.id = id;
  item.textContent = text;
  $("messages").append(item);
  return item;
}

function renderMessages(messages) {
  $("messages").replaceChildren();
  streaming.clear();
  for (const message of messages) {
    const type = ["human", "ai", "tool", "system"].includes(message.type) ? message.type : "ai";
    const label = type === "tool" ? `${message.name ?? "tool"}: ` : "";
    const item = bubble(type, label + textOf(message.content), message.id);
    for (const call of message.tool_calls ?? []) {
      const line = document.createElement("span");
      line.className = "tool-call";
      line.textContent = `calls ${call.name}(${JSON.stringify(call.args)})`;
      item.append(line);
    }
  }
}

function renderValues(values) {
  const { __interrupt__: pause, ...state } = values ?? {};
  $("state").textContent = JSON.stringify(state, null, 2);
  if (Array.isArray(state.messages)) {
    renderMessages(state.messages);
  } else {
    $("state-panel").open = true;
  }
  if (pause) showInterrupt(pause);
}

function showInterrupt(interrupts) {
  $("interrupt").hidden = false;
  $("interrupt-value").textContent = interrupts.length
    ? JSON.stringify(interrupts[0].value, null, 2)
    : "Paused at a breakpoint: resume to go on.";
  $("answer").focus();
}

function onChunk([chunk]) {
  if (!String(chunk.type).startsWith("AIMessageChunk") || !chunk.id) return;
  const item = streaming.get(chunk.id) ?? bubble("ai", "", chunk.id);
  streaming.set(chunk.id, item);
  item.textContent += textOf(chunk.content);
}

// One streamed event, named `mode` or `mode|namespace` (a subgraph's): the graph sees all of
// them, the chat only the run's own graph's.
function onEvent(name, data) {
  const [event, ...namespace] = name.split("|");
  graph.onEvent(event, namespace, data);
  if (namespace.length) return;
  if (event === "values") renderValues(data);
  else if (event === "messages") onChunk(data);
  else if (event === "updates" && data.__interrupt__) showInterrupt(data.__interrupt__);
  else if (event === "error") status(`The run failed: ${data.message ?? JSON.stringify(data)}`, true);
}

// Reads a `text/event-stream` body, calling `onEvent` for each event.
async function readEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replaceAll("\r\n", "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length) onEvent(event, JSON.parse(data.join("\n")));
    }
  }
}

async function ensureThread() {
  if (!threadId) {
    threadId = (await api("/threads", {})).thread_id;
    showThread();
  }
  return threadId;
}

function showThread() {
  $("thread").textContent = threadId ? `thread ${threadId}` : "no thread yet";
  const url = new URL(location.href);
  url.searchParams.delete("message");
  if (threadId) url.searchParams.set("thread", threadId);
  history.replaceState(null, "", url);
}

async function run(body) {
  $("send").disabled = true;
  $("replay").disabled = true;
  $("interrupt").hidden = true;
  status("running…");
  graph.startRun();
  try {
    const thread = await ensureThread();
    const response = await fetch(`/threads/${thread}/runs/stream`, {
      method: "POST",
      headers: headers(true),
      body: JSON.stringify({
        assistant_id: $("assistant").value,
        stream_mode: ["values", "messages-tuple", "updates", "tasks", "events"],
        stream_subgraphs: true,
        ...body,
      }),
    });
    if (!response.ok) throw new Error((await response.json()).detail);
    await readEvents(response);
    const after = await api(`/threads/${thread}`);
    if ($("status").className !== "error") status(`thread ${after.status}`);
    await timeline.load(thread);
  } catch (error) {
    status(String(error.message ?? error), true);
  } finally {
    $("send").disabled = false;
    $("replay").disabled = false;
  }
}

// Text is a human message; a JSON object is the run's input as it is.
function inputOf(text) {
  try {
    const value = JSON.parse(text);
    if (value && typeof value === "object" && !Array.isArray(value)) return value;
  } catch {
    // not JSON: a message
  }
  return { messages: [{ type: "human", content: text }] };
}

function answerOf(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function loadThread() {
  if (!threadId) return;
  const state = await showLatest();
  if (state.next.length) showInterrupt(state.interrupts);
}

// Shows the thread's latest values: after a fork, the fork's (it waits to be run from, not
// answered).
async function showLatest() {
  const state = await api(`/threads/${threadId}/state`);
  renderValues(state.values);
  $("interrupt").hidden = true;
  return state;
}

// The graphs served, asking for a key for as long as the server refuses the one given.
async function graphs() {
  for (;;) {
    try {
      return await api("/assistants/search", { limit: 100, metadata: { created_by: "system" } });
    } catch (error) {
      if (!(error instanceof Unauthorized)) throw error;
      await askForKey(error.message);
    }
  }
}

async function start() {
  const assistants = await graphs();
  for (const assistant of assistants) {
    $("assistant").append(new Option(assistant.graph_id, assistant.assistant_id));
  }
  const wanted = params.get("graph");
  const chosen = assistants.find((a) => a.graph_id === wanted);
  if (chosen) $("assistant").value = chosen.assistant_id;
  $("assistant").addEventListener("change", () => graph.load($("assistant").value));
  const drawn = graph.load($("assistant").value);

  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("input").value.trim();
    if (!text) return;
    $("input").value = "";
    run({ input: inputOf(text) });
  });
  $("resume-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("answer").value.trim();
    $("answer").value = "";
    run(text ? { command: { resume: answerOf(text) } } : { input: null });
  });
  $("new-thread").addEventListener("click", () => {
    threadId = null;
    showThread();
    renderValues({});
    $("interrupt").hidden = true;
    status("");
    graph.startRun();
    timeline.load(null);
  });
  showThread();
  await drawn;
  await loadThread();
  await timeline.load(threadId);
  const first = params.get("message");
  if (first) await run({ input: inputOf(first) });
}

start().catch((error) => status(String(error.message ?? error), true));
