/**
 * An outcome as the server's `workbench.outcome` answers it, with its stored files written to a temporary
 * content store (named and checked by SHA-256 like the real one): the changeset of the engine's fake OpenCode
 * run (README.md modified, notes/hello.txt added, obsolete.txt deleted), a findings report and a PR link,
 * with the text the server renders for it (the summary lines, the brief, the changeset label).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OutcomeView, ReceiptState } from '../src/outcome';

export const OUTCOME_ID = 'wbo_0123456789abcdefghij0123';
export const RUN_ID = 'wb_00112233445566778899aabb';
export const REPORT = '<h1>Findings</h1>\n';
export const DIFF = [
  'diff --git a/README.md b/README.md',
  '--- a/README.md',
  '+++ b/README.md',
  '@@ -1,3 +1,3 @@',
  '-# Old title',
  '+# New title',
  ' ',
  ' The ledger service.',
  '',
].join('\n');

export function digest(content: string | Buffer): string {
  return `sha256:${createHash('sha256').update(content).digest('hex')}`;
}

/** A content store in a temporary directory: `put` writes a blob and returns its path and descriptor. */
export class Store {
  readonly root = mkdtempSync(join(tmpdir(), 'wb-vscode-outcome-'));
  put(
    content: string | Buffer,
    mediaType: string,
  ): { file: string; content: { digest: string; media_type: string; size_bytes: number } } {
    const hash = digest(content);
    const hex = hash.slice('sha256:'.length);
    const dir = join(this.root, 'blobs', 'sha256', hex.slice(0, 2));
    mkdirSync(dir, { recursive: true });
    const file = join(dir, hex.slice(2));
    writeFileSync(file, content);
    return { file, content: { digest: hash, media_type: mediaType, size_bytes: Buffer.byteLength(content) } };
  }
  remove(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

function fingerprint(content: string) {
  return { kind: 'file', digest: digest(content), mode: 0o644, size_bytes: Buffer.byteLength(content) };
}

/** The answer of `workbench.outcome` for the fixture outcome, with the given receipt state. */
export function outcomeAnswer(store: Store, state: ReceiptState = 'present'): OutcomeView & Record<string, unknown> {
  const report = store.put(REPORT, 'text/html');
  const review = store.put(DIFF, 'text/x-diff');
  const readme = store.put('# New title\n\nThe ledger service.\n', 'text/markdown');
  const hello = store.put('hello from the fake runner\n', 'text/plain');
  return {
    outcome: {
      version: 1,
      id: OUTCOME_ID,
      run_id: RUN_ID,
      created_at: '2026-11-30T07:12:21.000Z',
      completeness: 'complete',
      summary: 'Prepared a findings report',
      changesets: [
        {
          id: 'primary',
          workspace: { kind: 'primary' },
          base: { snapshot_digest: digest('base') },
          entries: [
            {
              path: 'README.md',
              operation: 'modify',
              before: fingerprint('# Old title\n'),
              after: { kind: 'file', content: readme.content, mode: 0o644 },
            },
            { path: 'notes/hello.txt', operation: 'add', after: { kind: 'file', content: hello.content, mode: 0o644 } },
            { path: 'obsolete.txt', operation: 'delete', before: fingerprint('remove me\n') },
          ],
          review: review.content,
          stats: { additions: 1, modifications: 1, deletions: 1, binary_files: 0 },
        },
      ],
      artifacts: [
        {
          id: 'findings_html',
          name: 'Findings.html',
          path: 'reports/findings.html',
          content: report.content,
          description: 'The collected research report',
        },
      ],
      links: [
        {
          id: 'implementation_pr',
          label: 'Implementation PR',
          uri: 'https://github.com/example/project/pull/42',
          kind: 'pull_request',
        },
      ],
      warnings: [],
    },
    receipt: {
      version: 1,
      outcome_id: OUTCOME_ID,
      state,
      updated_at: '2026-11-30T07:12:21.000Z',
      ...(state === 'applied' ? { applied_at: '2026-11-30T07:13:00.000Z' } : {}),
    },
    files: {
      artifacts: [{ id: 'findings_html', name: 'Findings.html', file: report.file }],
      reviews: [{ changeset: 'primary', file: review.file }],
    },
    lines: expectedSummary(state).map((text, index) => ({ text, ...TARGETS[index] })),
    brief: '1 added, 1 modified, 1 deleted; 1 artifact; 1 link',
    changesets: [{ id: 'primary', text: 'primary workspace: 1 added, 1 modified, 1 deleted' }],
    receiptText: RECEIPT_TEXTS[state],
  } as unknown as OutcomeView & Record<string, unknown>;
}

/** What the lines of the summary show (by index): the changeset's header and entries, the artifact. */
const TARGETS: Record<number, { changeset?: string; artifact?: string }> = {
  2: { changeset: 'primary' },
  3: { changeset: 'primary' },
  4: { changeset: 'primary' },
  5: { changeset: 'primary' },
  7: { artifact: 'findings_html' },
};

/** The server's `receiptText` for each receipt state. */
export const RECEIPT_TEXTS: Record<ReceiptState, string> = {
  pending: 'its changes are not in the workspace yet',
  present: 'the run already made its changes in the workspace',
  applied: 'it was already applied',
};

/** The summary `wb-lsp outcome ID` prints for the fixture. */
export function expectedSummary(state: ReceiptState): string[] {
  return [
    `Outcome ${OUTCOME_ID} (run ${RUN_ID}, complete, ${state})`,
    'Summary: Prepared a findings report',
    'Changeset primary (primary workspace): 1 added, 1 modified, 1 deleted',
    '  M README.md',
    '  A notes/hello.txt',
    '  D obsolete.txt',
    'Artifacts: 1',
    '  Findings.html (reports/findings.html): text/html, 18 bytes',
    'Links: 1',
    '  Implementation PR [pull_request]: https://github.com/example/project/pull/42',
  ];
}
