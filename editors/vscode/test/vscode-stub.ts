/**
 * A stand-in for the `vscode` module, enough for the extension's own code (not for vscode-languageclient).
 * It records what the extension does (registered commands, messages, status bar items, output) and lets a
 * test set the workspace (folders, settings, open documents) and answer the message boxes. Loaded in place of
 * `vscode` by test/register.ts.
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The defaults of the settings package.json contributes (full keys); other keys have none, as in VS Code. */
const contributedDefaults: Record<string, unknown> = Object.fromEntries(
  Object.entries(
    (
      JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
        contributes: { configuration: { properties: Record<string, { default?: unknown }> } };
      }
    ).contributes.configuration.properties,
  ).map(([key, property]) => [key, property.default]),
);

/** An ExtensionContext's globalState or workspaceState. */
export class Memento {
  readonly values = new Map<string, unknown>();
  readonly updates: Array<{ key: string; value: unknown }> = [];
  get<T>(key: string, fallback?: T): T | undefined {
    return this.values.has(key) ? (this.values.get(key) as T) : fallback;
  }
  update(key: string, value: unknown): Promise<void> {
    this.updates.push({ key, value });
    if (value === undefined) {
      this.values.delete(key);
    } else {
      this.values.set(key, value);
    }
    return Promise.resolve();
  }
  keys(): readonly string[] {
    return [...this.values.keys()];
  }
  setKeysForSync(): void {}
}

export class Disposable {
  private readonly callback: () => void;
  constructor(callback: () => void) {
    this.callback = callback;
  }
  dispose(): void {
    this.callback();
  }
}

export class EventEmitter<T> {
  private listeners: Array<(value: T) => void> = [];
  readonly event = (listener: (value: T) => void): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    });
  };
  fire(value: T): void {
    for (const listener of [...this.listeners]) {
      listener(value);
    }
  }
  get listenerCount(): number {
    return this.listeners.length;
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
  ) {}
  static from(components: { scheme: string; path: string }): Uri {
    return new Uri(components.scheme, components.path);
  }
  static file(fsPath: string): Uri {
    return new Uri('file', fsPath.replace(/\\/g, '/'));
  }
  static parse(value: string): Uri {
    const match = /^([a-zA-Z][\w+.-]*):(.*)$/.exec(value);
    if (match === null) {
      return new Uri('file', value);
    }
    const rest = (match[2] ?? '').replace(/^\/\//, '');
    return new Uri(match[1] ?? 'file', match[1] === 'file' ? decodeURIComponent(rest) : rest);
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return this.scheme === 'file' ? `file://${encodeURI(this.path)}` : `${this.scheme}://${this.path}`;
  }
}

export enum QuickPickItemKind {
  Separator = -1,
  Default = 0,
}

export enum FileType {
  Unknown = 0,
  File = 1,
  Directory = 2,
  SymbolicLink = 64,
}

export enum FilePermission {
  Readonly = 1,
}

export class FileSystemError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
  private static make(code: string, messageOrUri?: string | Uri): FileSystemError {
    const detail = messageOrUri === undefined ? code : String(messageOrUri);
    return new FileSystemError(`${detail} (${code})`, code);
  }
  static FileNotFound(messageOrUri?: string | Uri): FileSystemError {
    return FileSystemError.make('FileNotFound', messageOrUri);
  }
  static NoPermissions(messageOrUri?: string | Uri): FileSystemError {
    return FileSystemError.make('NoPermissions', messageOrUri);
  }
  static Unavailable(messageOrUri?: string | Uri): FileSystemError {
    return FileSystemError.make('Unavailable', messageOrUri);
  }
}

/** What the extension needs of a registered file system provider. */
export interface StubFileSystemProvider {
  stat(uri: Uri): Promise<{ type: FileType; size: number; permissions?: FilePermission }>;
  readFile(uri: Uri): Promise<Uint8Array>;
  writeFile(uri: Uri, content: Uint8Array, options: unknown): void | Promise<void>;
  delete(uri: Uri, options: unknown): void | Promise<void>;
}

export class ThemeIcon {
  constructor(readonly id: string) {}
}

export enum TreeItemCollapsibleState {
  None = 0,
  Collapsed = 1,
  Expanded = 2,
}

export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: string;
  iconPath?: ThemeIcon;
  contextValue?: string;
  command?: { command: string; title: string; arguments?: unknown[] };
  accessibilityInformation?: { label: string };
  constructor(
    readonly label: string,
    readonly collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
  ) {}
}

/** A tree view the extension created: its provider, message and visibility (a test changes it). */
export interface StubTreeView {
  id: string;
  provider: { getChildren(element?: unknown): unknown; getTreeItem(element: unknown): TreeItem };
  message: string | undefined;
  visible: boolean;
  visibility: EventEmitter<{ visible: boolean }>;
  disposed: boolean;
  /** Shows or hides it, as VS Code does when the user opens or collapses the view. */
  setVisible(visible: boolean): void;
  /** The items it shows now. */
  items(): TreeItem[];
  /** The children of `node` and their items (a provider may answer them later). */
  children(node: unknown): Promise<Array<{ node: unknown; item: TreeItem }>>;
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export interface StubStatusBarItem {
  name: string | undefined;
  text: string;
  tooltip: string | undefined;
  command: string | undefined;
  backgroundColor: ThemeColor | undefined;
  visible: boolean;
  disposed: boolean;
  show(): void;
  hide(): void;
  dispose(): void;
}

export interface StubOutputChannel {
  name: string;
  lines: string[];
  shown: number;
  disposed: boolean;
  appendLine(line: string): void;
  append(text: string): void;
  show(preserveFocus?: boolean): void;
  clear(): void;
  hide(): void;
  replace(text: string): void;
  dispose(): void;
}

export interface StubDocument {
  uri: Uri;
  languageId: string;
  getText?(): string;
}

/** A quick pick item as the extension passes it (a string, or an object with a label). */
type PickItem = string | { label: string; kind?: QuickPickItemKind };

function itemLabel(item: PickItem): string {
  return typeof item === 'string' ? item : item.label;
}

export enum ViewColumn {
  Active = -1,
  Beside = -2,
  One = 1,
}

/** A webview panel: what it shows, how often it was revealed, whether it was closed. */
export interface StubWebviewPanel {
  viewType: string;
  title: string;
  options: Record<string, unknown>;
  webview: { html: string };
  revealed: number;
  disposed: boolean;
  reveal(): void;
  onDidDispose(listener: () => void): Disposable;
  dispose(): void;
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

export class CancellationTokenSource {
  private listeners: Array<() => void> = [];
  private cancelled = false;
  disposed = false;
  readonly token = {
    isCancellationRequested: false,
    onCancellationRequested: (listener: () => void): Disposable => {
      this.listeners.push(listener);
      return new Disposable(() => {
        this.listeners = this.listeners.filter((l) => l !== listener);
      });
    },
  };
  cancel(): void {
    if (this.cancelled) {
      return;
    }
    this.cancelled = true;
    this.token.isCancellationRequested = true;
    for (const listener of [...this.listeners]) {
      listener();
    }
  }
  dispose(): void {
    this.disposed = true;
  }
}

/** One window.withProgress call: its options, what it reported, and its Cancel button. */
export interface StubProgress {
  options: { location: ProgressLocation; title?: string; cancellable?: boolean };
  reports: Array<{ message?: string }>;
  done: boolean;
  /** Clicks the notification's Cancel button. */
  cancel(): void;
}

export interface ShownMessage {
  level: 'information' | 'warning' | 'error';
  message: string;
  items: string[];
}

/** The state a test sets and reads. */
export const stub = {
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  executed: [] as Array<{ command: string; args: unknown[] }>,
  messages: [] as ShownMessage[],
  /** The button the next message box "clicks" (undefined: dismissed). */
  answer: undefined as string | undefined,
  opened: [] as string[],
  external: [] as string[],
  statusItems: [] as StubStatusBarItem[],
  outputs: [] as StubOutputChannel[],
  /** User settings (full keys: `wb-lsp.server.path`). */
  configuration: {} as Record<string, unknown>,
  /** Workspace settings (`.vscode/settings.json`, or the .code-workspace file). */
  workspaceConfiguration: {} as Record<string, unknown>,
  /** Folder settings, for a read scoped to a workspace folder (every folder: one map). */
  folderConfiguration: {} as Record<string, unknown>,
  /** The scopes each getConfiguration call was made for (the section and the scope URI's path). */
  configurationReads: [] as Array<{ section: string; scope: string | undefined }>,
  workspaceFolders: [] as string[],
  /** What findFiles returns (paths). */
  files: [] as string[],
  documents: [] as StubDocument[],
  activeDocument: undefined as StubDocument | undefined,
  /** File contents by path, for openTextDocument(uri).getText(). */
  texts: new Map<string, string>(),
  /** Untitled documents opened with openTextDocument({ language, content }). */
  untitled: [] as Array<{ language?: string; content?: string }>,
  /** Documents shown with showTextDocument. */
  shown: [] as Array<{ document: StubDocument; options: unknown }>,
  /** The answers of the next input boxes and quick picks, in order (undefined: dismissed). */
  inputs: [] as Array<string | undefined>,
  picks: [] as Array<string | undefined>,
  inputBoxes: [] as Array<Record<string, unknown>>,
  /** Each quick pick's item labels (separators included) and options. */
  quickPicks: [] as Array<{ items: string[]; options: Record<string, unknown> }>,
  /** The options object (`{ modal, detail }`) each message box was shown with, in order. */
  messageOptions: [] as Array<Record<string, unknown> | undefined>,
  /** File system providers by scheme, with their options. */
  fileSystems: new Map<string, { provider: StubFileSystemProvider; options: Record<string, unknown> | undefined }>(),
  /** languages.setTextDocumentLanguage calls. */
  languageChanges: [] as Array<{ uri: string; languageId: string }>,
  progress: [] as StubProgress[],
  treeViews: [] as StubTreeView[],
  webviews: [] as StubWebviewPanel[],
  onDidChangeConfiguration: new EventEmitter<{ affectsConfiguration(section: string): boolean }>(),
  onDidOpenTextDocument: new EventEmitter<StubDocument>(),

  reset(): void {
    this.commands.clear();
    this.executed = [];
    this.messages = [];
    this.answer = undefined;
    this.opened = [];
    this.external = [];
    this.statusItems = [];
    this.outputs = [];
    this.configuration = {};
    this.workspaceConfiguration = {};
    this.folderConfiguration = {};
    this.configurationReads = [];
    this.workspaceFolders = [];
    this.files = [];
    this.documents = [];
    this.activeDocument = undefined;
    this.texts = new Map();
    this.untitled = [];
    this.shown = [];
    this.inputs = [];
    this.picks = [];
    this.inputBoxes = [];
    this.quickPicks = [];
    this.messageOptions = [];
    this.fileSystems = new Map();
    this.languageChanges = [];
    this.progress = [];
    this.treeViews = [];
    this.webviews = [];
    this.onDidChangeConfiguration = new EventEmitter();
    this.onDidOpenTextDocument = new EventEmitter();
  },

  /** Changes settings (full keys: `wb-lsp.server.path`) in a scope and fires onDidChangeConfiguration. */
  changeConfiguration(values: Record<string, unknown>, scope: 'user' | 'workspace' | 'folder' = 'user'): void {
    const target =
      scope === 'user' ? this.configuration : scope === 'workspace' ? this.workspaceConfiguration : this.folderConfiguration;
    for (const [key, value] of Object.entries(values)) {
      if (value === undefined) {
        delete target[key];
      } else {
        target[key] = value;
      }
    }
    const changed = Object.keys(values);
    this.onDidChangeConfiguration.fire({
      affectsConfiguration: (section: string) =>
        changed.some((key) => key === section || key.startsWith(`${section}.`) || section.startsWith(`${key}.`)),
    });
  },

  document(fsPath: string, languageId = 'yaml'): StubDocument {
    return { uri: Uri.file(fsPath), languageId, getText: () => this.texts.get(fsPath) ?? '' };
  },
};

function showMessage(level: ShownMessage['level']) {
  return (message: string, ...items: unknown[]): Promise<string | undefined> => {
    const labels = items.filter((item): item is string => typeof item === 'string');
    const options = items[0];
    stub.messageOptions.push(
      typeof options === 'object' && options !== null ? (options as Record<string, unknown>) : undefined,
    );
    stub.messages.push({ level, message, items: labels });
    return Promise.resolve(stub.answer !== undefined && labels.includes(stub.answer) ? stub.answer : undefined);
  };
}

export const window = {
  createOutputChannel(name: string): StubOutputChannel {
    const channel: StubOutputChannel = {
      name,
      lines: [],
      shown: 0,
      disposed: false,
      appendLine(line: string) {
        this.lines.push(line);
      },
      append(text: string) {
        this.lines.push(text);
      },
      show() {
        this.shown += 1;
      },
      clear() {
        this.lines = [];
      },
      hide() {},
      replace(text: string) {
        this.lines = [text];
      },
      dispose() {
        this.disposed = true;
      },
    };
    stub.outputs.push(channel);
    return channel;
  },
  createStatusBarItem(): StubStatusBarItem {
    const item: StubStatusBarItem = {
      name: undefined,
      text: '',
      tooltip: undefined,
      command: undefined,
      backgroundColor: undefined,
      visible: false,
      disposed: false,
      show() {
        this.visible = true;
      },
      hide() {
        this.visible = false;
      },
      dispose() {
        this.disposed = true;
      },
    };
    stub.statusItems.push(item);
    return item;
  },
  createTreeView(
    id: string,
    options: { treeDataProvider: StubTreeView['provider'] },
  ): StubTreeView & { onDidChangeVisibility: EventEmitter<{ visible: boolean }>['event']; dispose(): void } {
    const visibility = new EventEmitter<{ visible: boolean }>();
    const view = {
      id,
      provider: options.treeDataProvider,
      message: undefined as string | undefined,
      visible: false,
      visibility,
      disposed: false,
      onDidChangeVisibility: visibility.event,
      setVisible(visible: boolean) {
        this.visible = visible;
        visibility.fire({ visible });
      },
      items(): TreeItem[] {
        const children = this.provider.getChildren() as unknown[];
        return children.map((child) => this.provider.getTreeItem(child));
      },
      /** The children of `node` and their items (a provider may answer them later). */
      async children(node: unknown): Promise<Array<{ node: unknown; item: TreeItem }>> {
        const children = (await this.provider.getChildren(node)) as unknown[];
        return children.map((child) => ({ node: child, item: this.provider.getTreeItem(child) }));
      },
      dispose() {
        this.disposed = true;
      },
    };
    stub.treeViews.push(view);
    return view;
  },
  createWebviewPanel(
    viewType: string,
    title: string,
    _column: ViewColumn,
    options: Record<string, unknown> = {},
  ): StubWebviewPanel {
    const disposed = new EventEmitter<void>();
    const panel: StubWebviewPanel = {
      viewType,
      title,
      options,
      webview: { html: '' },
      revealed: 0,
      disposed: false,
      reveal() {
        this.revealed += 1;
      },
      onDidDispose: (listener: () => void) => disposed.event(listener),
      dispose() {
        this.disposed = true;
        disposed.fire();
      },
    };
    stub.webviews.push(panel);
    return panel;
  },
  showInformationMessage: showMessage('information'),
  showWarningMessage: showMessage('warning'),
  showErrorMessage: showMessage('error'),
  showInputBox(options: Record<string, unknown> = {}): Promise<string | undefined> {
    stub.inputBoxes.push(options);
    return Promise.resolve(stub.inputs.shift());
  },
  /** Answers with the item whose label is the next of `stub.picks` (undefined: dismissed). */
  showQuickPick<T extends PickItem>(items: T[], options: Record<string, unknown> = {}): Promise<T | undefined> {
    stub.quickPicks.push({ items: items.map(itemLabel), options });
    const answer = stub.picks.shift();
    return Promise.resolve(
      answer === undefined
        ? undefined
        : items.find(
            (item) =>
              itemLabel(item) === answer && (typeof item === 'string' || item.kind !== QuickPickItemKind.Separator),
          ),
    );
  },
  showTextDocument(document: StubDocument, options?: unknown): Promise<unknown> {
    stub.shown.push({ document, options });
    return Promise.resolve({ document });
  },
  async withProgress<T>(
    options: StubProgress['options'],
    task: (
      progress: { report(value: { message?: string }): void },
      token: CancellationTokenSource['token'],
    ) => Promise<T>,
  ): Promise<T> {
    const source = new CancellationTokenSource();
    const entry: StubProgress = { options, reports: [], done: false, cancel: () => source.cancel() };
    stub.progress.push(entry);
    try {
      return await task({ report: (value) => entry.reports.push(value) }, source.token);
    } finally {
      entry.done = true;
    }
  },
  get activeTextEditor(): { document: StubDocument } | undefined {
    return stub.activeDocument === undefined ? undefined : { document: stub.activeDocument };
  },
};

/** What VS Code's inspect() returns: a folder value only for a read scoped to a resource. */
function inspectSetting(section: string, key: string, scope: Uri | undefined) {
  const full = section.length > 0 ? `${section}.${key}` : key;
  return {
    key: full,
    defaultValue: contributedDefaults[full],
    globalValue: stub.configuration[full],
    workspaceValue: stub.workspaceConfiguration[full],
    workspaceFolderValue: scope === undefined ? undefined : stub.folderConfiguration[full],
  };
}

function getSetting(section: string, key: string, scope: Uri | undefined): unknown {
  const inspected = inspectSetting(section, key, scope);
  return inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue ?? inspected.defaultValue;
}

export const workspace = {
  getConfiguration(section = '', scope?: Uri | null) {
    const uri = scope ?? undefined;
    stub.configurationReads.push({ section, scope: uri?.path });
    return {
      get<T>(key: string, fallback?: T): T | undefined {
        const value = getSetting(section, key, uri);
        return value === undefined ? fallback : (value as T);
      },
      has(key: string): boolean {
        return getSetting(section, key, uri) !== undefined;
      },
      inspect<T>(key: string) {
        return inspectSetting(section, key, uri) as {
          key: string;
          defaultValue?: T;
          globalValue?: T;
          workspaceValue?: T;
          workspaceFolderValue?: T;
        };
      },
    };
  },
  get workspaceFolders() {
    return stub.workspaceFolders.length === 0
      ? undefined
      : stub.workspaceFolders.map((folder, index) => ({ uri: Uri.file(folder), name: folder, index }));
  },
  get textDocuments(): StubDocument[] {
    return stub.documents;
  },
  findFiles(_include: string, _exclude?: string, maxResults?: number): Promise<Uri[]> {
    const files = stub.files.map((file) => Uri.file(file));
    return Promise.resolve(maxResults === undefined ? files : files.slice(0, maxResults));
  },
  /** A file system provider's documents are read through it (as plaintext); others from `stub.texts`. */
  async openTextDocument(target: Uri | { language?: string; content?: string }): Promise<StubDocument> {
    const system = target instanceof Uri ? stub.fileSystems.get(target.scheme) : undefined;
    if (target instanceof Uri && system !== undefined) {
      stub.opened.push(target.toString());
      const text = Buffer.from(await system.provider.readFile(target)).toString('utf8');
      return { uri: target, languageId: 'plaintext', getText: () => text };
    }
    if (target instanceof Uri) {
      stub.opened.push(target.toString());
      return Promise.resolve({ uri: target, languageId: 'yaml', getText: () => stub.texts.get(target.fsPath) ?? '' });
    }
    stub.untitled.push(target);
    const uri = Uri.from({ scheme: 'untitled', path: `Untitled-${stub.untitled.length}` });
    return Promise.resolve({ uri, languageId: target.language ?? 'plaintext', getText: () => target.content ?? '' });
  },
  onDidChangeConfiguration(listener: (event: { affectsConfiguration(section: string): boolean }) => void) {
    return stub.onDidChangeConfiguration.event(listener);
  },
  onDidOpenTextDocument(listener: (document: StubDocument) => void) {
    return stub.onDidOpenTextDocument.event(listener);
  },
  registerFileSystemProvider(
    scheme: string,
    provider: StubFileSystemProvider,
    options?: Record<string, unknown>,
  ): Disposable {
    if (stub.fileSystems.has(scheme)) {
      throw new Error(`a provider for the scheme '${scheme}' is already registered`);
    }
    stub.fileSystems.set(scheme, { provider, options });
    return new Disposable(() => stub.fileSystems.delete(scheme));
  },
};

export const languages = {
  setTextDocumentLanguage(document: StubDocument, languageId: string): Promise<StubDocument> {
    stub.languageChanges.push({ uri: document.uri.toString(), languageId });
    return Promise.resolve({ ...document, languageId });
  },
};

export const commands = {
  registerCommand(command: string, callback: (...args: unknown[]) => unknown): Disposable {
    if (stub.commands.has(command)) {
      throw new Error(`command '${command}' already exists`);
    }
    stub.commands.set(command, callback);
    return new Disposable(() => stub.commands.delete(command));
  },
  executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    stub.executed.push({ command, args });
    const registered = stub.commands.get(command);
    return Promise.resolve(registered === undefined ? undefined : registered(...args));
  },
};

export const env = {
  openExternal(uri: Uri): Promise<boolean> {
    stub.external.push(uri.toString());
    return Promise.resolve(true);
  },
};

// Classes that vscode-languageclient extends when its module loads (test/bundle.test.ts loads the bundle).
// They only have to exist: the extension under test never creates a language client there.
export class CallHierarchyItem {}
export class CodeAction {}
export class CodeLens {}
export class CompletionItem {}
export class Diagnostic {}
export class DocumentLink {}
export class InlayHint {}
export class SymbolInformation {}
export class TypeHierarchyItem {}
export class CancellationError extends Error {}
