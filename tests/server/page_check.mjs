// Opens the chat page in headless Chromium (driven by playwright-core), waits until the run it
// starts has ended, prints the page's HTML and saves a screenshot.
//
// Usage: node page_check.mjs URL NODE_DIR CHROMIUM SCREENSHOT [API_KEY...]
//
// NODE_DIR is a folder whose node_modules holds playwright-core (scripts/test prepares one).
// Each API_KEY is typed into the page's key form when it asks for one, in turn (a wrong key
// first shows that the page asks again).

import { createRequire } from "node:module";
import path from "node:path";

const [url, nodeDir, executablePath, screenshot, ...keys] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(nodeDir), "package.json"));
const { chromium } = require("playwright-core");

const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
try {
  const page = await browser.newPage({ viewport: { width: 900, height: 700 } });
  const problems = [];
  page.on("pageerror", (error) => problems.push(String(error)));
  await page.goto(url);
  for (const key of keys) {
    await page.waitForSelector("#key-form:not([hidden])", { timeout: 20000 });
    await page.fill("#key", key);
    await page.click("#key-form button");
  }
  // The page says how the thread stands once its run has ended, or what went wrong.
  await page.waitForFunction(
    () => {
      const status = document.getElementById("status");
      return status.textContent.startsWith("thread ") || status.className === "error";
    },
    null,
    { timeout: 20000 },
  );
  await page.screenshot({ path: screenshot });
  if (problems.length) throw new Error(`the page's script failed: ${problems.join("; ")}`);
  console.log(await page.content());
} finally {
  await browser.close();
}
