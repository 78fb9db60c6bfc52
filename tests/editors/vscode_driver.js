// What the VS Code drivers share: waiting, and opening a file of the workspace through Quick Open.
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

module.exports = { sleep, waitFor, openFile };
