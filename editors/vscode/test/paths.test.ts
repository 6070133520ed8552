import './register';
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { isManifestPath, isSkillPath, isTrialTaskPath, isWorkbenchFile } from '../src/paths';

test('manifests are .workbenches/<name>/workbench.yml, on any platform', () => {
  assert.ok(isManifestPath('/repo/.workbenches/demo/workbench.yml'));
  assert.ok(isManifestPath('.workbenches/demo/workbench.yml'));
  assert.ok(isManifestPath('C:\\repo\\.workbenches\\demo\\workbench.yml'));
  assert.ok(!isManifestPath('/repo/workbench.yml'));
  assert.ok(!isManifestPath('/repo/.workbenches/workbench.yml'));
  assert.ok(!isManifestPath('/repo/.workbenches/demo/nested/workbench.yml'));
  assert.ok(!isManifestPath('/repo/.workbenches/demo/workbench.yaml'));
  assert.ok(!isManifestPath('/repo/workbenches/demo/workbench.yml'));
});

test('skill files are .workbenches/<name>/skills/<skill>/SKILL.md', () => {
  assert.ok(isSkillPath('/repo/.workbenches/demo/skills/lint/SKILL.md'));
  assert.ok(isSkillPath('C:\\r\\.workbenches\\demo\\skills\\lint\\SKILL.md'));
  assert.ok(!isSkillPath('/repo/.workbenches/demo/skills/SKILL.md'));
  assert.ok(!isSkillPath('/repo/.workbenches/demo/skills/lint/README.md'));
  assert.ok(!isSkillPath('/repo/docs/skills/lint/SKILL.md'));
  assert.ok(isWorkbenchFile('/repo/.workbenches/demo/skills/lint/SKILL.md'));
  assert.ok(isWorkbenchFile('/repo/.workbenches/demo/workbench.yml'));
  assert.ok(!isWorkbenchFile('/repo/.github/workflows/ci.yml'));
});

test('trial tasks are .workbenches/<name>/trials/<id>/task.json', () => {
  assert.ok(isTrialTaskPath('/repo/.workbenches/demo/trials/fix-bug/task.json'));
  assert.ok(isWorkbenchFile('/repo/.workbenches/demo/trials/fix-bug/task.json'));
  assert.ok(!isTrialTaskPath('/repo/.workbenches/demo/trials/task.json'));
  assert.ok(!isTrialTaskPath('/repo/trials/fix-bug/task.json'));
});
