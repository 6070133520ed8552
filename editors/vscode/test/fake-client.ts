/** A language client for the controller's tests: answers from a table, reports states like vscode-languageclient. */
import type * as vscode from 'vscode';
import type { ClientSetup, RequestOptions, ServerClient, WorkDoneProgressValue } from '../src/controller';
import type { InputRequestedParams, InputResolvedParams } from '../src/asks';
import type { RunEventParams } from '../src/run';
import type { ServerStatus } from '../src/status';
import { EventEmitter } from './vscode-stub';

/** An answer computed when the request arrives (for a run: stream events, wait for a cancellation, ...). */
export type Answer = (args: unknown[], options: RequestOptions | undefined, client: FakeClient) => Promise<unknown>;

export interface Behaviour {
  startError?: Error;
  /** Per command: a value, an Error (the request fails) or an Answer. */
  answers: Record<string, unknown>;
}

export class FakeClient implements ServerClient {
  readonly requests: Array<{ command: string; args: unknown[] }> = [];
  /** The options each request was sent with, in order. */
  readonly requestOptions: Array<RequestOptions | undefined> = [];
  readonly statuses = new EventEmitter<ServerStatus>();
  readonly runEvents = new EventEmitter<RunEventParams>();
  readonly inputRequests = new EventEmitter<InputRequestedParams>();
  readonly inputResolutions = new EventEmitter<InputResolvedParams>();
  readonly progress = new Map<string, EventEmitter<WorkDoneProgressValue>>();
  /** The tokens `window/workDoneProgress/cancel` was sent for. */
  readonly cancelledProgress: string[] = [];
  /** The requests other than `workbench.runs` and `workbench.trials`, the Runs view's readings (test/runs.test.ts
   * checks those). */
  get sent(): Array<{ command: string; args: unknown[] }> {
    return this.requests.filter((request) => request.command !== 'workbench.runs' && request.command !== 'workbench.trials');
  }
  started = 0;
  stopped = 0;
  disposed = 0;
  constructor(
    readonly setup: ClientSetup,
    private readonly behaviour: Behaviour,
  ) {}
  async start(): Promise<void> {
    this.statuses.fire({ state: 'starting' });
    await Promise.resolve();
    if (this.behaviour.startError !== undefined) {
      this.statuses.fire({ state: 'stopped' });
      throw this.behaviour.startError;
    }
    this.started += 1;
    this.statuses.fire({ state: 'running', version: '0.1.0' });
  }
  async stop(): Promise<void> {
    this.stopped += 1;
    this.statuses.fire({ state: 'stopped' });
    return Promise.resolve();
  }
  /** The server process died and the client gave up restarting it. */
  crash(): void {
    this.statuses.fire({ state: 'stopped' });
  }
  executeCommand(command: string, args: unknown[], options?: RequestOptions): Promise<unknown> {
    this.requests.push({ command, args });
    this.requestOptions.push(options);
    const answer = this.behaviour.answers[command];
    if (typeof answer === 'function') {
      return (answer as Answer)(args, options, this);
    }
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
  }
  onRunEvent(listener: (params: RunEventParams) => void): vscode.Disposable {
    return this.runEvents.event(listener);
  }
  onInputRequested(listener: (params: InputRequestedParams) => void): vscode.Disposable {
    return this.inputRequests.event(listener);
  }
  onInputResolved(listener: (params: InputResolvedParams) => void): vscode.Disposable {
    return this.inputResolutions.event(listener);
  }
  onWorkDoneProgress(token: string, listener: (value: WorkDoneProgressValue) => void): vscode.Disposable {
    let emitter = this.progress.get(token);
    if (emitter === undefined) {
      emitter = new EventEmitter<WorkDoneProgressValue>();
      this.progress.set(token, emitter);
    }
    return emitter.event(listener);
  }
  cancelWorkDoneProgress(token: string): void {
    this.cancelledProgress.push(token);
  }
  /** The server reports `$/progress` on a token. */
  reportProgress(token: string, value: WorkDoneProgressValue): void {
    this.progress.get(token)?.fire(value);
  }
  onDidChangeStatus(listener: (status: ServerStatus) => void): vscode.Disposable {
    return this.statuses.event(listener);
  }
  dispose(): Promise<void> {
    this.disposed += 1;
    return Promise.resolve();
  }
}
