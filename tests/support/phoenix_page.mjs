// Opens a page of Phoenix's UI in headless Chromium (driven by playwright-core), waits until
// each given span name is shown, and saves a screenshot. Used by tests/support/phoenix.rs
// (`Phoenix::screenshot_trace`) to see a trace as a person would in Phoenix's own page.
//
// Usage: node phoenix_page.mjs URL NODE_DIR CHROMIUM SCREENSHOT NAME...
//
// NODE_DIR is a folder whose node_modules holds playwright-core (scripts/test prepares one).
// Exits non-zero, after saving the screenshot as the page then stood and printing its text,
// when a NAME is still not shown after 30 seconds or the page's script fails.

import { createRequire } from "node:module";
import path from "node:path";

const [url, nodeDir, executablePath, screenshot, ...names] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(nodeDir), "package.json"));
const { chromium } = require("playwright-core");

const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const problems = [];
  page.on("pageerror", (error) => problems.push(String(error)));
  await page.goto(url);
  let shown = true;
  try {
    // The trace's spans come from Phoenix's GraphQL API after the page has loaded; its text
    // holds every name once the span tree is drawn.
    await page.waitForFunction((names) => names.every((name) => document.body.innerText.includes(name)), names, {
      timeout: 30000,
    });
    // The details pane fills in a moment after the tree: wait for the network to go quiet so
    // the picture is of a settled page.
    await page.waitForLoadState("networkidle", { timeout: 10000 });
  } catch (error) {
    shown = false;
    console.error(`not every span name was shown (${error.message.split("\n")[0]})`);
  }
  await page.screenshot({ path: screenshot });
  const text = await page.evaluate(() => document.body.innerText);
  if (!shown) {
    const missing = names.filter((name) => !text.includes(name));
    throw new Error(`the page at ${url} does not show ${JSON.stringify(missing)}; its text:\n${text}`);
  }
  if (problems.length) throw new Error(`the page's script failed: ${problems.join("; ")}`);
  console.log(text);
} finally {
  await browser.close();
}
