/**
 * A run's outcome as the server's `workbench.outcome` answers it (docs/lsp-extensions.md; the manifest and the
 * receipt follow the outcomes contract's schemas), as plain functions (no `vscode` here): reading the answer
 * (with the text the server renders: the summary lines of `wb-lsp outcome ID`, the one-line brief, a label per
 * changeset, what the receipt state means), the outcome ids a command accepts, and the paths of the read-only
 * documents the extension opens for an artifact or a review diff.
 */

/** A content descriptor: the stored bytes' digest, media type and size. */
export interface OutcomeContent {
  digest: string;
  media_type: string;
  size_bytes: number;
}

export interface OutcomeEntry {
  path: string;
  operation: 'add' | 'modify' | 'delete';
}

export type OutcomeWorkspace = { kind: 'primary' } | { kind: 'named'; name: string };

export interface OutcomeChangeset {
  id: string;
  workspace: OutcomeWorkspace;
  entries: OutcomeEntry[];
  stats: { additions: number; modifications: number; deletions: number; binary_files: number };
  /** The unified review diff (for reading; the entries are the apply authority). */
  review?: OutcomeContent;
}

export interface OutcomeArtifact {
  id: string;
  name: string;
  path?: string;
  content: OutcomeContent;
  description?: string;
}

export interface OutcomeLink {
  id: string;
  label: string;
  uri: string;
  kind?: string;
}

/** The immutable outcome manifest. */
export interface OutcomeManifest {
  id: string;
  run_id: string;
  created_at: string;
  completeness: string;
  turn_index?: number;
  summary?: string;
  changesets: OutcomeChangeset[];
  artifacts: OutcomeArtifact[];
  links: OutcomeLink[];
  warnings: Array<{ code: string; message: string }>;
}

/** `pending`: not yet accepted into a workspace; `present`: the run edited it in place; `applied`. */
export type ReceiptState = 'pending' | 'present' | 'applied';

export interface OutcomeReceipt {
  outcome_id: string;
  state: ReceiptState;
  updated_at: string;
  applied_at?: string;
}

/** One line of the summary the server renders, with the changeset or artifact it shows. */
export interface SummaryLine {
  text: string;
  changeset?: string;
  artifact?: string;
}

/** What a change does to its path (the server's `entries[].kind`). */
export type FileChangeKind = 'added' | 'modified' | 'deleted' | 'mode_changed' | 'link';

/** One changed path, as `workbench.outcome` lists it in `entries`. */
export interface FileChange {
  /** How the server names it (`path`, or `name:path` in a named workspace): `--apply --only` takes it. */
  label: string;
  changeset: string;
  workspace: string | null;
  path: string;
  kind: FileChangeKind;
  additions: number;
  deletions: number;
  binary: boolean;
  /** Taken on its own already (the receipt may still be pending). */
  taken: boolean;
}

/** One side of a change (`workbench.outcomeFile`). */
export type SideContent =
  | { kind: 'absent' }
  | { kind: 'text'; text: string; mode: number }
  | { kind: 'binary'; size_bytes: number; mode: number }
  | { kind: 'link'; target: string }
  | { kind: 'not_kept'; size_bytes: number };

/**
 * The answer of `workbench.outcome`: the manifest, the receipt, the stored files an editor can open, and the
 * server's text: the summary `lines`, the `brief` (`1 added, 0 modified, 0 deleted; 1 artifact; 0 links`),
 * each changeset's label (`primary workspace: 1 added, ...`) and what the receipt state means (`receiptText`).
 */
export interface OutcomeView {
  outcome: OutcomeManifest;
  receipt: OutcomeReceipt;
  files: {
    artifacts: Array<{ id: string; name: string; file: string }>;
    reviews: Array<{ changeset: string; file: string }>;
  };
  lines: SummaryLine[];
  brief: string;
  changesets: Array<{ id: string; text: string }>;
  receiptText: string;
  /** Every changed path (empty from a server that does not list them). */
  entries: FileChange[];
}

/** The answer of `workbench.applyOutcome`: the counts, and `text` (`3 applied, 0 unchanged`). */
export interface ApplyResult {
  outcomeId: string;
  applied: number;
  unchanged: number;
  text: string;
  /** The receipt afterwards: `pending` while paths are not taken yet. */
  applicationState?: ReceiptState;
}

const OUTCOME_ID = /^wbo_[a-z0-9]{20,64}$/;
const CHILD_ID = /^[a-z][a-z0-9_]{2,127}$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;

/** True for an outcome id (`wbo_` and 20 to 64 lowercase letters and digits). */
export function isOutcomeId(value: unknown): value is string {
  return typeof value === 'string' && OUTCOME_ID.test(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isString(value: unknown): value is string {
  return typeof value === 'string';
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

function isContent(value: unknown): value is OutcomeContent {
  return (
    isObject(value) &&
    isString(value.digest) &&
    DIGEST.test(value.digest) &&
    isString(value.media_type) &&
    isCount(value.size_bytes)
  );
}

function isEntry(value: unknown): value is OutcomeEntry {
  return isObject(value) && isString(value.path) && ['add', 'modify', 'delete'].includes(String(value.operation));
}

function isWorkspace(value: unknown): value is OutcomeWorkspace {
  return isObject(value) && (value.kind === 'primary' || (value.kind === 'named' && isString(value.name)));
}

function isChangeset(value: unknown): value is OutcomeChangeset {
  if (!isObject(value) || !isString(value.id) || !isWorkspace(value.workspace) || !Array.isArray(value.entries)) {
    return false;
  }
  const stats = value.stats;
  return (
    value.entries.every(isEntry) &&
    isObject(stats) &&
    isCount(stats.additions) &&
    isCount(stats.modifications) &&
    isCount(stats.deletions) &&
    (value.review === undefined || isContent(value.review))
  );
}

function isArtifact(value: unknown): value is OutcomeArtifact {
  return (
    isObject(value) &&
    isString(value.id) &&
    isString(value.name) &&
    isContent(value.content) &&
    (value.path === undefined || isString(value.path)) &&
    (value.description === undefined || isString(value.description))
  );
}

function isLink(value: unknown): value is OutcomeLink {
  return (
    isObject(value) &&
    isString(value.id) &&
    isString(value.label) &&
    isString(value.uri) &&
    (value.kind === undefined || isString(value.kind))
  );
}

function isWarning(value: unknown): value is { code: string; message: string } {
  return isObject(value) && isString(value.code) && isString(value.message);
}

function isManifest(value: unknown): value is OutcomeManifest {
  return (
    isObject(value) &&
    isOutcomeId(value.id) &&
    isString(value.run_id) &&
    isString(value.completeness) &&
    (value.summary === undefined || isString(value.summary)) &&
    Array.isArray(value.changesets) &&
    value.changesets.every(isChangeset) &&
    Array.isArray(value.artifacts) &&
    value.artifacts.every(isArtifact) &&
    Array.isArray(value.links) &&
    value.links.every(isLink) &&
    (value.warnings === undefined || (Array.isArray(value.warnings) && value.warnings.every(isWarning)))
  );
}

function isReceipt(value: unknown): value is OutcomeReceipt {
  return (
    isObject(value) && isString(value.outcome_id) && ['pending', 'present', 'applied'].includes(String(value.state))
  );
}

/**
 * The answer of `workbench.outcome`, checked: undefined when it is not one. Stored files whose entry is
 * malformed are left out (they cannot be opened), as are the manifest's missing `warnings`.
 */
export function parseOutcomeView(value: unknown): OutcomeView | undefined {
  if (!isObject(value) || !isManifest(value.outcome) || !isReceipt(value.receipt)) {
    return undefined;
  }
  const files = isObject(value.files) ? value.files : {};
  const artifacts = (Array.isArray(files.artifacts) ? files.artifacts : []).filter(
    (file): file is { id: string; name: string; file: string } =>
      isObject(file) && isString(file.id) && isString(file.name) && isString(file.file),
  );
  const reviews = (Array.isArray(files.reviews) ? files.reviews : []).filter(
    (file): file is { changeset: string; file: string } =>
      isObject(file) && isString(file.changeset) && isString(file.file),
  );
  const outcome = { ...value.outcome, warnings: value.outcome.warnings ?? [] };
  const lines = (Array.isArray(value.lines) ? value.lines : []).filter(
    (line): line is SummaryLine =>
      isObject(line) &&
      isString(line.text) &&
      (line.changeset === undefined || isString(line.changeset)) &&
      (line.artifact === undefined || isString(line.artifact)),
  );
  const changesets = (Array.isArray(value.changesets) ? value.changesets : []).filter(
    (label): label is { id: string; text: string } => isObject(label) && isString(label.id) && isString(label.text),
  );
  const brief = isString(value.brief) ? value.brief : '';
  const receiptText = isString(value.receiptText) ? value.receiptText : '';
  const entries = (Array.isArray(value.entries) ? value.entries : []).filter(isFileChange);
  return {
    outcome,
    receipt: value.receipt,
    files: { artifacts, reviews },
    lines,
    brief,
    changesets,
    receiptText,
    entries,
  };
}

const KINDS: readonly FileChangeKind[] = ['added', 'modified', 'deleted', 'mode_changed', 'link'];

function isFileChange(value: unknown): value is FileChange {
  return (
    isObject(value) &&
    isString(value.label) &&
    value.label !== '' &&
    isString(value.changeset) &&
    (value.workspace === null || value.workspace === undefined || isString(value.workspace)) &&
    isString(value.path) &&
    KINDS.includes(value.kind as FileChangeKind) &&
    isCount(value.additions) &&
    isCount(value.deletions) &&
    typeof value.binary === 'boolean' &&
    typeof value.taken === 'boolean'
  );
}

/** The answer of `workbench.outcomeFile`, checked; undefined when it is not one. */
export function parseSideContent(value: unknown): SideContent | undefined {
  if (!isObject(value)) {
    return undefined;
  }
  switch (value.kind) {
    case 'absent':
      return { kind: 'absent' };
    case 'text':
      return isString(value.text) && isCount(value.mode) ? { kind: 'text', text: value.text, mode: value.mode } : undefined;
    case 'binary':
      return isCount(value.size_bytes) && isCount(value.mode)
        ? { kind: 'binary', size_bytes: value.size_bytes, mode: value.mode }
        : undefined;
    case 'link':
      return isString(value.target) ? { kind: 'link', target: value.target } : undefined;
    case 'not_kept':
      return isCount(value.size_bytes) ? { kind: 'not_kept', size_bytes: value.size_bytes } : undefined;
    default:
      return undefined;
  }
}

/** What the diff view shows for a side: the text itself, or a line saying what the side is. */
export function sideText(side: SideContent): string {
  switch (side.kind) {
    case 'absent':
      return '';
    case 'text':
      return side.text;
    case 'binary':
      return `(binary file, ${side.size_bytes} bytes)\n`;
    case 'link':
      return `(symbolic link to ${side.target})\n`;
    case 'not_kept':
      return `(the earlier content, ${side.size_bytes} bytes, was not kept and the workspace no longer holds it)\n`;
  }
}

const MARKS: Record<FileChangeKind, string> = { added: 'A', modified: 'M', deleted: 'D', mode_changed: 'M', link: 'L' };

/** `M +3 −1`, `A +2`, `D −4`, `M mode`, `L link`, `M binary`; ` · taken` once taken on its own. */
export function fileChangeDescription(change: FileChange): string {
  const counts =
    change.kind === 'mode_changed'
      ? 'mode'
      : change.kind === 'link'
        ? 'link'
        : change.binary
          ? 'binary'
          : [change.additions > 0 ? `+${change.additions}` : '', change.deletions > 0 ? `\u2212${change.deletions}` : '']
              .filter((part) => part !== '')
              .join(' ');
  return `${MARKS[change.kind]} ${counts}`.trim() + (change.taken ? ' \u00b7 taken' : '');
}

/** The path of one side of a changed file: `/OUTCOME/files/before|after/LABEL` (its name gives the language). */
export function sidePath(outcomeId: string, side: 'before' | 'after', label: string): string {
  return `/${outcomeId}/files/${side}/${label}`;
}

export function isApplyResult(value: unknown): value is ApplyResult {
  return isObject(value) && isCount(value.applied) && isCount(value.unchanged) && isString(value.text);
}

/** The outcome id a command was invoked with: the id itself, or an object with `id` or `outcomeId`. */
export function outcomeArgumentId(argument: unknown): string | undefined {
  if (isOutcomeId(argument)) {
    return argument;
  }
  if (isObject(argument)) {
    for (const key of ['id', 'outcomeId']) {
      const id = argument[key];
      if (isOutcomeId(id)) {
        return id;
      }
    }
  }
  return undefined;
}

/** The server's label of a changeset: `primary workspace: 1 added, 0 modified, 0 deleted`. */
export function changesetLabel(view: OutcomeView, changesetId: string): string {
  return view.changesets.find((label) => label.id === changesetId)?.text ?? changesetId;
}

/** A stored file's name as a path segment: no separators or control characters, never empty. */
export function safeFileName(name: string): string {
  const cleaned = name.replace(/[\\/\u0000-\u001f\u007f]/g, '_').trim();
  return cleaned.length === 0 || cleaned === '.' || cleaned === '..' ? 'artifact' : cleaned;
}

/** The path of an artifact's read-only document: `/OUTCOME/artifacts/ARTIFACT/NAME` (the name gives the language). */
export function artifactPath(outcomeId: string, artifact: { id: string; name: string }): string {
  return `/${outcomeId}/artifacts/${artifact.id}/${safeFileName(artifact.name)}`;
}

/** The path of a changeset's review diff document: `/OUTCOME/changesets/CHANGESET.diff`. */
export function reviewPath(outcomeId: string, changesetId: string): string {
  return `/${outcomeId}/changesets/${changesetId}.diff`;
}

/** What a document path names, or undefined. */
export type OutcomeFileRef =
  | { kind: 'artifact'; outcomeId: string; artifactId: string }
  | { kind: 'review'; outcomeId: string; changesetId: string }
  | { kind: 'side'; outcomeId: string; side: 'before' | 'after'; label: string };

export function parseOutcomePath(path: string): OutcomeFileRef | undefined {
  const parts = path.split('/');
  if (parts[0] !== '' || !isOutcomeId(parts[1])) {
    return undefined;
  }
  const outcomeId = parts[1];
  const side = parts[3];
  if (parts.length >= 5 && parts[2] === 'files' && (side === 'before' || side === 'after')) {
    const label = parts.slice(4).join('/');
    return label === '' || parts.slice(4).some((part) => part === '' || part === '.' || part === '..')
      ? undefined
      : { kind: 'side', outcomeId, side, label };
  }
  if (parts.length === 5 && parts[2] === 'artifacts' && CHILD_ID.test(parts[3] ?? '') && (parts[4] ?? '') !== '') {
    return { kind: 'artifact', outcomeId, artifactId: parts[3] ?? '' };
  }
  const review = parts.length === 4 && parts[2] === 'changesets' ? /^(.+)\.diff$/.exec(parts[3] ?? '') : null;
  if (review?.[1] !== undefined && CHILD_ID.test(review[1])) {
    return { kind: 'review', outcomeId, changesetId: review[1] };
  }
  return undefined;
}

/** The stored file and its expected content for a document, or undefined when the outcome has none. */
export function storedFile(
  view: OutcomeView,
  ref: OutcomeFileRef,
): { file: string; content: OutcomeContent } | undefined {
  if (ref.kind === 'side') {
    return undefined;
  }
  if (ref.kind === 'artifact') {
    const artifact = view.outcome.artifacts.find((candidate) => candidate.id === ref.artifactId);
    const file = view.files.artifacts.find((candidate) => candidate.id === ref.artifactId)?.file;
    return artifact === undefined || file === undefined ? undefined : { file, content: artifact.content };
  }
  const review = view.outcome.changesets.find((candidate) => candidate.id === ref.changesetId)?.review;
  const file = view.files.reviews.find((candidate) => candidate.changeset === ref.changesetId)?.file;
  return review === undefined || file === undefined ? undefined : { file, content: review };
}

/** True for a web link an editor may open on request (the contract only allows http and https). */
export function isWebLink(uri: string): boolean {
  return /^https?:\/\/[^\s]+$/i.test(uri);
}
