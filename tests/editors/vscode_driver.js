// What the VS Code drivers share: the browser and workbench around a driver, waiting, and opening a file of the
// workspace through Quick Open.
const fs = require('fs');
const path = require('path');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(fn, timeoutMs, what) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const v = await fn();
    if (v) return v;
    await sleep(200);
  }
  throw new Error('timed out waiting for ' + what);
}

// Quick Open lists a file once code-server's file search has answered, later on a busy machine: Enter is pressed
// when the file is in the list, and the whole step is tried again if no editor came.
async function openFile(page, name) {
  for (let attempt = 1; ; attempt++) {
    try {
      await page.keyboard.press('Control+P');
      await page.waitForSelector('.quick-input-widget input', { timeout: 20000 });
      await page.keyboard.type(name);
      await page.waitForSelector(`.quick-input-list .monaco-list-row[aria-label*="${name}"]`, { timeout: 30000 });
      await page.keyboard.press('Enter');
      await page.waitForSelector('.monaco-editor .view-lines', { timeout: 30000 });
      return;
    } catch (e) {
      if (attempt === 3) throw e;
      await page.keyboard.press('Escape');
      await sleep(1000);
    }
  }
}

// Runs a driver: code-server's workbench ($CS_URL) in headless Chromium ($CHROMIUM) with $CS_FILE open, then
// `body(page, step)`. `result` (its `steps`, `code` 0, or 1 with the error) is written to $OUT as JSON and is the
// exit code; a failure leaves a screenshot in $SHOTS.
function drive(result, body) {
  const env = process.env;
  const step = (s) => { result.steps.push(s); console.log('step:', s); };
  (async () => {
    const { chromium } = require('playwright-core');
    const browser = await chromium.launch({ executablePath: env.CHROMIUM || '/usr/bin/chromium', headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    try {
      await page.goto(env.CS_URL);
      await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
      step('workbench');
      await sleep(2000);
      await openFile(page, path.basename(env.CS_FILE));
      step('file open');
      await body(page, step);
      result.code = 0;
    } catch (e) {
      result.error = String(e && e.stack || e);
      result.code = 1;
      try { await page.screenshot({ path: path.join(env.SHOTS, 'failure.png') }); } catch {}
    } finally {
      fs.writeFileSync(env.OUT, JSON.stringify(result));
      await browser.close();
      process.exitCode = result.code;
    }
  })();
}

module.exports = { sleep, waitFor, openFile, drive };
