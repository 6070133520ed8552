/**
 * The outcome commands: Show Outcome (everything a run returned, in a quick pick: changes, artifacts, links,
 * and the actions), Open Artifact, View Outcome Diff and Apply Outcome, on the server's `workbench.outcome`
 * and `workbench.applyOutcome` (docs/lsp-extensions.md). The controller hands each run's `outcomeId` to
 * `afterRun`, which writes the outcome's summary into the Workbench Run channel.
 *
 * Without an argument the commands work on the current outcome: the last run's, or the last one shown. Show
 * Outcome asks which one (this window's outcomes, the latest first, or an id typed in).
 */

import * as vscode from 'vscode';
import {
  COMMAND_APPLY_OUTCOME,
  COMMAND_APPLY_OUTCOME_FILE,
  COMMAND_OPEN_ARTIFACT,
  COMMAND_OPEN_OUTCOME_FILE,
  COMMAND_SHOW_OUTCOME,
  COMMAND_VIEW_OUTCOME_DIFF,
  OUTCOME_PENDING_CONTEXT,
  OUTCOME_SCHEME,
  SERVER_COMMAND_APPLY_OUTCOME,
  SERVER_COMMAND_OUTCOME,
  SERVER_COMMAND_OUTCOME_FILE,
} from './constants';
import type { ServerClient } from './controller';
import {
  artifactPath,
  changesetLabel,
  isApplyResult,
  isOutcomeId,
  isWebLink,
  outcomeArgumentId,
  parseOutcomeView,
  parseSideContent,
  reviewPath,
  sidePath,
  type FileChange,
  type OutcomeArtifact,
  type OutcomeView,
} from './outcome';
import { OutcomeFileSystem } from './outcomeFiles';
import { errorMessage } from './run';

export const BUTTON_SHOW_OUTCOME = 'Show Outcome';
export const BUTTON_VIEW_DIFF = 'View Diff';
export const BUTTON_APPLY_OUTCOME = 'Apply Outcome';
/** The confirmation's button. */
export const BUTTON_APPLY = 'Apply';
/** The quick pick item that asks for an outcome id. */
export const ITEM_ENTER_ID = '$(edit) Enter an outcome id…';

const ICONS = { add: '$(diff-added)', modify: '$(diff-modified)', delete: '$(diff-removed)' } as const;
const OPERATIONS = { add: 'added', modify: 'modified', delete: 'deleted' } as const;

interface ActionItem extends vscode.QuickPickItem {
  action?: () => Promise<void>;
}

function separator(label: string): ActionItem {
  return { label, kind: vscode.QuickPickItemKind.Separator };
}

type Fetched = { view: OutcomeView } | { error: string };

/** The file a file command was invoked with: `{outcomeId, label}` (a Runs view file item). */
export function fileArgument(argument: unknown): { outcomeId: string; label: string } | undefined {
  if (typeof argument !== 'object' || argument === null) {
    return undefined;
  }
  const { outcomeId, label, change } = argument as { outcomeId?: unknown; label?: unknown; change?: { label?: unknown } };
  const name = typeof label === 'string' ? label : change?.label;
  return isOutcomeId(outcomeId) && typeof name === 'string' && name !== '' ? { outcomeId, label: name } : undefined;
}

export class OutcomeCommands implements vscode.Disposable {
  readonly files: OutcomeFileSystem;
  /** The outcome the commands work on without an argument. */
  private current: string | undefined;
  /** This window's outcomes, the latest first, with what produced them. */
  private readonly known: Array<{ id: string; description: string }> = [];

  constructor(
    private readonly client: () => Promise<ServerClient | undefined>,
    private readonly runOutput: vscode.OutputChannel,
  ) {
    this.files = new OutcomeFileSystem(
      async (id) => {
        const fetched = await this.fetch(id);
        return 'view' in fetched ? fetched.view : undefined;
      },
      async (id, side, label) => {
        const client = await this.client();
        const answer = await client?.executeCommand(SERVER_COMMAND_OUTCOME_FILE, [{ id, path: label, side }]);
        return parseSideContent(answer);
      },
    );
  }

  /** The outcome the commands default to (the last run's, or the last shown). */
  get currentOutcome(): string | undefined {
    return this.current;
  }

  /** The file system of the read-only documents and the four commands. */
  register(): vscode.Disposable[] {
    return [
      vscode.workspace.registerFileSystemProvider(OUTCOME_SCHEME, this.files, {
        isCaseSensitive: true,
        isReadonly: true,
      }),
      vscode.commands.registerCommand(COMMAND_SHOW_OUTCOME, (argument?: unknown) => this.showOutcome(argument)),
      vscode.commands.registerCommand(COMMAND_OPEN_ARTIFACT, (argument?: unknown) => this.openArtifact(argument)),
      vscode.commands.registerCommand(COMMAND_VIEW_OUTCOME_DIFF, (argument?: unknown) => this.viewDiff(argument)),
      vscode.commands.registerCommand(COMMAND_APPLY_OUTCOME, (argument?: unknown) => this.apply(argument)),
      vscode.commands.registerCommand(COMMAND_OPEN_OUTCOME_FILE, (argument?: unknown) => this.openFile(argument)),
      vscode.commands.registerCommand(COMMAND_APPLY_OUTCOME_FILE, (argument?: unknown) => this.applyFile(argument)),
    ];
  }

  /**
   * The changed files of an outcome (`entries` of `workbench.outcome`) and whether it is pending (its files can
   * be taken); none when it cannot be read.
   */
  async fileChanges(
    outcomeId: string,
  ): Promise<{ changes: FileChange[]; pending: boolean; artifacts: OutcomeArtifact[]; links: OutcomeView['outcome']['links'] }> {
    const fetched = await this.fetch(outcomeId);
    if (!('view' in fetched)) {
      return { changes: [], pending: false, artifacts: [], links: [] };
    }
    const { view } = fetched;
    return {
      changes: view.entries,
      pending: view.receipt.state === 'pending',
      artifacts: view.outcome.artifacts.filter((artifact) => view.files.artifacts.some((file) => file.id === artifact.id)),
      links: view.outcome.links,
    };
  }

  /**
   * Opens one changed file in the diff editor: before and after served read-only from the outcome store
   * (`wb-outcome:/OUTCOME/files/…`, named like the file so it is highlighted by its type).
   */
  async openFile(argument?: unknown): Promise<void> {
    const target = fileArgument(argument);
    if (target === undefined) {
      return;
    }
    const uri = (side: 'before' | 'after') =>
      vscode.Uri.from({ scheme: OUTCOME_SCHEME, path: sidePath(target.outcomeId, side, target.label) });
    try {
      await vscode.commands.executeCommand(
        'vscode.diff',
        uri('before'),
        uri('after'),
        `${target.label} (outcome ${target.outcomeId})`,
        { preview: false },
      );
    } catch (error) {
      void vscode.window.showErrorMessage(`Workbench: cannot open ${target.label}: ${errorMessage(error)}`);
    }
  }

  /**
   * "Apply This File": takes one file of a pending outcome (`workbench.applyOutcome` with `only`), with every
   * check of a whole apply; the receipt becomes applied once every file is taken.
   */
  async applyFile(argument?: unknown): Promise<void> {
    const target = fileArgument(argument);
    const client = target === undefined ? undefined : await this.client();
    if (target === undefined || client === undefined) {
      return;
    }
    try {
      const result = await client.executeCommand(SERVER_COMMAND_APPLY_OUTCOME, [
        { id: target.outcomeId, only: [target.label] },
      ]);
      if (!isApplyResult(result)) {
        throw new Error('the server answered with something unexpected');
      }
      const state = result.applicationState ?? 'pending';
      this.runOutput.appendLine(`Applied ${target.label} of outcome ${target.outcomeId}: ${result.text} (${state})`);
      void vscode.window.showInformationMessage(
        `Workbench: applied ${target.label}${state === 'applied' ? '; the whole outcome is now applied' : ''}.`,
      );
    } catch (error) {
      void vscode.window.showErrorMessage(`Workbench: ${target.label} was not applied: ${errorMessage(error)}`);
    }
    await this.load(target.outcomeId, true);
    this.changedFiles.fire(target.outcomeId);
  }

  /** Fired with an outcome's id when some of its files were taken (the Runs view reads them again). */
  private readonly changedFiles = new vscode.EventEmitter<string>();
  readonly onDidChangeFiles = this.changedFiles.event;

  /**
   * A run committed an outcome: it becomes the current one, and its summary is written to the Workbench Run
   * channel. Returns what the server said about it (undefined when it could not be read; the channel says why).
   */
  async afterRun(outcomeId: string, description: string): Promise<OutcomeView | undefined> {
    this.noteKnown(outcomeId, description);
    this.current = outcomeId;
    const fetched = await this.fetch(outcomeId);
    if ('error' in fetched) {
      this.runOutput.appendLine(`  outcome ${outcomeId} could not be read: ${fetched.error}`);
      return undefined;
    }
    for (const line of fetched.view.lines) {
      this.runOutput.appendLine(line.text);
    }
    this.setPending(fetched.view);
    return fetched.view;
  }

  /** "Workbench: Show Outcome": the outcome's changes, artifacts and links in a quick pick; picking one opens it. */
  async showOutcome(argument?: unknown): Promise<void> {
    const id = outcomeArgumentId(argument) ?? (await this.ask('Workbench: Show Outcome'));
    const view = id === undefined ? undefined : await this.load(id);
    if (view === undefined) {
      return;
    }
    const { outcome, receipt } = view;
    const items = this.items(view);
    if (items.length === 0) {
      void vscode.window.showInformationMessage(
        `Workbench: outcome ${outcome.id} (${receipt.state}) has no changes, artifacts or links.`,
      );
      return;
    }
    const picked = await vscode.window.showQuickPick(items, {
      title: `Outcome ${outcome.id}: ${outcome.completeness}, ${receipt.state}`,
      placeHolder: outcome.summary ?? view.brief,
      matchOnDescription: true,
      matchOnDetail: true,
    });
    await picked?.action?.();
  }

  /** "Workbench: Open Artifact": one of the outcome's artifacts, read-only (a quick pick when there are several). */
  async openArtifact(argument?: unknown): Promise<void> {
    const view = await this.target(argument, 'Workbench: Open Artifact');
    if (view === undefined) {
      return;
    }
    const { outcome, files } = view;
    const artifacts = outcome.artifacts.filter((artifact) => files.artifacts.some((file) => file.id === artifact.id));
    if (artifacts.length === 0) {
      void vscode.window.showInformationMessage(`Workbench: outcome ${outcome.id} has no artifacts.`);
      return;
    }
    const wanted =
      typeof argument === 'object' && argument !== null ? (argument as { artifact?: unknown }).artifact : undefined;
    let artifact = artifacts.find((candidate) => candidate.id === wanted);
    if (artifact === undefined && artifacts.length === 1) {
      artifact = artifacts[0];
    }
    if (artifact === undefined) {
      const picked = await vscode.window.showQuickPick(
        artifacts.map((candidate) => ({ ...this.artifactItem(candidate), artifact: candidate })),
        { title: `Artifacts of ${outcome.id}`, placeHolder: 'The artifact to open (read-only)', matchOnDetail: true },
      );
      artifact = picked?.artifact;
    }
    if (artifact !== undefined) {
      await this.openArtifactDocument(outcome.id, artifact);
    }
  }

  /** "Workbench: View Outcome Diff": a changeset's review diff as a read-only `diff` document. */
  async viewDiff(argument?: unknown): Promise<void> {
    const view = await this.target(argument, 'Workbench: View Outcome Diff');
    if (view === undefined) {
      return;
    }
    const { outcome, files } = view;
    const reviewed = outcome.changesets.filter(
      (changeset) => changeset.review !== undefined && files.reviews.some((file) => file.changeset === changeset.id),
    );
    if (reviewed.length === 0) {
      const why = outcome.changesets.length === 0 ? 'has no changes' : 'has no review diff';
      void vscode.window.showInformationMessage(`Workbench: outcome ${outcome.id} ${why}.`);
      return;
    }
    let changeset = reviewed.length === 1 ? reviewed[0] : undefined;
    if (changeset === undefined) {
      const picked = await vscode.window.showQuickPick(
        reviewed.map((candidate) => ({
          label: `$(diff) ${candidate.id}`,
          description: changesetLabel(view, candidate.id),
          changeset: candidate,
        })),
        { title: `Review diffs of ${outcome.id}`, placeHolder: 'The changeset whose review diff to open' },
      );
      changeset = picked?.changeset;
    }
    if (changeset !== undefined) {
      await this.openReview(outcome.id, changeset.id);
    }
  }

  /**
   * "Workbench: Apply Outcome": for a pending outcome only (a local or docker run already made its changes),
   * after a confirmation: `workbench.applyOutcome`, all or nothing.
   */
  async apply(argument?: unknown): Promise<void> {
    const view = await this.target(argument, 'Workbench: Apply Outcome');
    if (view === undefined) {
      return;
    }
    const { outcome, receipt } = view;
    if (receipt.state !== 'pending') {
      void vscode.window.showInformationMessage(
        `Workbench: outcome ${outcome.id} is ${receipt.state}: ${view.receiptText}. Nothing to apply.`,
      );
      return;
    }
    const changes = outcome.changesets.map((changeset) => changesetLabel(view, changeset.id));
    const choice = await vscode.window.showWarningMessage(
      `Apply outcome ${outcome.id} to its workspace?`,
      {
        modal: true,
        detail: [
          ...(changes.length === 0 ? ['No changes.'] : changes),
          'All or nothing: if a file changed since the run, nothing is written.',
        ].join('\n'),
      },
      BUTTON_APPLY,
    );
    if (choice !== BUTTON_APPLY) {
      return;
    }
    const client = await this.client();
    if (client === undefined) {
      return;
    }
    try {
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: `Workbench: applying outcome ${outcome.id}` },
        () => client.executeCommand(SERVER_COMMAND_APPLY_OUTCOME, [{ id: outcome.id }]),
      );
      if (!isApplyResult(result)) {
        throw new Error('the server answered with something unexpected');
      }
      const counts = result.text;
      this.runOutput.appendLine(`Applied outcome ${outcome.id}: ${counts}`);
      void vscode.window.showInformationMessage(`Workbench: applied outcome ${outcome.id}: ${counts}.`);
    } catch (error) {
      const message = `Workbench: outcome ${outcome.id} was not applied: ${errorMessage(error)}`;
      this.runOutput.appendLine(message.replace(/^Workbench: /, ''));
      void vscode.window.showErrorMessage(message);
    }
    // The receipt changed (or not): read it again for the next command.
    await this.load(outcome.id, true);
  }

  /** Opens an artifact's stored bytes read-only, in the editor its name calls for (text, image, ...). */
  async openArtifactDocument(outcomeId: string, artifact: { id: string; name: string }): Promise<void> {
    const uri = vscode.Uri.from({ scheme: OUTCOME_SCHEME, path: artifactPath(outcomeId, artifact) });
    try {
      await vscode.commands.executeCommand('vscode.open', uri, { preview: false });
    } catch (error) {
      void vscode.window.showErrorMessage(`Workbench: cannot open ${artifact.name}: ${errorMessage(error)}`);
    }
  }

  /** Opens a changeset's review diff read-only, as a `diff` document. */
  async openReview(outcomeId: string, changesetId: string): Promise<void> {
    const uri = vscode.Uri.from({ scheme: OUTCOME_SCHEME, path: reviewPath(outcomeId, changesetId) });
    try {
      let document = await vscode.workspace.openTextDocument(uri);
      if (document.languageId !== 'diff') {
        document = await vscode.languages.setTextDocumentLanguage(document, 'diff');
      }
      await vscode.window.showTextDocument(document, { preview: false });
    } catch (error) {
      void vscode.window.showErrorMessage(`Workbench: cannot open the review diff: ${errorMessage(error)}`);
    }
  }

  dispose(): void {
    this.files.dispose();
    this.changedFiles.dispose();
  }

  /** The outcome a command works on: its argument, else the current one, else asked for. Then loaded. */
  private async target(argument: unknown, title: string): Promise<OutcomeView | undefined> {
    const id = outcomeArgumentId(argument) ?? this.current ?? (await this.ask(title));
    return id === undefined ? undefined : this.load(id);
  }

  /** Asks which outcome: this window's (the latest first), or an id typed in. Undefined: dismissed. */
  private async ask(title: string): Promise<string | undefined> {
    if (this.known.length > 0) {
      const items: vscode.QuickPickItem[] = [
        ...this.known.map((entry) => ({ label: entry.id, description: entry.description })),
        { label: ITEM_ENTER_ID },
      ];
      const picked = await vscode.window.showQuickPick(items, {
        title,
        placeHolder: "The outcome (this window's, the latest first)",
      });
      if (picked === undefined) {
        return undefined;
      }
      if (picked.label !== ITEM_ENTER_ID) {
        return picked.label;
      }
    }
    const typed = await vscode.window.showInputBox({
      title,
      prompt: 'An outcome id, as a run reports it (outcome.available) and `wb-lsp outcomes` lists it',
      placeHolder: 'wbo_…',
      ignoreFocusOut: true,
      validateInput: (value) =>
        isOutcomeId(value.trim())
          ? undefined
          : 'An outcome id is wbo_ followed by 20 to 64 lowercase letters and digits.',
    });
    const id = typed?.trim();
    return isOutcomeId(id) ? id : undefined;
  }

  /** `workbench.outcome`: the outcome, or why it could not be read. */
  private async fetch(id: string): Promise<Fetched> {
    const client = await this.client();
    if (client === undefined) {
      return { error: 'the language server is not running' };
    }
    try {
      const view = parseOutcomeView(await client.executeCommand(SERVER_COMMAND_OUTCOME, [id]));
      if (view === undefined) {
        return { error: 'the server answered with something unexpected' };
      }
      this.files.remember(view);
      return { view };
    } catch (error) {
      return { error: errorMessage(error) };
    }
  }

  /** Fetches an outcome and makes it the current one; says why when it cannot (unless `quiet`). */
  private async load(id: string, quiet = false): Promise<OutcomeView | undefined> {
    const fetched = await this.fetch(id);
    if ('error' in fetched) {
      if (!quiet) {
        void vscode.window.showErrorMessage(`Workbench: cannot read outcome ${id}: ${fetched.error}`);
      }
      return undefined;
    }
    this.current = id;
    this.noteKnown(id);
    this.setPending(fetched.view);
    return fetched.view;
  }

  /** The context key that shows Apply Outcome in the palette: the current outcome is pending. */
  private setPending(view: OutcomeView): void {
    void vscode.commands.executeCommand('setContext', OUTCOME_PENDING_CONTEXT, view.receipt.state === 'pending');
  }

  private noteKnown(id: string, description?: string): void {
    const index = this.known.findIndex((entry) => entry.id === id);
    if (index >= 0) {
      if (description === undefined) {
        return;
      }
      this.known.splice(index, 1);
    }
    this.known.unshift({ id, description: description ?? '' });
  }

  private artifactItem(artifact: OutcomeArtifact): vscode.QuickPickItem {
    const item: vscode.QuickPickItem = {
      label: `$(file) ${artifact.name}`,
      description: `${artifact.content.media_type}, ${artifact.content.size_bytes} bytes`,
    };
    const detail = artifact.description ?? artifact.path;
    if (detail !== undefined) {
      item.detail = detail;
    }
    return item;
  }

  /** The Show Outcome items: changes (each opens its changeset's review diff), artifacts, links, Apply. */
  private items(view: OutcomeView): ActionItem[] {
    const { outcome, receipt, files } = view;
    const items: ActionItem[] = [];
    if (outcome.changesets.length > 0) {
      items.push(separator('Changes'));
    }
    for (const changeset of outcome.changesets) {
      const reviewed = changeset.review !== undefined && files.reviews.some((file) => file.changeset === changeset.id);
      const openDiff = reviewed ? () => this.openReview(outcome.id, changeset.id) : undefined;
      items.push({
        label: `$(diff) ${changeset.id}`,
        description: changesetLabel(view, changeset.id),
        detail: reviewed ? 'View the review diff' : 'No review diff',
        action: openDiff,
      });
      for (const entry of changeset.entries) {
        items.push({
          label: `${ICONS[entry.operation]} ${entry.path}`,
          description: OPERATIONS[entry.operation],
          action: openDiff,
        });
      }
    }
    const artifacts = outcome.artifacts.filter((artifact) => files.artifacts.some((file) => file.id === artifact.id));
    if (artifacts.length > 0) {
      items.push(separator('Artifacts'));
    }
    for (const artifact of artifacts) {
      items.push({ ...this.artifactItem(artifact), action: () => this.openArtifactDocument(outcome.id, artifact) });
    }
    if (outcome.links.length > 0) {
      items.push(separator('Links'));
    }
    for (const link of outcome.links) {
      const item: ActionItem = { label: `$(link-external) ${link.label}`, description: link.uri };
      if (link.kind !== undefined) {
        item.detail = link.kind;
      }
      if (isWebLink(link.uri)) {
        item.action = async () => {
          await vscode.env.openExternal(vscode.Uri.parse(link.uri));
        };
      }
      items.push(item);
    }
    if (receipt.state === 'pending' && items.length > 0) {
      items.push(separator('Pending'), {
        label: `$(check) ${BUTTON_APPLY_OUTCOME}…`,
        description: view.receiptText,
        action: () => this.apply(outcome.id),
      });
    }
    return items;
  }
}
