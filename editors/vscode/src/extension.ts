/** Entry point: VS Code calls activate() on the activation events of package.json. */

import * as fs from 'node:fs';
import * as os from 'node:os';
import type * as vscode from 'vscode';
import { createLanguageClient } from './client';
import { WorkbenchController } from './controller';

let controller: WorkbenchController | undefined;

/** True for a regular file that may be executed (on Windows: any regular file; PATHEXT picks the names). */
export function isExecutableFile(file: string): boolean {
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile()) {
      return false;
    }
    if (process.platform === 'win32') {
      return true;
    }
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  controller = new WorkbenchController(createLanguageClient, {
    platform: process.platform,
    env: process.env,
    homedir: os.homedir(),
    isExecutable: isExecutableFile,
  });
  await controller.activate(context);
}

export async function deactivate(): Promise<void> {
  const current = controller;
  controller = undefined;
  await current?.dispose();
}
