// Pure logic: settings -> initializationOptions, server command, status bar text. Run: npm test (node --test).
const test = require('node:test');
const assert = require('node:assert/strict');
const c = require('../out/config.js');

const stub = (values) => ({ get: (k) => values[k] });

test('defaults: `diffill serve`, embedded model, auto device, 8 steps, enabled', () => {
  assert.deepEqual(c.serverCommand(stub({})), { command: 'diffill', args: ['serve'] });
  assert.deepEqual(c.toInitializationOptions(stub({})), {
    model: '', device: 'auto', steps: 4, enabled: true, languages: [...c.LANGUAGES],
  });
});

test('package.json defaults map to the same options', () => {
  const pkg = require('../package.json');
  const props = pkg.contributes.configuration.properties;
  const values = {};
  for (const [k, v] of Object.entries(props)) values[k.replace(/^diffill\./, '')] = v.default;
  assert.deepEqual(c.serverCommand(stub(values)), { command: 'diffill', args: ['serve'] });
  assert.deepEqual(c.toInitializationOptions(stub(values)), {
    model: '', device: 'auto', steps: 4, enabled: true, languages: [...c.LANGUAGES],
  });
});

test('configured values are passed through in the server\'s camelCase keys', () => {
  const opts = c.toInitializationOptions(stub({
    model: ' /models/dg ', device: 'cuda', steps: 16, enabled: false, canvasLength: 48,
    latencyBudgetMs: 500, maxPromptTokens: 1024, threads: 4, languages: ['python', 'rust'], minConfidence: 0.3,
    draftCandidates: 3, quantization: 'int4', precision: 'bfloat16',
  }));
  assert.deepEqual(opts, {
    model: '/models/dg', device: 'cuda', steps: 16, enabled: false, languages: ['python', 'rust'],
    quantization: 'int4', precision: 'bfloat16',
    canvasLength: 48, latencyBudgetMs: 500, maxPromptTokens: 1024, threads: 4, minConfidence: 0.3,
    draftCandidates: 3,
  });
  assert.equal(c.toInitializationOptions(stub({ quantization: 'int3' })).quantization, undefined);
  assert.equal(c.toInitializationOptions(stub({ draftCandidates: 40 })).draftCandidates, 16);
  assert.equal(c.toInitializationOptions(stub({ draftCandidates: 0 })).draftCandidates, undefined);
  assert.equal(c.toInitializationOptions(stub({ minConfidence: 7 })).minConfidence, 1);
  assert.equal(c.toInitializationOptions(stub({ minConfidence: null })).minConfidence, undefined);
});

test('a server model: its key, CA file, TLS verification off only when asked, its timeout and its files', () => {
  const opts = c.toInitializationOptions(stub({
    model: 'https://gpu.example:8000', apiKey: ' sk-1 ', caFile: '/etc/ca.pem', tlsVerify: false, requestTimeoutMs: 50,
    servedModelFiles: ' /models/dg ',
  }));
  assert.deepEqual(opts, {
    model: 'https://gpu.example:8000', device: 'auto', steps: 4, enabled: true, languages: [...c.LANGUAGES],
    apiKey: 'sk-1', caFile: '/etc/ca.pem', tlsVerify: false, requestTimeoutMs: 100, servedModelFiles: '/models/dg',
  });
  const plain = c.toInitializationOptions(stub({
    apiKey: null, caFile: '', tlsVerify: true, requestTimeoutMs: null, servedModelFiles: null,
  }));
  assert.deepEqual(Object.keys(plain).sort(), ['device', 'enabled', 'languages', 'model', 'steps']);
});

test('out-of-range and invalid values are clamped or dropped (the server rejects unknown values)', () => {
  const opts = c.toInitializationOptions(stub({
    device: 'tpu', steps: 1000, canvasLength: -3, latencyBudgetMs: null, maxPromptTokens: 'x', threads: 0,
    languages: ['python', 'cobol', 3],
  }));
  assert.deepEqual(opts, { model: '', device: 'auto', steps: 128, enabled: true, languages: ['python'] });
  assert.equal(c.toInitializationOptions(stub({ steps: 0 })).steps, 1);
  assert.equal(c.toInitializationOptions(stub({ steps: 2.6 })).steps, 3);
});

test('server command and args', () => {
  assert.deepEqual(c.serverCommand(stub({ 'server.command': '/opt/venv/bin/diffill', 'server.args': ['serve', '--log-level', 'info'] })),
    { command: '/opt/venv/bin/diffill', args: ['serve', '--log-level', 'info'] });
  assert.deepEqual(c.serverCommand(stub({ 'server.command': '  ' })), { command: 'diffill', args: ['serve'] });
  assert.ok(c.needsRestart({ command: 'a', args: ['serve'] }, { command: 'b', args: ['serve'] }));
  assert.ok(c.needsRestart({ command: 'a', args: ['serve'] }, { command: 'a', args: ['serve', '--tcp'] }));
  assert.ok(!c.needsRestart({ command: 'a', args: ['serve'] }, { command: 'a', args: ['serve'] }));
});

test('document selector language ids', () => {
  assert.deepEqual(c.documentLanguageIds(['python', 'tsx', 'javascript']), ['python', 'typescriptreact', 'javascript', 'javascriptreact']);
  assert.deepEqual(c.documentLanguageIds(['nope']), []);
});

test('latency formatting', () => {
  assert.equal(c.formatLatency(undefined), '');
  assert.equal(c.formatLatency(0), '');
  assert.equal(c.formatLatency(3.14159), '3.1 ms');
  assert.equal(c.formatLatency(123.6), '124 ms');
  assert.equal(c.formatLatency(12500), '12.5 s');
});

test('status text: model state and last latency', () => {
  const ready = { ready: true, model: 'ready (embedded on cpu)', last_latency_ms: 87.4,
    settings: { enabled: true, model: '', device: 'auto', steps: 8 }, stats: { requests: 3, model_calls: 2, cache_hits: 1, copied: 1 } };
  const v = c.formatStatus('running', ready);
  assert.equal(v.text, '$(sparkle) diffill 87 ms');
  assert.match(v.tooltip, /ready \(embedded on cpu\)/);
  assert.match(v.tooltip, /last completion: 87 ms/);
  assert.match(v.tooltip, /requests: 3 · model calls: 2 · cache hits: 1 · copied: 1/);
  assert.equal(c.formatStatus('running', { ...ready, last_latency_ms: 0 }).text, '$(sparkle) diffill');
  assert.equal(c.formatStatus('running', { ready: false, model: 'loading' }).text, '$(sync~spin) diffill: loading');
  assert.equal(c.formatStatus('running', { ready: false, model: 'failed', error: 'no weights' }).text, '$(error) diffill: no model');
  assert.match(c.formatStatus('running', { ready: false, model: 'failed', error: 'no weights' }).tooltip, /error: no weights/);
  assert.equal(c.formatStatus('running', { ...ready, settings: { enabled: false } }).text, '$(circle-slash) diffill: off');
  assert.equal(c.formatStatus('starting').text, '$(sync~spin) diffill');
  assert.equal(c.formatStatus('running', undefined).text, '$(sync~spin) diffill');
  assert.match(c.formatStatus('stopped').text, /stopped/);
  assert.match(c.formatStatus('error').text, /error/);
});

test('next edits: sent only when turned off (the server has them on by default)', () => {
  assert.equal(c.toInitializationOptions(stub({ nextEdits: false })).nextEdits, false);
  assert.equal('nextEdits' in c.toInitializationOptions(stub({ nextEdits: true })), false);
});
