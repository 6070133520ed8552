/** The outcome data (src/outcome.ts) and the read-only documents of outcomes (src/outcomeFiles.ts). */
import './register';
import { strict as assert } from 'node:assert';
import { writeFileSync } from 'node:fs';
import { after, test } from 'node:test';
import {
  artifactPath,
  isOutcomeId,
  changesetLabel,
  outcomeArgumentId,
  parseOutcomePath,
  parseOutcomeView,
  reviewPath,
  safeFileName,
  type OutcomeView,
} from '../src/outcome';
import { OUTCOME_SCHEME, OutcomeFileSystem } from '../src/outcomeFiles';
import { DIFF, expectedSummary, OUTCOME_ID, outcomeAnswer, REPORT, Store } from './outcome-fixture';
import { FilePermission, FileSystemError, FileType, Uri } from './vscode-stub';

const store = new Store();
after(() => store.remove());

function view(state: 'pending' | 'present' | 'applied' = 'present'): OutcomeView {
  const parsed = parseOutcomeView(outcomeAnswer(store, state));
  assert.ok(parsed, 'the fixture is an outcome view');
  return parsed;
}

test('outcome ids and the arguments that carry one', () => {
  assert.ok(isOutcomeId(OUTCOME_ID));
  assert.ok(!isOutcomeId('wb_00112233445566778899aabb'), 'a run id is not an outcome id');
  assert.ok(!isOutcomeId('wbo_short'));
  assert.ok(!isOutcomeId('wbo_0123456789ABCDEFGHIJ0123'), 'lowercase only');
  assert.equal(outcomeArgumentId(OUTCOME_ID), OUTCOME_ID);
  assert.equal(outcomeArgumentId({ id: OUTCOME_ID }), OUTCOME_ID);
  assert.equal(outcomeArgumentId({ outcomeId: OUTCOME_ID }), OUTCOME_ID);
  assert.equal(outcomeArgumentId({ id: 'nonsense' }), undefined);
  assert.equal(outcomeArgumentId(undefined), undefined);
  assert.equal(outcomeArgumentId(Uri.file('/work/repo')), undefined);
});

test("the server's answer is checked before it is used", () => {
  const answer = outcomeAnswer(store);
  assert.ok(parseOutcomeView(answer));
  assert.equal(parseOutcomeView(undefined), undefined);
  assert.equal(parseOutcomeView({ outcome: answer.outcome }), undefined, 'no receipt');
  assert.equal(parseOutcomeView({ ...answer, receipt: { outcome_id: OUTCOME_ID, state: 'lost' } }), undefined);
  const badEntry = structuredClone(answer);
  (badEntry.outcome.changesets[0]?.entries as unknown[]).push({ path: 'x', operation: 'rename' });
  assert.equal(parseOutcomeView(badEntry), undefined, 'an unknown operation');
  const badDigest = structuredClone(answer);
  const artifact = badDigest.outcome.artifacts[0];
  assert.ok(artifact);
  artifact.content.digest = 'md5:abc';
  assert.equal(parseOutcomeView(badDigest), undefined, 'a digest that is not sha256');
  // A malformed stored-file entry is left out; the outcome is still usable.
  const odd = { ...answer, files: { artifacts: [{ id: 'findings_html' }], reviews: answer.files.reviews } };
  assert.deepEqual(parseOutcomeView(odd)?.files.artifacts, []);
  assert.deepEqual(parseOutcomeView({ ...answer, files: undefined })?.files, { artifacts: [], reviews: [] });
});

test("the server's text is read from the answer: summary lines with what they open, brief, labels", () => {
  const parsed = view();
  assert.deepEqual(
    parsed.lines.map((line) => line.text),
    expectedSummary('present'),
  );
  assert.deepEqual(parsed.lines[3], { text: '  M README.md', changeset: 'primary' });
  assert.deepEqual(parsed.lines[7], {
    text: '  Findings.html (reports/findings.html): text/html, 18 bytes',
    artifact: 'findings_html',
  });
  assert.equal(parsed.brief, '1 added, 1 modified, 1 deleted; 1 artifact; 1 link');
  assert.equal(changesetLabel(parsed, 'primary'), 'primary workspace: 1 added, 1 modified, 1 deleted');
  assert.equal(changesetLabel(parsed, 'other'), 'other', 'a changeset without a label shows its id');
  assert.equal(parsed.receiptText, 'the run already made its changes in the workspace');
  // Malformed lines and labels are left out; a missing text is empty.
  const odd = { ...outcomeAnswer(store), lines: [{ text: 'ok' }, { text: 3 }, 'bare'], changesets: [{ id: 'x' }] };
  delete (odd as Record<string, unknown>).brief;
  const oddView = parseOutcomeView(odd);
  assert.deepEqual(oddView?.lines, [{ text: 'ok' }]);
  assert.deepEqual(oddView?.changesets, []);
  assert.equal(oddView?.brief, '');
});

test('document paths name the outcome, the artifact or changeset, and keep the artifact name for its language', () => {
  const path = artifactPath(OUTCOME_ID, { id: 'findings_html', name: 'Findings.html' });
  assert.equal(path, `/${OUTCOME_ID}/artifacts/findings_html/Findings.html`);
  assert.deepEqual(parseOutcomePath(path), { kind: 'artifact', outcomeId: OUTCOME_ID, artifactId: 'findings_html' });
  assert.equal(reviewPath(OUTCOME_ID, 'primary'), `/${OUTCOME_ID}/changesets/primary.diff`);
  assert.deepEqual(parseOutcomePath(reviewPath(OUTCOME_ID, 'primary')), {
    kind: 'review',
    outcomeId: OUTCOME_ID,
    changesetId: 'primary',
  });
  // A name is one path segment.
  assert.equal(safeFileName('../reports/a\\b.html'), '.._reports_a_b.html');
  assert.equal(safeFileName('..'), 'artifact');
  assert.equal(
    artifactPath(OUTCOME_ID, { id: 'findings_html', name: 'a/b' }),
    `/${OUTCOME_ID}/artifacts/findings_html/a_b`,
  );
  for (const bad of [
    '/wbo_x/artifacts/findings_html/Findings.html',
    `/${OUTCOME_ID}/artifacts/Findings/Findings.html`,
    `/${OUTCOME_ID}/artifacts/findings_html`,
    `/${OUTCOME_ID}/changesets/primary`,
    `/${OUTCOME_ID}/changesets/../primary.diff`,
    `${OUTCOME_ID}/changesets/primary.diff`,
  ]) {
    assert.equal(parseOutcomePath(bad), undefined, bad);
  }
});

function outcomeUri(path: string): Uri {
  return Uri.from({ scheme: OUTCOME_SCHEME, path });
}

test('the outcome file system serves the stored artifact and review diff, read-only', async () => {
  const lookups: string[] = [];
  const files = new OutcomeFileSystem((id) => {
    lookups.push(id);
    return Promise.resolve(id === OUTCOME_ID ? view() : undefined);
  });
  const report = outcomeUri(artifactPath(OUTCOME_ID, { id: 'findings_html', name: 'Findings.html' }));
  const diff = outcomeUri(reviewPath(OUTCOME_ID, 'primary'));
  // An outcome not seen yet (a document restored after a reload) is asked for once.
  assert.equal(Buffer.from(await files.readFile(report as never)).toString('utf8'), REPORT);
  assert.equal(Buffer.from(await files.readFile(diff as never)).toString('utf8'), DIFF);
  assert.deepEqual(lookups, [OUTCOME_ID]);
  const stat = await files.stat(report as never);
  assert.equal(stat.type, FileType.File);
  assert.equal(stat.size, Buffer.byteLength(REPORT));
  assert.equal(stat.permissions, FilePermission.Readonly);

  for (const write of [
    () => files.writeFile(report as never),
    () => files.delete(report as never),
    () => files.rename(report as never),
    () => files.createDirectory(report as never),
  ]) {
    assert.throws(write, (error: unknown) => error instanceof FileSystemError && error.code === 'NoPermissions');
  }
  const missing = [
    outcomeUri(artifactPath(OUTCOME_ID, { id: 'other_file', name: 'x.txt' })),
    outcomeUri(reviewPath(OUTCOME_ID, 'docs')),
    outcomeUri(reviewPath('wbo_zzzzzzzzzzzzzzzzzzzzzzzz', 'primary')),
    outcomeUri('/elsewhere'),
  ];
  for (const uri of missing) {
    await assert.rejects(
      files.readFile(uri as never),
      (error: unknown) => error instanceof FileSystemError && error.code === 'FileNotFound',
      uri.path,
    );
  }
});

test('stored bytes that do not match their digest are refused', async () => {
  const current = view();
  const files = new OutcomeFileSystem(() => Promise.resolve(undefined));
  files.remember(current);
  const file = current.files.artifacts[0]?.file;
  assert.ok(file);
  writeFileSync(file, '<h1>Tampered</h1>\n');
  const report = outcomeUri(artifactPath(OUTCOME_ID, { id: 'findings_html', name: 'Findings.html' }));
  await assert.rejects(files.readFile(report as never), (error: unknown) => {
    assert.ok(error instanceof FileSystemError);
    assert.equal(error.code, 'Unavailable');
    assert.match(error.message, /does not match its digest sha256:/);
    return true;
  });
});
