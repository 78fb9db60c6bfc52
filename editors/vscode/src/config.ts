// Pure logic (no `vscode` import): settings -> server command and initializationOptions, status formatting.
// Unit-tested with `node --test` (test/config.test.js).

/** diffill's language names (the server's `languages` setting). */
export const LANGUAGES = ['python', 'javascript', 'typescript', 'tsx', 'go', 'rust', 'c', 'cpp', 'java', 'lua'] as const;

/** VS Code language ids for each diffill language (the document selector). */
export const VSCODE_LANGUAGE_IDS: Record<string, string[]> = {
  python: ['python'],
  javascript: ['javascript', 'javascriptreact'],
  typescript: ['typescript'],
  tsx: ['typescriptreact'],
  go: ['go'],
  rust: ['rust'],
  c: ['c'],
  cpp: ['cpp'],
  java: ['java'],
  lua: ['lua'],
};

export const DEVICES = ['auto', 'cpu', 'cuda'] as const;
export const QUANTIZATIONS = ['auto', 'none', 'int8', 'int4', 'fp8'] as const;
export const PRECISIONS = ['auto', 'float32', 'bfloat16'] as const;

/** Anything with a `get(key)`: a vscode.WorkspaceConfiguration for section "diffill", or a plain stub. */
export interface ConfigSource {
  get<T>(key: string): T | undefined;
}

export interface ServerCommand {
  command: string;
  args: string[];
}

/** The settings the server understands (camelCase keys, as sent in initializationOptions). */
export interface ServerSettings {
  model: string;
  device: string;
  steps: number;
  enabled: boolean;
  languages: string[];
  quantization?: string;
  precision?: string;
  canvasLength?: number;
  latencyBudgetMs?: number;
  maxPromptTokens?: number;
  threads?: number;
  minConfidence?: number;
  draftCandidates?: number;
  apiKey?: string;
  caFile?: string;
  tlsVerify?: boolean;
  requestTimeoutMs?: number;
  servedModelFiles?: string;
  nextEdits?: boolean;
}

function intIn(value: unknown, lo: number, hi: number): number | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
  return Math.min(hi, Math.max(lo, Math.round(value)));
}

/** The command that starts the server: `diffill serve` unless configured. */
export function serverCommand(cfg: ConfigSource): ServerCommand {
  const command = (cfg.get<string>('server.command') ?? '').trim() || 'diffill';
  const rawArgs = cfg.get<unknown>('server.args');
  const args = Array.isArray(rawArgs) ? rawArgs.filter((a): a is string => typeof a === 'string') : ['serve'];
  return { command, args };
}

/**
 * settings -> the server's initializationOptions (also sent as `{diffill: ...}` in didChangeConfiguration).
 * Values out of range are clamped, unknown devices fall back to "auto", unset optional numbers are left out
 * (so the server's defaults apply). Only keys the server knows are sent: it rejects unknown ones.
 */
export function toInitializationOptions(cfg: ConfigSource): ServerSettings {
  const device = cfg.get<string>('device');
  const langs = cfg.get<unknown>('languages');
  const languages = Array.isArray(langs)
    ? langs.filter((l): l is string => typeof l === 'string' && (LANGUAGES as readonly string[]).includes(l))
    : [...LANGUAGES];
  const opts: ServerSettings = {
    model: (cfg.get<string>('model') ?? '').trim(),
    device: device && (DEVICES as readonly string[]).includes(device) ? device : 'auto',
    steps: intIn(cfg.get<number>('steps'), 1, 128) ?? 4,
    enabled: cfg.get<boolean>('enabled') !== false,
    languages,
  };
  const quantization = cfg.get<string>('quantization');
  if (quantization && quantization !== 'auto' && (QUANTIZATIONS as readonly string[]).includes(quantization)) {
    opts.quantization = quantization;
  }
  const precision = cfg.get<string>('precision');
  if (precision && precision !== 'auto' && (PRECISIONS as readonly string[]).includes(precision)) {
    opts.precision = precision;
  }
  const canvas = intIn(cfg.get<number>('canvasLength'), 0, 256);
  if (canvas !== undefined && canvas > 0) opts.canvasLength = canvas;
  const budget = intIn(cfg.get<number | null>('latencyBudgetMs'), 10, 60000);
  if (budget !== undefined) opts.latencyBudgetMs = budget;
  const prompt = intIn(cfg.get<number | null>('maxPromptTokens'), 16, 32768);
  if (prompt !== undefined) opts.maxPromptTokens = prompt;
  const threads = intIn(cfg.get<number>('threads'), 0, 256);
  if (threads !== undefined && threads > 0) opts.threads = threads;
  const confidence = cfg.get<number | null>('minConfidence');
  if (typeof confidence === 'number' && Number.isFinite(confidence)) {
    opts.minConfidence = Math.min(1, Math.max(0, confidence));
  }
  const beams = intIn(cfg.get<number>('draftCandidates'), 0, 16);
  if (beams !== undefined && beams > 0) opts.draftCandidates = beams;
  const apiKey = (cfg.get<string | null>('apiKey') ?? '').trim();
  if (apiKey) opts.apiKey = apiKey;
  const caFile = (cfg.get<string | null>('caFile') ?? '').trim();
  if (caFile) opts.caFile = caFile;
  if (cfg.get<boolean>('tlsVerify') === false) opts.tlsVerify = false;
  const timeout = intIn(cfg.get<number | null>('requestTimeoutMs'), 100, 600000);
  if (timeout !== undefined) opts.requestTimeoutMs = timeout;
  const servedFiles = (cfg.get<string | null>('servedModelFiles') ?? '').trim();
  if (servedFiles) opts.servedModelFiles = servedFiles;
  if (cfg.get<boolean>('nextEdits') === false) opts.nextEdits = false;
  return opts;
}

/** The VS Code language ids that get completions for the given diffill languages. */
export function documentLanguageIds(languages: readonly string[]): string[] {
  const ids: string[] = [];
  for (const l of languages) for (const id of VSCODE_LANGUAGE_IDS[l] ?? []) if (!ids.includes(id)) ids.push(id);
  return ids;
}

/** Whether changing these settings needs a server restart (the command), or just a didChangeConfiguration. */
export function needsRestart(before: ServerCommand, after: ServerCommand): boolean {
  return before.command !== after.command || before.args.join('\u0000') !== after.args.join('\u0000');
}

/** The answer of the server's `diffill/status` request (fields used here). */
export interface DiffillStatus {
  ready?: boolean;
  model?: string;
  error?: string | null;
  last_latency_ms?: number;
  settings?: { enabled?: boolean; model?: string; device?: string; steps?: number };
  stats?: Record<string, number>;
}

export type ClientState = 'starting' | 'running' | 'stopped' | 'error';

export interface StatusView {
  text: string;
  tooltip: string;
}

export function formatLatency(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms) || ms <= 0) return '';
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 10000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}

/** Status bar text and tooltip for the client state and the last `diffill/status` answer. */
export function formatStatus(state: ClientState, status?: DiffillStatus, enabledSetting = true): StatusView {
  if (state === 'stopped') return { text: '$(circle-slash) diffill: stopped', tooltip: 'diffill: the server is not running. Click to restart.' };
  if (state === 'error') return { text: '$(error) diffill', tooltip: 'diffill: the server could not be started. Click to restart.' };
  if (state === 'starting' || !status) return { text: '$(sync~spin) diffill', tooltip: 'diffill: starting the server' };
  const enabled = status.settings?.enabled ?? enabledSetting;
  const model = status.model ?? 'unknown';
  const lines = [`diffill: ${model}`];
  if (status.error) lines.push(`error: ${status.error}`);
  const s = status.settings;
  if (s) lines.push(`model: ${s.model || 'embedded'} · device: ${s.device ?? 'auto'} · steps: ${s.steps ?? '?'}`);
  const latency = formatLatency(status.last_latency_ms);
  if (latency) lines.push(`last completion: ${latency}`);
  if (status.stats) {
    const st = status.stats;
    lines.push(
      `requests: ${st.requests ?? 0} · model calls: ${st.model_calls ?? 0} · cache hits: ${st.cache_hits ?? 0}` +
        ` · copied: ${st.copied ?? 0}`,
    );
  }
  lines.push(enabled ? 'Click to turn completions off.' : 'Completions are off. Click to turn them on.');
  const tooltip = lines.join('\n');
  if (!enabled) return { text: '$(circle-slash) diffill: off', tooltip };
  if (!status.ready) {
    const failed = /fail/i.test(model) || !!status.error;
    return { text: failed ? '$(error) diffill: no model' : '$(sync~spin) diffill: loading', tooltip };
  }
  return { text: latency ? `$(sparkle) diffill ${latency}` : '$(sparkle) diffill', tooltip };
}
