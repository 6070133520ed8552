/** Which files belong to a Workbench package, by path alone (no file system access). */

function segments(fsPath: string): string[] {
  return fsPath.split(/[\\/]+/).filter((segment) => segment.length > 0);
}

/** True for `.../.workbenches/<name>/workbench.yml`. */
export function isManifestPath(fsPath: string): boolean {
  const parts = segments(fsPath);
  const n = parts.length;
  return n >= 3 && parts[n - 1] === 'workbench.yml' && parts[n - 3] === '.workbenches';
}

/** True for `.../.workbenches/<name>/skills/<skill>/SKILL.md`. */
export function isSkillPath(fsPath: string): boolean {
  const parts = segments(fsPath);
  const n = parts.length;
  return n >= 5 && parts[n - 1] === 'SKILL.md' && parts[n - 3] === 'skills' && parts[n - 5] === '.workbenches';
}

/** True for `.../.workbenches/<name>/trials/<id>/task.json`. */
export function isTrialTaskPath(fsPath: string): boolean {
  const parts = segments(fsPath);
  const n = parts.length;
  return n >= 5 && parts[n - 1] === 'task.json' && parts[n - 3] === 'trials' && parts[n - 5] === '.workbenches';
}

/** True for any file the language server wants to see opened: manifests, skill files and trial tasks. */
export function isWorkbenchFile(fsPath: string): boolean {
  return isManifestPath(fsPath) || isSkillPath(fsPath) || isTrialTaskPath(fsPath);
}
