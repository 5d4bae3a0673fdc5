// The browser side of tests/server_browser.rs, in two steps.
//
//   node cross_origin_check.mjs build OUT_DIR NODE_DIR
//     bundles tests/server/cross_origin/scenarios.mjs with LangGraph's JavaScript client into
//     OUT_DIR/bundle.js (esbuild), beside a copy of index.html, for a server to serve.
//   node cross_origin_check.mjs open PAGE_URL NODE_DIR CHROMIUM
//     opens the page in headless Chromium (driven by playwright-core), waits for its scenarios
//     and prints one JSON line: `{finished, results, console, failed, statuses}`, with the
//     page's console errors, the requests the browser failed or blocked, and every response's
//     status.
//
// NODE_DIR is a folder whose node_modules holds the client, esbuild and playwright-core
// (scripts/test prepares one). In the browser, `evil.test` resolves to 127.0.0.1, for a page on
// an origin that is not loopback.

import { copyFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const [step, target, nodeDir, executablePath] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(nodeDir), "package.json"));
const here = path.join(path.dirname(fileURLToPath(import.meta.url)), "cross_origin");

async function build(outDir) {
  const esbuild = require("esbuild");
  await esbuild.build({
    entryPoints: [path.join(here, "scenarios.mjs")],
    bundle: true,
    format: "esm",
    platform: "browser",
    outfile: path.join(outDir, "bundle.js"),
    nodePaths: [path.join(path.resolve(nodeDir), "node_modules")],
    logLevel: "error",
  });
  copyFileSync(path.join(here, "index.html"), path.join(outDir, "index.html"));
}

async function open(url) {
  const { chromium } = require("playwright-core");
  const browser = await chromium.launch({
    executablePath,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--host-resolver-rules=MAP evil.test 127.0.0.1",
    ],
  });
  try {
    const page = await browser.newPage();
    const consoleErrors = [];
    const failed = [];
    const statuses = [];
    page.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(message.text());
    });
    page.on("pageerror", (error) => consoleErrors.push(String(error)));
    page.on("requestfailed", (request) =>
      failed.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText}`),
    );
    page.on("response", (response) =>
      statuses.push(`${response.request().method()} ${response.url()} ${response.status()}`),
    );
    await page.goto(url);
    // A page whose script did not load never finishes: report what it logged instead of waiting.
    const finished = await page
      .waitForFunction(() => window.done === true, null, { timeout: 60000 })
      .then(
        () => true,
        () => false,
      );
    const results = finished ? await page.evaluate(() => window.results) : [];
    console.log(JSON.stringify({ finished, results, console: consoleErrors, failed, statuses }));
  } finally {
    await browser.close();
  }
}

if (step === "build") await build(target);
else if (step === "open") await open(target);
else throw new Error(`unknown step ${step}: use build or open`);
