// The studio at `/` in headless Chromium (driven by playwright-core), scenario by scenario: the
// graph drawn (nodes, edges, dashed conditional edges, subgraphs opened and folded), nodes lit
// as a run's events arrive, the thread's checkpoints listed and shown, a field edited and the
// thread forked there, runs from a checkpoint, a fork refused, and the tokens and tool outcomes
// noted beside their nodes. What the page shows is checked against the API's own answers.
//
// Usage: node studio_check.mjs URL NODE_DIR CHROMIUM SHOTS_DIR
//
// NODE_DIR is a folder whose node_modules holds playwright-core (scripts/test prepares one).
// Screenshots land in SHOTS_DIR as studio-*.png; the last line printed is `all scenarios
// passed` when every scenario held, after one JSON line `{"thread", "fork"}` naming the thread
// the checkpoint scenarios used and the checkpoint the page forked. The graphs (desk, slow,
// forecast) are served by tests/server_sdk.rs.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import path from "node:path";

const [url, nodeDir, executablePath, shots] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(nodeDir), "package.json"));
const { chromium } = require("playwright-core");

const scenarios = [];
const scenario = (fn) => scenarios.push(fn);
const shot = (name) => path.join(shots, `studio-${name}.png`);

async function call(pathname, body) {
  const response = await fetch(new URL(pathname, url), {
    method: body === undefined ? "GET" : "POST",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.ok(response.ok, `${pathname}: ${response.status} ${await response.clone().text()}`);
  return response.json();
}

const history = (thread) => call(`/threads/${thread}/history`, { limit: 100 });

// The drawn nodes' ids and the drawn edges as `source>target` (with ` dashed` when their line
// is dashed as the browser draws it).
async function drawing(page) {
  return page.evaluate(() => ({
    nodes: [...document.querySelectorAll("#graph g.node")].map((g) => g.dataset.node),
    edges: [...document.querySelectorAll("#graph path.edge")].map((p) => {
      const dashed = getComputedStyle(p).strokeDasharray !== "none";
      return `${p.dataset.source}>${p.dataset.target}${dashed ? " dashed" : ""}`;
    }),
  }));
}

// Waits until the page says how the thread stands after its run.
async function ranToTheEnd(page) {
  await page.waitForFunction(() => {
    const status = document.getElementById("status");
    const settled = status.textContent.startsWith("thread ") && !document.getElementById("send").disabled;
    return settled || status.className === "error";
  });
  assert.equal(await page.textContent("#status"), "thread idle");
}

async function send(page, text) {
  await page.fill("#input", text);
  await page.click("#send");
  await ranToTheEnd(page);
}

// What the page shows of the checkpoint picked: its title and each field's text.
async function shown(page) {
  return page.evaluate(() => ({
    title: document.getElementById("checkpoint-title").textContent,
    fields: Object.fromEntries(
      [...document.querySelectorAll("#fields textarea")].map((box) => [box.dataset.field, box.value]),
    ),
  }));
}

async function forkAt(page, field, text) {
  await page.fill(`#fields textarea[data-field="${field}"]`, text);
  await page.click("#fork");
  await page.waitForFunction(() => document.getElementById("checkpoint-status").textContent !== "");
  return page.evaluate(() => {
    const status = document.getElementById("checkpoint-status");
    return { text: status.textContent, error: status.className === "error" };
  });
}

// The graph with a conditional edge and a subgraph holding another: folded, each subgraph is
// one node; opened, its nodes sit inside its frame and the parent's edges reach them.
scenario(async function graph_is_drawn_with_its_subgraphs(page) {
  await page.goto(`${url}/?graph=desk`);
  await page.waitForSelector('#graph g.node[data-node="triage"]');
  let { nodes, edges } = await drawing(page);
  assert.deepEqual(nodes.sort(), ["__end__", "__start__", "report", "research", "triage"]);
  assert.deepEqual(edges.sort(), [
    "__start__>triage",
    "report>__end__",
    "research>report",
    "triage>__end__ dashed",
    "triage>research dashed",
  ]);
  assert.equal(await page.getAttribute('g.node[data-node="research"]', "aria-expanded"), "false");
  assert.match(await page.getAttribute('g.node[data-node="research"]', "class"), /\bsubgraph\b/);

  await page.click('g.node[data-node="research"]');
  await page.click('g.node[data-node="research:inner"]');
  ({ nodes, edges } = await drawing(page));
  const opened = ["research:after", "research:before", "research:inner:work"];
  assert.deepEqual(nodes.sort(), ["__end__", "__start__", "report", ...opened, "triage"]);
  for (const edge of [
    "triage>research:before dashed",
    "research:before>research:inner:work",
    "research:inner:work>research:after",
    "research:after>report",
  ]) {
    assert.ok(edges.includes(edge), `no edge ${edge} in ${edges}`);
  }
  // Each node sits inside the frames of the subgraphs that hold it, and no other node does.
  const placed = await page.evaluate(() => {
    const box = (el) => el.getBoundingClientRect();
    const frames = [...document.querySelectorAll("#graph g.frame")].map((g) => [
      g.dataset.frame,
      box(g.querySelector("rect")),
    ]);
    return [...document.querySelectorAll("#graph g.node")].map((g) => {
      const b = box(g.querySelector("rect"));
      const within = (f) => b.left >= f.left && b.right <= f.right && b.top >= f.top && b.bottom <= f.bottom;
      const inside = frames.filter(([, f]) => within(f));
      return [g.dataset.node, inside.map(([name]) => name).sort()];
    });
  });
  assert.deepEqual(Object.fromEntries(placed), {
    __start__: [],
    triage: [],
    "research:before": ["research"],
    "research:inner:work": ["research", "research:inner"],
    "research:after": ["research"],
    report: [],
    __end__: [],
  });
  await page.screenshot({ path: shot("graph") });

  // Folding the outer frame folds the inner one with it.
  await page.click('#graph .frame-title[data-toggle="research"]');
  ({ nodes } = await drawing(page));
  assert.deepEqual(nodes.sort(), ["__end__", "__start__", "report", "research", "triage"]);
  assert.equal(await page.locator("#graph g.frame").count(), 0);
});

// While a run streams, its nodes light up as their tasks start (a subgraph's nodes inside its
// frame), and are marked as run once they have.
scenario(async function a_run_lights_its_nodes_as_events_arrive(page) {
  await page.goto(`${url}/?graph=desk`);
  await page.waitForSelector('#graph g.node[data-node="research"]');
  await page.click('g.node[data-node="research"]');
  // The nodes lit, in the order they were: a class's value after each change is the value the
  // next change of that element found, or its value now.
  await page.evaluate(() => {
    window.lit = [];
    new MutationObserver((changes) => {
      changes.forEach((change, i) => {
        const g = change.target;
        const later = changes.slice(i + 1).find((c) => c.target === g);
        const value = later ? later.oldValue : g.getAttribute("class");
        const id = g.dataset.node ?? g.dataset.frame;
        if (/\brunning\b/.test(value ?? "") && window.lit.at(-1) !== id) window.lit.push(id);
      });
    }).observe(document.getElementById("graph"), {
      attributeFilter: ["class"],
      attributeOldValue: true,
      subtree: true,
    });
  });
  await send(page, '{"topic": "tides"}');
  const lit = await page.evaluate(() => window.lit);
  const order = ["triage", "research", "research:before", "research:inner", "research:after", "report"];
  assert.deepEqual(order.map((id) => lit.includes(id)), order.map(() => true), `lit: ${lit}`);
  const first = order.map((id) => lit.indexOf(id));
  assert.deepEqual(first, [...first].sort((a, b) => a - b), `lit in another order: ${lit}`);
  const after = await page.evaluate(() =>
    Object.fromEntries(
      [...document.querySelectorAll("#graph g.node, #graph g.frame")].map((g) => [
        g.dataset.node ?? g.dataset.frame,
        g.getAttribute("class"),
      ]),
    ),
  );
  for (const id of order) assert.match(after[id], /\bran\b/, `${id}: ${after[id]}`);
  assert.ok(!Object.values(after).some((c) => /\brunning\b/.test(c)), "nothing runs once the run has ended");
  assert.doesNotMatch(after.__end__, /\bran\b/);
});

// A run caught in the middle: the node running is drawn lit.
scenario(async function the_running_node_is_drawn_lit(page) {
  await page.goto(`${url}/?graph=slow`);
  await page.waitForSelector('#graph g.node[data-node="tick"]');
  await page.fill("#input", '{"steps": 3, "pause_ms": 1200}');
  await page.click("#send");
  await page.waitForSelector('#graph g.node.running[data-node="tick"]');
  await page.screenshot({ path: shot("running") });
  await ranToTheEnd(page);
  assert.doesNotMatch(await page.getAttribute('g.node[data-node="tick"]', "class"), /\brunning\b/);
});

let forked = {};

// The timeline lists the thread's checkpoints as the API has them; picking one shows its state
// and lights what runs next; a bad edit is refused and changes nothing; a good one forks the
// thread there, and running from the fork, or from an earlier checkpoint, goes on from it.
scenario(async function checkpoints_are_shown_edited_forked_and_run_again(page) {
  await page.goto(`${url}/?graph=desk&message=${encodeURIComponent('{"topic": "tides"}')}`);
  await ranToTheEnd(page);
  const thread = new URL(page.url()).searchParams.get("thread");
  const states = (await history(thread)).reverse();
  const listed = await page.$$eval("#timeline button[data-checkpoint]", (all) => all.map((b) => b.dataset.checkpoint));
  assert.deepEqual(listed, states.map((s) => s.checkpoint.checkpoint_id));

  const before = states.find((s) => s.next.length === 1 && s.next[0] === "research");
  const at = before.checkpoint.checkpoint_id;
  await page.click(`#timeline button[data-checkpoint="${at}"]`);
  let picked = await shown(page);
  assert.match(picked.title, /step 1 · next research/);
  assert.deepEqual(JSON.parse(picked.fields.topic), "tides");
  assert.deepEqual(JSON.parse(picked.fields.trail), before.values.trail);
  assert.match(await page.getAttribute('g.node[data-node="research"]', "class"), /\bnext\b/);

  const count = states.length;
  let said = await forkAt(page, "topic", '"moon');
  assert.ok(said.error && said.text.startsWith("topic is not JSON"), said.text);
  said = await forkAt(page, "topic", "5");
  assert.ok(said.error && said.text.startsWith("The fork was refused:"), said.text);
  assert.equal((await history(thread)).length, count, "a refused fork wrote no checkpoint");
  assert.equal((await call(`/threads/${thread}/state`)).values.topic, "tides");

  said = await forkAt(page, "topic", '"moon"');
  assert.ok(!said.error && said.text.startsWith("Forked from"), said.text);
  const latest = await call(`/threads/${thread}/state`);
  const fork = latest.checkpoint.checkpoint_id;
  assert.equal(latest.values.topic, "moon");
  assert.equal(latest.parent_checkpoint.checkpoint_id, at, "the fork branches from the checkpoint picked");
  assert.deepEqual(latest.next, ["research"]);
  assert.equal(await page.getAttribute(`#timeline button[data-checkpoint="${fork}"]`, "aria-pressed"), "true");
  assert.match(await page.getAttribute(`#timeline button[data-checkpoint="${fork}"]`, "class"), /\bbranch\b/);
  assert.equal(JSON.parse((await shown(page)).fields.topic), "moon");

  await page.click("#replay");
  await ranToTheEnd(page);
  const fromFork = await call(`/threads/${thread}/state`);
  assert.equal(fromFork.values.trail.at(-1), "report: moon");
  assert.match(await page.textContent("#state"), /report: moon/);

  const first = states.find((s) => s.next[0] === "triage").checkpoint.checkpoint_id;
  await page.click(`#timeline button[data-checkpoint="${first}"]`);
  await page.click("#replay");
  await ranToTheEnd(page);
  const again = await history(thread);
  const replayed = again.find((s) => s.metadata.source === "fork" && s.parent_checkpoint?.checkpoint_id === first);
  assert.ok(replayed, "a run from a checkpoint starts from it");
  assert.deepEqual(again[0].values.trail, ["triage: tides", "before", "inner", "after", "report: tides"]);
  const rows = await page.$$eval("#timeline button[data-checkpoint]", (all) => all.length);
  assert.equal(rows, again.length);
  await page.click(`#timeline button[data-checkpoint="${fork}"]`);
  await page.screenshot({ path: shot("timeline") });
  forked = { thread, fork };
});

// Each model call's tokens beside the node that called the model, each tool call's outcome
// beside the node that ran it.
scenario(async function tokens_and_tool_outcomes_beside_their_nodes(page) {
  await page.goto(`${url}/?graph=forecast&message=${encodeURIComponent("what is the weather?")}`);
  await ranToTheEnd(page);
  const notes = await page.evaluate(() =>
    Object.fromEntries(
      [...document.querySelectorAll("#graph g.node")].map((g) => [
        g.dataset.node,
        [...g.querySelectorAll(".note")].map((n) => `${n.getAttribute("class")}: ${n.textContent}`),
      ]),
    ),
  );
  assert.deepEqual(notes.agent, ["note tokens: tokens 12 in · 7 out", "note tokens: tokens 12 in · 7 out"]);
  assert.deepEqual(notes.tools, ["note tool-success: weather: success"]);
  assert.deepEqual(notes.__start__, []);
  assert.ok(await page.isVisible("text=In Oslo it is 3 °C in Oslo."), "the chat shows the answer");
  await page.screenshot({ path: shot("forecast") });
});

const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
let failed = 0;
try {
  for (const fn of scenarios) {
    const page = await browser.newPage({ viewport: { width: 900, height: 700 } });
    const problems = [];
    page.on("pageerror", (error) => problems.push(String(error)));
    page.setDefaultTimeout(20000);
    try {
      await fn(page);
      assert.deepEqual(problems, [], "the page's script failed");
      console.log(`ok   ${fn.name}`);
    } catch (error) {
      failed += 1;
      console.log(`FAIL ${fn.name}: ${error.stack ?? error}`);
    } finally {
      await page.close();
    }
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(forked));
if (failed) {
  console.log(`${failed} of ${scenarios.length} scenarios failed`);
  process.exit(1);
}
console.log("all scenarios passed");
