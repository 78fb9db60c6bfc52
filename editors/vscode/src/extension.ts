// diffill for VS Code: starts `diffill serve` over stdio through vscode-languageclient. Ghost text needs no code
// here: vscode-languageclient >= 9 registers an InlineCompletionItemProvider when the server advertises
// `inlineCompletionProvider`; ordinary completion items (with textEdit) come through the same client.
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from 'vscode-languageclient/node';
import {
  ClientState,
  DiffillStatus,
  ServerCommand,
  documentLanguageIds,
  formatStatus,
  needsRestart,
  serverCommand,
  toInitializationOptions,
} from './config';

const SECTION = 'diffill';

let client: LanguageClient | undefined;
let command: ServerCommand | undefined;
let statusItem: vscode.StatusBarItem | undefined;
let pollTimer: NodeJS.Timeout | undefined;
let clientState: ClientState = 'stopped';
let lastStatus: DiffillStatus | undefined;
let output: vscode.LogOutputChannel | undefined;

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

function render(): void {
  if (!statusItem) return;
  const view = formatStatus(clientState, lastStatus, config().get<boolean>('enabled') !== false);
  statusItem.text = view.text;
  statusItem.tooltip = view.tooltip;
  statusItem.command = clientState === 'running' ? 'diffill.toggle' : 'diffill.restart';
  statusItem.show();
}

export async function refreshStatus(): Promise<DiffillStatus | undefined> {
  if (!client || clientState !== 'running') {
    render();
    return undefined;
  }
  try {
    lastStatus = await client.sendRequest<DiffillStatus>('diffill/status', {});
  } catch {
    // a restart or shutdown in progress: keep the last answer
  }
  render();
  return lastStatus;
}

function schedulePolling(): void {
  if (pollTimer) clearInterval(pollTimer);
  pollTimer = undefined;
  const seconds = config().get<number>('statusPollSeconds') ?? 3;
  if (seconds > 0) pollTimer = setInterval(() => void refreshStatus(), Math.max(0.5, seconds) * 1000);
}

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  const cfg = config();
  command = serverCommand(cfg);
  const options = toInitializationOptions(cfg);
  // stdio without `transport: TransportKind.stdio`: with it, vscode-languageclient appends `--stdio` to the args
  const serverOptions: ServerOptions = {
    run: { command: command.command, args: command.args },
    debug: { command: command.command, args: command.args },
  };
  const languages = documentLanguageIds(options.languages);
  const clientOptions: LanguageClientOptions = {
    documentSelector: languages.flatMap((language) => [
      { scheme: 'file', language },
      { scheme: 'untitled', language },
    ]),
    initializationOptions: options,
    outputChannel: output,
    middleware: {
      // refresh the status bar (latency) shortly after each answer
      provideInlineCompletionItems: async (document, position, ctx, token, next) => {
        const result = await next(document, position, ctx, token);
        setTimeout(() => void refreshStatus(), 50);
        return result;
      },
    },
  };
  client = new LanguageClient('diffill', 'diffill', serverOptions, clientOptions);
  client.onDidChangeState((e) => {
    clientState = e.newState === State.Running ? 'running' : e.newState === State.Starting ? 'starting' : 'stopped';
    if (clientState === 'running') void refreshStatus();
    else render();
  });
  clientState = 'starting';
  render();
  try {
    await client.start();
    clientState = 'running';
  } catch (err) {
    clientState = 'error';
    void vscode.window.showErrorMessage(
      `diffill: could not start \`${[command.command, ...command.args].join(' ')}\`: ${err}. ` +
        'Install diffill (pip install diffill) or set "diffill.server.command".',
    );
  }
  await refreshStatus();
}

async function stopClient(): Promise<void> {
  const c = client;
  client = undefined;
  if (c) {
    try {
      await c.stop();
    } catch {
      // already gone
    }
  }
  clientState = 'stopped';
  lastStatus = undefined;
}

async function sendSettings(): Promise<void> {
  if (!client || clientState !== 'running') return;
  await client.sendNotification(DidChangeConfigurationNotification.type, {
    settings: { diffill: toInitializationOptions(config()) },
  });
  await refreshStatus();
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel('diffill', { log: true });
  statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  statusItem.name = 'diffill';
  context.subscriptions.push(output, statusItem);

  context.subscriptions.push(
    vscode.commands.registerCommand('diffill.toggle', async () => {
      const enabled = config().get<boolean>('enabled') !== false;
      // the configuration listener below sends didChangeConfiguration {enabled: !enabled}
      await config().update('enabled', !enabled, vscode.ConfigurationTarget.Global);
      void vscode.window.setStatusBarMessage(`diffill: completions ${enabled ? 'off' : 'on'}`, 2000);
    }),
    vscode.commands.registerCommand('diffill.restart', async () => {
      await stopClient();
      await startClient(context);
    }),
    vscode.commands.registerCommand('diffill.showStatus', async () => {
      const status = await refreshStatus();
      output?.appendLine(JSON.stringify(status ?? { state: clientState }, null, 2));
      output?.show(true);
      return status;
    }),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (!e.affectsConfiguration(SECTION)) return;
      if (e.affectsConfiguration(`${SECTION}.statusPollSeconds`)) schedulePolling();
      const languagesChanged = e.affectsConfiguration(`${SECTION}.languages`);
      if (!command || needsRestart(command, serverCommand(config())) || languagesChanged) {
        await stopClient();
        await startClient(context);
      } else {
        await sendSettings();
      }
    }),
    { dispose: () => pollTimer && clearInterval(pollTimer) },
  );
  schedulePolling();
  await startClient(context);
}

export async function deactivate(): Promise<void> {
  if (pollTimer) clearInterval(pollTimer);
  await stopClient();
}
