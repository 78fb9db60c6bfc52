// activate() with a mocked `vscode` and `vscode-languageclient/node`: the client gets the configured command,
// initializationOptions and document selector; the toggle command sends didChangeConfiguration.
const test = require('node:test');
const assert = require('node:assert/strict');
const Module = require('node:module');

const settings = { 'server.command': '/venv/bin/diffill', 'server.args': ['serve'], model: '', device: 'cpu', steps: 4,
  enabled: true, statusPollSeconds: 0 };
const commands = {};
const configListeners = [];
const created = [];
const DidChangeConfigurationNotification = { type: { method: 'workspace/didChangeConfiguration' } };
class FakeLanguageClient {
  constructor(id, name, serverOptions, clientOptions) {
    Object.assign(this, { id, serverOptions, clientOptions, started: false, notifications: [], requests: [] });
    created.push(this);
  }
  onDidChangeState() { return { dispose() {} }; }
  async start() { this.started = true; }
  async stop() { this.started = false; }
  async sendRequest(method, params) {
    this.requests.push(method);
    return { ready: true, model: 'ready (embedded on cpu)', last_latency_ms: 42, settings: { enabled: settings.enabled } };
  }
  async sendNotification(type, params) { this.notifications.push([type.method, params]); }
  dispose() {}
}
const statusItem = { show() {}, dispose() {} };
const vscodeMock = {
  workspace: {
    getConfiguration: () => ({
      get: (k) => settings[k],
      update: async (k, v) => {
        settings[k] = v;
        for (const l of configListeners) await l({ affectsConfiguration: (s) => s === 'diffill' || s === `diffill.${k}` });
      },
    }),
    onDidChangeConfiguration: (l) => { configListeners.push(l); return { dispose() {} }; },
  },
  window: {
    createOutputChannel: () => ({ appendLine() {}, show() {}, dispose() {} }),
    createStatusBarItem: () => statusItem,
    showErrorMessage: async () => undefined,
    setStatusBarMessage: () => ({ dispose() {} }),
  },
  commands: { registerCommand: (id, fn) => { commands[id] = fn; return { dispose() {} }; } },
  StatusBarAlignment: { Left: 1, Right: 2 },
  ConfigurationTarget: { Global: 1 },
};
const origLoad = Module._load;
Module._load = function (request, parent, isMain) {
  if (request === 'vscode') return vscodeMock;
  if (request === 'vscode-languageclient/node') {
    return { LanguageClient: FakeLanguageClient, TransportKind: { stdio: 0 }, State: { Stopped: 1, Running: 2, Starting: 3 },
      DidChangeConfigurationNotification };
  }
  return origLoad.apply(this, arguments);
};

test('activate, status bar, toggle, restart, deactivate', async () => {
  const ext = require('../out/extension.js');
  const ctx = { subscriptions: [], asAbsolutePath: (p) => '/ext/' + p };
  await ext.activate(ctx);
  const client = created[0];
  assert.equal(client.serverOptions.run.command, '/venv/bin/diffill');
  assert.deepEqual(client.serverOptions.run.args, ['serve']);
  assert.equal(client.serverOptions.run.transport, undefined); // else languageclient appends --stdio
  assert.deepEqual(client.clientOptions.initializationOptions,
    { model: '', device: 'cpu', steps: 4, enabled: true, languages: ['python', 'javascript', 'typescript', 'tsx', 'go', 'rust', 'c', 'cpp', 'java', 'lua'] });
  const langs = client.clientOptions.documentSelector.map((s) => s.language);
  for (const l of ['python', 'typescriptreact', 'javascriptreact', 'rust', 'lua']) assert.ok(langs.includes(l), l);
  assert.ok(client.started);
  assert.ok(client.requests.includes('diffill/status'));
  assert.equal(statusItem.text, '$(sparkle) diffill 42 ms');

  await commands['diffill.toggle']();
  assert.equal(settings.enabled, false);
  const [method, params] = client.notifications.at(-1);
  assert.equal(method, 'workspace/didChangeConfiguration');
  assert.equal(params.settings.diffill.enabled, false);
  assert.equal(statusItem.text, '$(circle-slash) diffill: off');
  await commands['diffill.toggle']();
  assert.equal(client.notifications.at(-1)[1].settings.diffill.enabled, true);

  await commands['diffill.restart']();
  assert.equal(created.length, 2);
  assert.ok(!client.started);
  assert.ok(created[1].started);

  await ext.deactivate();
  assert.ok(!created[1].started);
});
