/** Makes `require('vscode')` load test/vscode-stub.ts. Import this first in every test file. */
import Module = require('node:module');

interface ModuleInternals {
  _resolveFilename(request: string, ...rest: unknown[]): string;
}

const internals = Module as unknown as ModuleInternals;
const stubPath = require.resolve('./vscode-stub');
const resolveFilename = internals._resolveFilename;
internals._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]): string {
  return request === 'vscode' ? stubPath : resolveFilename.call(this, request, ...rest);
};
