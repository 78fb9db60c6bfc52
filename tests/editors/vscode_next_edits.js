// Drives VS Code (code-server in headless Chromium, via playwright-core) through next edits: changes
// `hashlib.sha1` to `_lazy_sha1` on line 5 as a user types it, waits for diffill's hints (hint squiggles), then
// with the cursor on a hint opens the quick fixes (Ctrl+.) and picks "apply here", then at another "apply at all 2
// places", and saves. env: CS_URL, CS_FILE, READY, OUT (JSON result), SHOTS (screenshots), CHROMIUM
const fs = require('fs');
const { sleep, waitFor, drive } = require('./vscode_driver');

const env = process.env;
const result = { steps: [], hints: [] };

async function goTo(page, line, column) { // Ctrl+G takes "line:column"
  await page.keyboard.press('Control+G');
  await page.waitForSelector('.quick-input-widget input', { timeout: 20000 });
  await page.keyboard.type(`${line}:${column}`);
  await page.keyboard.press('Enter');
  await sleep(300);
}

const hintCount = (page) => page.evaluate(() => document.querySelectorAll('.monaco-editor .squiggly-hint').length);

async function quickFix(page, words) { // Ctrl+., then the action whose label holds `words` (by keys: the first is selected)
  await page.keyboard.press('Control+.');
  await page.locator('.action-widget .monaco-list-row', { hasText: words }).first().waitFor({ timeout: 20000 });
  const labels = (await page.locator('.action-widget .monaco-list-row').allTextContents()).filter((t) => t.startsWith('diffill'));
  result.menus = (result.menus || []).concat([labels]);
  for (let i = 0; i < labels.findIndex((t) => t.includes(words)); i++) await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await sleep(500);
}

drive(result, async (page, step) => {
  await waitFor(() => fs.existsSync(env.READY), 120000, 'the server to be ready');
  step('server ready');
  await page.click('.monaco-editor .view-lines');
  await goTo(page, 5, 11);
  for (let i = 0; i < 12; i++) await page.keyboard.press('Shift+ArrowRight');
  await page.keyboard.type('_lazy_sha1', { delay: 30 });
  result.hints.push(await waitFor(async () => (await hintCount(page)) === 3 && 3, 30000, 'three hints'));
  step('three hints');
  await goTo(page, 10, 11);
  await quickFix(page, 'here');
  result.hints.push(await waitFor(async () => (await hintCount(page)) === 2 && 2, 30000, 'two hints'));
  step('applied here');
  await goTo(page, 19, 11);
  await quickFix(page, 'at all 2 places');
  await waitFor(async () => (await hintCount(page)) === 0, 30000, 'no hints');
  step('applied at all places');
  await page.keyboard.press('Control+S');
  await waitFor(() => !fs.readFileSync(env.CS_FILE, 'utf8').includes('mac = hashlib'), 15000, 'the file to be saved');
  result.file = fs.readFileSync(env.CS_FILE, 'utf8');
  step('saved');
});
