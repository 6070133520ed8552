/**
 * Reading the extension's settings. They live under `wb-lsp.*` (the extension's own namespace); in 0.1.0 they
 * were `workbench.*`, the namespace VS Code uses for its own window settings. The old keys are no longer
 * contributed, but VS Code still returns what users wrote for them, so each setting is read as: the new key when
 * it is set in any scope (folder, workspace, user), else the old key when it is, else the new key's default.
 * The server path ([`MACHINE_KEYS`]) is read from the user's settings only, under either key.
 */

import * as vscode from 'vscode';
import { LEGACY_SETTINGS_SECTION, SETTINGS_SECTION } from './constants';

/** Every setting, as the key after the section. */
export const SETTING_KEYS = [
  'server.path',
  'trace.server',
  'modelCatalog',
  'severity',
  'runTimeWarnings',
  'inlayHints',
  'format',
] as const;
export type SettingKey = (typeof SETTING_KEYS)[number];

/** `wb-lsp.server.path`. */
export function settingName(key: SettingKey): string {
  return `${SETTINGS_SECTION}.${key}`;
}

/** `workbench.server.path`. */
export function legacySettingName(key: SettingKey): string {
  return `${LEGACY_SETTINGS_SECTION}.${key}`;
}

/** What `WorkspaceConfiguration.inspect()` returns, as far as it is read here. */
export interface Inspection<T = unknown> {
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

/**
 * Settings read from the user's settings only (`"scope": "machine"` in package.json): the program the extension
 * starts must never come from a workspace's `.vscode/settings.json`, under the new key or the old one (which is
 * no longer contributed, so VS Code would return a workspace's value for it).
 */
export const MACHINE_KEYS: readonly SettingKey[] = ['server.path'];

/**
 * The value written in the most specific scope (folder, then workspace, then user), or undefined; with
 * `machine`, only the user's value.
 */
export function writtenValue<T>(inspection: Inspection<T> | undefined, machine = false): T | undefined {
  if (inspection === undefined) {
    return undefined;
  }
  const scopes = machine
    ? [inspection.globalValue]
    : [inspection.workspaceFolderValue, inspection.workspaceValue, inspection.globalValue];
  for (const value of scopes) {
    if (value !== undefined) {
      return value;
    }
  }
  return undefined;
}

export interface SettingValue<T = unknown> {
  /** The value in effect: written under the new key, else under the old one, else the default. */
  readonly value: T | undefined;
  /** The full key it came from: `wb-lsp.severity` (also for the default) or `workbench.severity`. */
  readonly name: string;
  readonly origin: 'setting' | 'legacy' | 'default';
}

/** Picks a setting's value from the inspections of its new and its old key. */
export function chooseSetting<T>(
  key: SettingKey,
  current: Inspection<T> | undefined,
  legacy: Inspection<T> | undefined,
): SettingValue<T> {
  const machine = MACHINE_KEYS.includes(key);
  const written = writtenValue(current, machine);
  if (written !== undefined) {
    return { value: written, name: settingName(key), origin: 'setting' };
  }
  const old = writtenValue(legacy, machine);
  if (old !== undefined) {
    return { value: old, name: legacySettingName(key), origin: 'legacy' };
  }
  return { value: current?.defaultValue, name: settingName(key), origin: 'default' };
}

/** The old keys a user still has: in use (the new key is not set), or ignored (the new key is set too). */
export interface LegacyUsage {
  readonly used: readonly SettingKey[];
  readonly ignored: readonly SettingKey[];
}

/** The scope resource-scoped settings are read for: the first workspace folder, if any. */
function defaultScope(): vscode.Uri | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri;
}

function inspect<T>(section: string, key: SettingKey, scope: vscode.Uri | undefined): Inspection<T> | undefined {
  return vscode.workspace.getConfiguration(section, scope).inspect<T>(key);
}

/** Reads one setting (new key, else old key, else default), for the first workspace folder unless told. */
export function readSetting<T>(key: SettingKey, scope: vscode.Uri | undefined = defaultScope()): SettingValue<T> {
  return chooseSetting(
    key,
    inspect<T>(SETTINGS_SECTION, key, scope),
    inspect<T>(LEGACY_SETTINGS_SECTION, key, scope),
  );
}

/** Which old `workbench.*` keys are written somewhere. */
export function legacyUsage(scope: vscode.Uri | undefined = defaultScope()): LegacyUsage {
  const used: SettingKey[] = [];
  const ignored: SettingKey[] = [];
  for (const key of SETTING_KEYS) {
    const machine = MACHINE_KEYS.includes(key);
    if (writtenValue(inspect(LEGACY_SETTINGS_SECTION, key, scope), machine) === undefined) {
      continue;
    }
    (writtenValue(inspect(SETTINGS_SECTION, key, scope), machine) === undefined ? used : ignored).push(key);
  }
  return { used, ignored };
}

/** The `globalState` key remembering that the notice about the moved settings was shown on this machine. */
export const MOVED_NOTICE_STATE = 'wb-lsp.settingsMovedNoticeShown';
/** The notice's button: opens the Settings UI on the extension's settings. */
export const BUTTON_OPEN_SETTINGS = 'Open Settings';

/** "Workbench settings moved to wb-lsp.*: workbench.server.path → wb-lsp.server.path. The old keys still work." */
export function movedNotice(used: readonly SettingKey[]): string {
  const renames = used.map((key) => `${legacySettingName(key)} → ${settingName(key)}`).join(', ');
  return `Workbench settings moved to ${SETTINGS_SECTION}.*: ${renames}. The old keys still work.`;
}

/** The output channel's lines about old keys, written at every start. */
export function legacyLines(usage: LegacyUsage): string[] {
  return [
    ...usage.used.map(
      (key) =>
        `The old setting ${legacySettingName(key)} is in use: rename it to ${settingName(key)} (the old key still works).`,
    ),
    ...usage.ignored.map(
      (key) => `The old setting ${legacySettingName(key)} is ignored: ${settingName(key)} is set, and wins.`,
    ),
  ];
}

/** Every full key, new and old, of the given settings (for `affectsConfiguration`). */
export function allNames(keys: readonly SettingKey[] = SETTING_KEYS): string[] {
  return keys.flatMap((key) => [settingName(key), legacySettingName(key)]);
}
