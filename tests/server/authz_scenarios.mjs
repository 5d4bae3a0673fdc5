// Authorization of graphwright-server (owner isolation), driven by LangGraph's JavaScript
// client (@langchain/langgraph-sdk) as two users at once.
//
// Usage: node authz_scenarios.mjs URL_OF_ADA URL_OF_BOB SDK_DIR
//
// The server (tests/server_authz.rs) lets in `key-ada` as user `ada` and `key-bob` as `bob`
// under the built-in `OwnerIsolation` policy, and serves `whoami`, whose node records who
// started the run. Bob tries the client's calls on ada's thread, runs, assistant, cron and store
// namespace: each must fail with 404 (a record he may not see is missing) or 403 (a store
// namespace that is not his), and searches must leave ada's records out. Prints
// `all scenarios passed` when every check held.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import path from "node:path";

const [adaUrl, bobUrl, sdkDir] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(sdkDir), "package.json"));
const { Client } = require("@langchain/langgraph-sdk");

// No retries: a refusal must come back as it is, at once.
const client = (apiUrl, apiKey) => new Client({ apiUrl, apiKey, callerOptions: { maxRetries: 0 } });
const ada = client(adaUrl, "key-ada");
const bob = client(bobUrl, "key-bob");

// Runs every call of `attempts` (a promise, or a stream read to its end) and fails listing
// each one that did not fail with HTTP `status`.
async function expectStatus(status, attempts) {
  const failures = [];
  for (const [what, make] of Object.entries(attempts)) {
    try {
      const result = make();
      if (result && typeof result[Symbol.asyncIterator] === "function") {
        for await (const _ of result);
      } else {
        await result;
      }
      failures.push(`${what}: succeeded, expected ${status}`);
    } catch (error) {
      if (error?.status !== status) failures.push(`${what}: got ${error?.status ?? error}, expected ${status}`);
    }
  }
  assert.deepEqual(failures, []);
}

const scenarios = {
  async anotherUsersThreadAndRunsAreNotFound() {
    const topic = randomUUID();
    const thread = await ada.threads.create({ metadata: { topic } });
    assert.equal(thread.metadata.owner, "ada");
    const id = thread.thread_id;
    const run = await ada.runs.create(id, "whoami", { input: {}, streamResumable: true });
    const values = await ada.runs.join(id, run.run_id);
    assert.deepEqual(values.seen, ["ada"]);

    await expectStatus(404, {
      "threads.get": () => bob.threads.get(id),
      "threads.update": () => bob.threads.update(id, { metadata: { taken_by: "bob" } }),
      "threads.delete": () => bob.threads.delete(id),
      "threads.copy": () => bob.threads.copy(id),
      "threads.getState": () => bob.threads.getState(id),
      "threads.updateState": () => bob.threads.updateState(id, { values: { seen: ["bob"] } }),
      "threads.getHistory": () => bob.threads.getHistory(id),
      "threads.joinStream": () => bob.threads.joinStream(id, { lastEventId: "-1" }),
      "runs.list": () => bob.runs.list(id),
      "runs.get": () => bob.runs.get(id, run.run_id),
      "runs.join": () => bob.runs.join(id, run.run_id),
      "runs.joinStream": () => bob.runs.joinStream(id, run.run_id, { lastEventId: "-1" }),
      "runs.cancel": () => bob.runs.cancel(id, run.run_id),
      "runs.delete": () => bob.runs.delete(id, run.run_id),
      "runs.create": () => bob.runs.create(id, "whoami", { input: {} }),
      "runs.wait": () => bob.runs.wait(id, "whoami", { input: {} }),
      "runs.stream": () => bob.runs.stream(id, "whoami", { input: {} }),
      "crons.createForThread": () => bob.crons.createForThread(id, "whoami", { schedule: "0 0 1 1 *", input: {} }),
    });

    const kept = await ada.threads.get(id);
    assert.equal(kept.metadata.owner, "ada");
    assert.equal(kept.metadata.topic, topic);
    assert.equal(kept.metadata.taken_by, undefined);
    assert.deepEqual((await ada.threads.getState(id)).values.seen, ["ada"]);
    assert.deepEqual((await ada.runs.list(id)).map((r) => r.run_id), [run.run_id]);
  },

  async theOwnerStaysTheCreatorAndSearchesHoldOnesOwn() {
    const topic = randomUUID();
    const thread = await ada.threads.create({ metadata: { owner: "bob", topic } });
    assert.equal(thread.metadata.owner, "ada");
    const patched = await ada.threads.update(thread.thread_id, { metadata: { owner: "bob" } });
    assert.equal(patched.metadata.owner, "ada");
    const his = await bob.threads.create({ metadata: { topic } });
    const ids = (threads) => threads.map((t) => t.thread_id);
    assert.deepEqual(ids(await ada.threads.search({ metadata: { topic } })), [thread.thread_id]);
    assert.deepEqual(ids(await bob.threads.search({ metadata: { topic } })), [his.thread_id]);
    assert.deepEqual(await bob.threads.search({ metadata: { owner: "ada" }, limit: 1000 }), []);
    assert.equal(await bob.threads.count({ metadata: { topic } }), 1);
    await expectStatus(409, {
      "threads.create(doNothing)": () => bob.threads.create({ threadId: thread.thread_id, ifExists: "do_nothing" }),
    });
  },

  async aUsersAssistantIsTheirsAndTheDefaultsAreEveryones() {
    const team = randomUUID();
    const mine = await ada.assistants.create({ graphId: "whoami", metadata: { owner: "bob", team } });
    assert.equal(mine.metadata.owner, "ada");
    const id = mine.assistant_id;
    await expectStatus(404, {
      "assistants.get": () => bob.assistants.get(id),
      "assistants.getGraph": () => bob.assistants.getGraph(id),
      "assistants.getSchemas": () => bob.assistants.getSchemas(id),
      "assistants.getVersions": () => bob.assistants.getVersions(id),
      "assistants.update": () => bob.assistants.update(id, { name: "bob's now" }),
      "assistants.delete": () => bob.assistants.delete(id),
      "runs.wait(stateless)": () => bob.runs.wait(null, id, { input: {} }),
    });
    assert.deepEqual(await bob.assistants.search({ metadata: { team } }), []);
    assert.equal(await bob.assistants.count({ metadata: { team } }), 0);
    assert.equal(await ada.assistants.count({ metadata: { team } }), 1);

    const defaults = (await bob.assistants.search({ graphId: "whoami", limit: 1000 })).filter(
      (a) => a.metadata.created_by === "system",
    );
    assert.equal(defaults.length, 1);
    const fallback = defaults[0].assistant_id;
    await expectStatus(403, {
      "assistants.update(default)": () => bob.assistants.update(fallback, { name: "mine" }),
      "assistants.delete(default)": () => bob.assistants.delete(fallback),
    });
    assert.deepEqual((await bob.runs.wait(null, "whoami", { input: {} })).seen, ["bob"]);
    await ada.assistants.delete(id);
  },

  async aCronBelongsToItsCreator() {
    const label = randomUUID();
    const cron = await ada.crons.create("whoami", { schedule: "0 0 1 1 *", input: {}, metadata: { label } });
    assert.equal(cron.user_id, "ada");
    await expectStatus(404, {
      "crons.update": () => bob.crons.update(cron.cron_id, { schedule: "* * * * * *" }),
      "crons.delete": () => bob.crons.delete(cron.cron_id),
    });
    assert.ok((await bob.crons.search({ limit: 1000 })).every((c) => c.cron_id !== cron.cron_id));
    assert.ok((await ada.crons.search({ limit: 1000 })).some((c) => c.cron_id === cron.cron_id));
    await ada.crons.delete(cron.cron_id);
  },

  async storeNamespacesStartWithTheCallersIdentity() {
    const shelf = `notes-${randomUUID()}`;
    await ada.store.putItem(["ada", shelf], "k", { text: "ada's" });
    await bob.store.putItem(["bob", shelf], "k", { text: "bob's" });
    await expectStatus(403, {
      "bob: getItem(ada's)": () => bob.store.getItem(["ada", shelf], "k"),
      "bob: putItem(ada's)": () => bob.store.putItem(["ada", shelf], "k", { text: "bob was here" }),
      "bob: deleteItem(ada's)": () => bob.store.deleteItem(["ada", shelf], "k"),
      "bob: searchItems(ada)": () => bob.store.searchItems(["ada"]),
      "bob: listNamespaces(ada)": () => bob.store.listNamespaces({ prefix: ["ada"] }),
    });
    assert.deepEqual((await ada.store.getItem(["ada", shelf], "k")).value, { text: "ada's" });
    const items = (await bob.store.searchItems([], { limit: 1000 })).items;
    assert.ok(items.every((item) => item.namespace[0] === "bob"), JSON.stringify(items));
    const namespaces = (await bob.store.listNamespaces({ limit: 1000 })).namespaces;
    assert.ok(namespaces.every((ns) => ns[0] === "bob"), JSON.stringify(namespaces));
    assert.ok(namespaces.some((ns) => ns[1] === shelf), JSON.stringify(namespaces));
  },
};

let failed = 0;
for (const [name, scenario] of Object.entries(scenarios)) {
  try {
    await scenario();
    console.log(`ok   ${name}`);
  } catch (error) {
    failed += 1;
    console.log(`FAIL ${name}: ${error?.message ?? error}`);
  }
}
if (failed) {
  console.log(`${failed} of ${Object.keys(scenarios).length} scenarios failed`);
  process.exit(1);
}
console.log("all scenarios passed");
