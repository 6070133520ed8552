// An ACP client for crates/wb-lsp/tests/acp.rs, built on the official SDK (@agentclientprotocol/sdk, installed
// by scripts/install-sdks.sh into the directory WB_SDK_MODULES names). It starts the agent given on its command
// line, initializes, opens a session in ACP_CWD and runs the prompts in ACP_STEPS (a JSON array):
//   {"prompt": "text", "answers": ["allow_once", ...]}  the permission requests of the turn are answered, in
//                                                         order, with the option of that kind ("cancelled" and
//                                                         requests past the list are answered cancelled);
//   {"prompt": "text", "cancel": true}                    session/cancel after the turn's first update (a
//                                                         pending permission request is answered cancelled).
// It prints one JSON line: {initialize, session, turns: [{updates, permissions, stopReason | error}],
// schemaErrors, protocolErrors}. Every message the agent sends is checked against the SDK's own schemas.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const modules = process.env.WB_SDK_MODULES;
const sdk = join(modules ?? "", "@agentclientprotocol/sdk/dist/v1");
const acp = await import(pathToFileURL(join(sdk, "stable/acp.js")).href);
const schema = await import(pathToFileURL(join(sdk, "schema/zod.gen.js")).href);

const steps = JSON.parse(process.env.ACP_STEPS ?? "[]");
const out = { turns: [], schemaErrors: [], protocolErrors: [] };
const deadline = setTimeout(() => finish(1, "the driver's deadline passed"), Number(process.env.ACP_TIMEOUT_MS ?? 120000));

function finish(code, error) {
  clearTimeout(deadline);
  if (error) out.error = String(error?.stack ?? error);
  process.stdout.write(JSON.stringify(out) + "\n");
  child.kill("SIGTERM");
  process.exit(code);
}

function check(name, value, where) {
  const parsed = schema[name]?.safeParse(value);
  if (parsed && !parsed.success) {
    out.schemaErrors.push({ where, issues: parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`) });
  }
}

const [command, ...args] = process.argv.slice(2);
const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
child.on("exit", (code, signal) => {
  if (!out.closing) finish(1, `the agent exited (${code ?? signal}) before the driver was done`);
});

let turn = null;
const base = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
// Every update is seen here, before the SDK checks it (an update it finds invalid it drops).
const stream = {
  writable: base.writable,
  readable: base.readable.pipeThrough(
    new TransformStream({
      transform(message, controller) {
        if (message?.jsonrpc !== "2.0") out.protocolErrors.push({ message });
        if (message?.method === "session/update") {
          check("zSessionNotification", message.params, "session/update");
          if (!turn || turn.done) out.protocolErrors.push({ late: message.params });
          else {
            turn.updates.push(message.params.update);
            turn.onUpdate?.();
          }
        }
        controller.enqueue(message);
      },
    }),
  ),
};

const app = acp
  .client({ name: "wb-lsp-acp-test" })
  .onNotification("session/update", (p) => p, () => {})
  .onRequest("session/request_permission", (p) => p, async ({ params }) => {
    check("zRequestPermissionRequest", params, "session/request_permission");
    const record = { request: params, chosen: "cancelled" };
    turn?.permissions.push(record);
    const cancelled = { outcome: { outcome: "cancelled" } };
    if (!turn || turn.cancelled) return cancelled;
    if (turn.step.cancel) {
      // The dialog stays open until the cancel, which answers it "cancelled" (the protocol's rule).
      return await new Promise((resolve) => {
        turn.pending.push(() => resolve(cancelled));
        turn.onUpdate?.();
      });
    }
    const kind = (turn.step.answers ?? [])[turn.answered++] ?? "cancelled";
    const option = params.options.find((o) => o.kind === kind);
    if (!option) return cancelled;
    record.chosen = option.optionId;
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest("*", ({ method }) => {
    out.protocolErrors.push({ unexpectedRequest: method });
    throw acp.RequestError.methodNotFound(method);
  });

async function run(ctx) {
  out.initialize = await ctx.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "wb-lsp-acp-test", version: "1" },
  });
  check("zInitializeResponse", out.initialize, "initialize");
  out.session = await ctx.request("session/new", { cwd: process.env.ACP_CWD, mcpServers: [] });
  check("zNewSessionResponse", out.session, "session/new");
  const sessionId = out.session.sessionId;
  for (const step of steps) {
    turn = { step, updates: [], permissions: [], pending: [], answered: 0, cancelled: false, done: false };
    if (step.cancel) {
      turn.onUpdate = () => {
        if (turn.cancelled) return;
        turn.cancelled = true;
        ctx.notify("session/cancel", { sessionId }).then(() => turn.pending.forEach((resolve) => resolve()));
      };
    }
    const record = { updates: turn.updates, permissions: turn.permissions };
    try {
      const response = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: step.prompt }] });
      check("zPromptResponse", response, "session/prompt");
      record.stopReason = response.stopReason;
    } catch (error) {
      record.error = error?.message ?? String(error);
    }
    // Late updates (after the response) would be protocol errors: give them a moment to show.
    await new Promise((resolve) => setTimeout(resolve, 300));
    turn.done = true;
    out.turns.push(record);
  }
}

app
  .connectWith(stream, run)
  .then(() => {
    out.closing = true;
    finish(0);
  })
  .catch((error) => {
    out.closing = true;
    finish(1, error);
  });
