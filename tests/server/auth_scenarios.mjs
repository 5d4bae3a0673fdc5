// Authentication of graphwright-server, driven by LangGraph's JavaScript client
// (@langchain/langgraph-sdk) with `apiKey`.
//
// Usage: node auth_scenarios.mjs http://127.0.0.1:PORT API_KEY SDK_DIR
//
// The server (tests/server_auth.rs) lets in the holder of API_KEY as user `ada` and serves
// `whoami`, whose nodes record who started the run.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import path from "node:path";

const [url, key, sdkDir] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(sdkDir), "package.json"));
const { Client } = require("@langchain/langgraph-sdk");

// Without a key, and with a wrong one: refused, and the error names neither key.
for (const apiKey of [null, "not-the-key"]) {
  const client = new Client({ apiUrl: url, apiKey, defaultHeaders: {}, callerOptions: { maxRetries: 0 } });
  await assert.rejects(client.threads.create(), (error) => {
    assert.equal(error.status, 401, String(error));
    assert.ok(!String(error.message).includes(key), error.message);
    return true;
  });
}

// With the key: a thread, a run waited on and one streamed, both seeing the user.
const client = new Client({ apiUrl: url, apiKey: key });
const thread = await client.threads.create();
const values = await client.runs.wait(thread.thread_id, "whoami", { input: {} });
assert.deepEqual(values.seen, ["direct:ada", "inner:ada"]);
const parts = [];
for await (const part of client.runs.stream(thread.thread_id, "whoami", { input: {}, streamMode: "values" })) {
  parts.push(part);
}
const last = parts.filter((p) => p.event === "values").at(-1);
assert.deepEqual(last.data.seen, ["direct:ada", "inner:ada", "direct:ada", "inner:ada"]);
assert.ok(!JSON.stringify(parts).includes(key), "the key reached a run's events");

console.log("all scenarios passed");
