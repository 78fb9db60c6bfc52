// Drives VS Code (code-server in headless Chromium, via playwright-core): opens the file, waits for diffill,
// types the prompt's last character at the end of the prompt, waits for the ghost text, presses Tab, saves.
// env: CS_URL, CS_FILE, READY (file written by the tap when the model is ready), LAST_CHAR, OUT (JSON result),
//      SHOTS (folder for screenshots), CHROMIUM (browser binary)
const fs = require('fs');
const path = require('path');
const { sleep, waitFor, drive } = require('./vscode_driver');

const env = process.env;
const result = { steps: [] };

drive(result, async (page, step) => {
  // the extension starts `diffill serve` (through the test's tap) on activation; wait for the model, or (EARLY)
  // only for the extension's status bar item, and type while the model still loads
  const statusText = () => page.evaluate(() =>
    [...document.querySelectorAll('.statusbar-item')].map((e) => e.textContent.trim()).filter((t) => /diffill/.test(t)).join(' | '));
  if (env.EARLY === '1') {
    result.status_when_typed = await waitFor(async () => {
      const t = await statusText();
      return /loading/.test(t) ? t : null;
    }, 60000, 'the status bar to say the model is loading');
    step('server loading');
  } else {
    await waitFor(() => fs.existsSync(env.READY), 120000, 'the server to be ready');
    step('server ready');
  }
  await page.click('.monaco-editor .view-lines');
  await page.keyboard.press('Control+End');
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('End');
  await sleep(300);
  result.typed_before_ready = !fs.existsSync(env.READY);
  await page.keyboard.type(env.LAST_CHAR); // typing makes VS Code ask for inline completions
  const ghost = await waitFor(() => page.evaluate(() => {
    const els = document.querySelectorAll('.monaco-editor .ghost-text-decoration, .monaco-editor .ghost-text');
    if (!els.length) return null;
    const lines = [];
    const seen = new Set();
    for (const e of els) {
      // a line's ghost text may be nested (decoration inside .ghost-text): keep outermost elements only
      if ([...seen].some((s) => s.contains(e))) continue;
      seen.add(e);
      lines.push(e.textContent);
    }
    return lines;
  }), 60000, 'the ghost text');
  result.ghost = ghost;
  step('ghost text shown');
  await page.screenshot({ path: path.join(env.SHOTS, 'ghost.png') });
  await page.keyboard.press('Tab'); // accept
  await sleep(500);
  await page.keyboard.press('Control+S');
  await waitFor(() => fs.readFileSync(env.CS_FILE, 'utf8') !== env.BEFORE, 15000, 'the file to be saved');
  result.file = fs.readFileSync(env.CS_FILE, 'utf8');
  step('saved');
  // the status bar item polls diffill/status: model state and last latency
  result.status = await waitFor(() => page.evaluate(() => {
    const items = [...document.querySelectorAll('.statusbar-item')].map((e) => e.textContent.trim());
    return items.find((t) => /diffill \d/.test(t)) || null;
  }), 15000, 'the status bar item with a latency').catch(async () => page.evaluate(() =>
    [...document.querySelectorAll('.statusbar-item')].map((e) => e.textContent.trim()).filter((t) => /diffill/.test(t)).join(' | ')));
  step('status');
  await page.screenshot({ path: path.join(env.SHOTS, 'after.png') });
});
