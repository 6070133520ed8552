/**
 * The read-only documents of outcomes: a file system provider for the `wb-outcome` scheme that serves an
 * artifact's stored bytes (`wb-outcome:/OUTCOME/artifacts/ARTIFACT/NAME`) and a changeset's review diff
 * (`wb-outcome:/OUTCOME/changesets/CHANGESET.diff`) from the content store, where the server's
 * `workbench.outcome` said they are (the bytes checked against their SHA-256 digest before they are shown),
 * and either side of a changed file (`wb-outcome:/OUTCOME/files/before|after/LABEL`, for the diff editor) as
 * the server's `workbench.outcomeFile` gives it.
 * Registered read-only: nothing can be written, renamed or deleted through it.
 */

import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import * as vscode from 'vscode';
import { OUTCOME_SCHEME } from './constants';
import { parseOutcomePath, sideText, storedFile, type OutcomeView, type SideContent } from './outcome';

export { OUTCOME_SCHEME };

/** Asks the server for an outcome (`workbench.outcome`); undefined when it cannot. */
export type OutcomeLookup = (outcomeId: string) => Promise<OutcomeView | undefined>;

/** Asks the server for one side of a changed file (`workbench.outcomeFile`); undefined when it cannot. */
export type SideLookup = (outcomeId: string, side: 'before' | 'after', label: string) => Promise<SideContent | undefined>;

export class OutcomeFileSystem implements vscode.FileSystemProvider {
  private readonly views = new Map<string, OutcomeView>();
  private readonly changes = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changes.event;

  /** `lookup` is asked for outcomes not seen yet (for example documents restored after a reload). */
  constructor(
    private readonly lookup: OutcomeLookup,
    private readonly sideLookup: SideLookup = async () => undefined,
  ) {}

  /** Remembers what the server said about an outcome, so its documents can be read. */
  remember(view: OutcomeView): void {
    this.views.set(view.outcome.id, view);
  }

  private async resolve(uri: vscode.Uri): Promise<{ file: string; digest: string; size: number }> {
    const ref = parseOutcomePath(uri.path);
    if (ref === undefined) {
      throw vscode.FileSystemError.FileNotFound(uri);
    }
    let view = this.views.get(ref.outcomeId);
    if (view === undefined) {
      view = await this.lookup(ref.outcomeId);
      if (view === undefined) {
        throw vscode.FileSystemError.FileNotFound(uri);
      }
      this.remember(view);
    }
    const stored = storedFile(view, ref);
    if (stored === undefined) {
      throw vscode.FileSystemError.FileNotFound(uri);
    }
    return { file: stored.file, digest: stored.content.digest, size: stored.content.size_bytes };
  }

  /** One side of a changed file, as the diff editor shows it (a line says what a side that is not text is). */
  private async side(uri: vscode.Uri): Promise<Uint8Array | undefined> {
    const ref = parseOutcomePath(uri.path);
    if (ref?.kind !== 'side') {
      return undefined;
    }
    const content = await this.sideLookup(ref.outcomeId, ref.side, ref.label);
    if (content === undefined) {
      throw vscode.FileSystemError.FileNotFound(uri);
    }
    return Buffer.from(sideText(content), 'utf8');
  }

  async stat(uri: vscode.Uri): Promise<vscode.FileStat> {
    const side = await this.side(uri);
    if (side !== undefined) {
      return { type: vscode.FileType.File, ctime: 0, mtime: 0, size: side.length, permissions: vscode.FilePermission.Readonly };
    }
    const { file, size } = await this.resolve(uri);
    let mtime = 0;
    try {
      mtime = (await stat(file)).mtimeMs;
    } catch {
      throw vscode.FileSystemError.FileNotFound(uri);
    }
    return { type: vscode.FileType.File, ctime: mtime, mtime, size, permissions: vscode.FilePermission.Readonly };
  }

  /** The stored bytes, after checking them against the digest the outcome records. */
  async readFile(uri: vscode.Uri): Promise<Uint8Array> {
    const side = await this.side(uri);
    if (side !== undefined) {
      return side;
    }
    const { file, digest } = await this.resolve(uri);
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch {
      throw vscode.FileSystemError.FileNotFound(uri);
    }
    const actual = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    if (actual !== digest) {
      throw vscode.FileSystemError.Unavailable(`The stored content of ${uri.path} does not match its digest ${digest}`);
    }
    return bytes;
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  watch(): vscode.Disposable {
    // Stored content never changes.
    return new vscode.Disposable(() => undefined);
  }

  createDirectory(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  writeFile(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  delete(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  rename(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  dispose(): void {
    this.changes.dispose();
  }
}
