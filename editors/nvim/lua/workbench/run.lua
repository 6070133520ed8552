-- Dry run, smoke and run of the current manifest (`workbench.dryRun`, `workbench.smoke`, `workbench.run`;
-- docs/lsp-extensions.md): the command's argument object, the one run in progress, its `workbench/runEvent`
-- notifications streamed into a scratch buffer, its ending, and :WorkbenchCancel. :WorkbenchAttach follows a run
-- started elsewhere (`workbench.attach`: its events replayed, then live) into the same kind of buffer.
-- :WorkbenchSession starts a session (`workbench.run` with `session`) and :WorkbenchSend runs its next turn
-- (`workbench.send`; docs/sessions.md), each turn's events in the session's buffer.

local format = require("workbench.ui.format")
local lsp = require("workbench.client")
local outcome = require("workbench.outcome")
local ui = require("workbench.ui")

local M = {}

-- The notification carrying each canonical event of a `workbench.run` (docs/lsp-extensions.md).
M.RUN_EVENT = "workbench/runEvent"

-- The plugin's `workbench/runEvent` handler fills :WorkbenchRun's buffer; a user handler of the same name
-- replaces it. It looks on_run_event up when called, so replacing that replaces the handler too.
lsp.handlers[M.RUN_EVENT] = function(...)
  return M.on_run_event(...)
end

local REQUEST_CANCELLED = -32800
local TERMINAL = { ["run.completed"] = "completed", ["run.failed"] = "failed", ["run.cancelled"] = "cancelled" }

-- The run in progress (one at a time): { client, request_id, token, bufnr, run_id, done }.
M.active_run = nil
-- Called with the run when a run or an attach of this editor ends (the runs buffer reads the list again).
M.on_run_end = nil
-- The buffer of the last dry run.
M.last_dry_run = nil
-- The session last started or sent a turn (its id): what :WorkbenchSend sends to.
M.last_session = nil
local runs_by_id = {}
local run_count = 0

-- The manifest of the current buffer, or nil (after saying so).
local function current_manifest(action)
  local bufnr = vim.api.nvim_get_current_buf()
  local path = vim.api.nvim_buf_get_name(bufnr)
  if not lsp.is_manifest(path) then
    ui.notify(("open a manifest (.workbenches/<name>/workbench.yml) to %s"):format(action), vim.log.levels.WARN)
    return nil
  end
  return vim.uri_from_bufnr(bufnr)
end

-- The task from the command's arguments, else asked for with vim.fn.input. Nil when there is none.
local function ask_task(task)
  if type(task) ~= "string" or vim.trim(task) == "" then
    local ok, answer = pcall(vim.fn.input, "Workbench task: ")
    task = ok and answer or ""
  end
  if vim.trim(task) == "" then
    ui.notify("a task is required", vim.log.levels.WARN)
    return nil
  end
  return task
end

-- The command's argument object: the manifest URI, the task and any other option given
-- (runtime, workspaces, env, envFiles, dir, allowHostDocker, allowUncheckedGpu).
local function arguments(uri, options)
  local argument = vim.tbl_extend("force", {}, options or {})
  argument.uri = uri
  return argument
end

local function options_of(options)
  if type(options) == "string" then
    return { task = options }
  end
  return vim.deepcopy(options or {})
end

--- `:WorkbenchDryRun {task}`: the translation the runner would receive, as JSON in a scratch buffer.
--- `options` is the task, or a table { task = ..., runtime = ..., env = { "NAME=value" }, ... }.
function M.dry_run(options)
  options = options_of(options)
  local uri = current_manifest("dry-run it")
  if not uri then
    return
  end
  options.task = ask_task(options.task)
  if not options.task then
    return
  end
  lsp.execute("workbench.dryRun", { arguments(uri, options) }, function(result)
    local bufnr = ui.scratch_buffer("dry-run", "json", false)
    ui.set_lines(bufnr, 0, -1, vim.split(format.json_pretty(result), "\n"))
    M.last_dry_run = bufnr
  end, nil, function(err)
    ui.notify("dry run failed: " .. format.error_message(err), vim.log.levels.ERROR)
  end)
end

--- `:WorkbenchSmoke`: can the package start here (runner, tools, authentication), without a model request?
function M.smoke(options)
  options = options_of(options)
  options.task = nil
  local uri = current_manifest("smoke it")
  if not uri then
    return
  end
  lsp.execute("workbench.smoke", { arguments(uri, options) }, function(result)
    local message, level = format.smoke_message(result)
    ui.notify(message, level)
  end, nil, function(err)
    ui.notify("smoke failed: " .. format.error_message(err), vim.log.levels.ERROR)
  end)
end

local function finish(run, message, level)
  if run.done then
    return
  end
  run.done = true
  if M.active_run == run then
    M.active_run = nil
  end
  if message then
    ui.notify(message, level)
  end
  if M.on_run_end then
    pcall(M.on_run_end, run)
  end
end

-- True (after saying so) when a run, attach or turn is in progress; one whose server stopped is let go of first.
local function busy()
  if M.active_run and M.active_run.client and not lsp.is_alive(M.active_run.client.id) then
    -- The server stopped during the run: nothing more will come of it.
    finish(M.active_run, nil)
  end
  if M.active_run then
    ui.notify("a run is in progress; :WorkbenchCancel cancels it", vim.log.levels.WARN)
    return true
  end
  return false
end

-- Gives a client this plugin did not configure (nvim-lspconfig) the event handler.
local function handle_events(client)
  if client.handlers and client.handlers[M.RUN_EVENT] == nil then
    client.handlers[M.RUN_EVENT] = M.on_run_event
  end
  require("workbench.asks").handle(client)
end

-- A client for the commands on runs, which belong to the user, not to a repository (nil after saying so).
local function runs_client()
  local client = lsp.any_client()
  if not client then
    ui.notify("no wb-lsp client is running: open a manifest first", vim.log.levels.WARN)
    return nil
  end
  handle_events(client)
  return client
end

--- The runs client when no run is in progress (else nil, after saying which).
local function idle_runs_client()
  if busy() then
    return nil
  end
  return runs_client()
end

-- A new run in progress writing to `bufnr` (its events; `run_id` when known) with a progress token of its own.
local function new_run(bufnr, run_id)
  run_count = run_count + 1
  local run = { token = ("workbench-run-%d"):format(run_count), bufnr = bufnr, done = false, run_id = run_id }
  if run_id then
    -- Its events go to this buffer (a buffer of an earlier follower of the run gets no more).
    runs_by_id[run_id] = run
  end
  M.active_run = run
  return run
end

-- Sends `command` with `argument` for `run` (from `request_buffer`) under its progress token. `on_result` gets the
-- answer; a failure other than the answer to a cancel ends the run with `failure(err)`, said in its buffer too.
-- Returns the run's buffer, or nil when nothing was sent.
local function follow(client, request_buffer, run, command, argument, on_result, failure)
  local sent, request_id = lsp.execute_on(client, request_buffer, command, { argument }, on_result, {
    workDoneToken = run.token,
  }, function(err)
    if err.code == REQUEST_CANCELLED then
      -- The answer to :WorkbenchCancel's $/cancelRequest: the run's own events end it.
      return
    end
    local message = failure(err)
    ui.append(run.bufnr, { "■ " .. message })
    finish(run, message, vim.log.levels.ERROR)
  end)
  if not sent then
    M.active_run = nil
    return nil
  end
  run.client, run.request_id = sent, request_id
  lsp.last_run_client = sent.id
  return run.bufnr
end

-- A run's answer (`workbench.run`, `workbench.attach`): its ending, and its outcome announced.
local function run_ended(run, result)
  local ending = type(result.ending) == "table" and result.ending or {}
  finish(run, format.run_ending(ending.status or "failed", ending.message))
  if outcome.is_outcome_id(result.outcomeId) then
    outcome.last_outcome_id = result.outcomeId
    outcome.announce_outcome(run.client, result.outcomeId)
  end
end

--- The handler of `workbench/runEvent`: appends the event's lines to its run's buffer.
function M.on_run_event(err, result, ctx)
  if err or type(result) ~= "table" or type(result.event) ~= "table" then
    return
  end
  local event = result.event
  local run = runs_by_id[event.run_id]
  local active = M.active_run
  local same_client = active and active.client and (not ctx or ctx.client_id == active.client.id)
  if not run and same_client and not active.run_id then
    -- The first event of the run just started tells its id.
    active.run_id = event.run_id
    runs_by_id[event.run_id] = active
    run = active
  end
  if not run then
    return
  end
  if
    event.type == "outcome.available"
    and type(event.data) == "table"
    and outcome.is_outcome_id(event.data.outcome_id)
  then
    -- Also known when the run's answer is lost (a cancelled request): the outcome commands default to it.
    outcome.last_outcome_id = event.data.outcome_id
  end
  -- The server's lines for the event (none for events without meaning for a reader).
  ui.append(run.bufnr, format.lines(result.text))
  local status = TERMINAL[event.type]
  if status then
    finish(run, format.run_ending(status, event.type == "run.failed" and event.data and event.data.message))
  end
end

-- The message for a turn's answer (`workbench.run` with `session`, `workbench.send`) and its level.
local function turn_message(result)
  local status = format.text(result.status) or "failed"
  if status == "ended" then
    return ("session %s ended before it took the turn"):format(tostring(result.runId)), vim.log.levels.WARN
  end
  local message = ("turn %s %s"):format(tostring(result.turnIndex), status)
  if outcome.is_outcome_id(result.snapshotId) then
    message = message .. " · snapshot " .. result.snapshotId
  end
  if status == "completed" then
    return message .. " · :WorkbenchSend {task} takes the next turn", vim.log.levels.INFO
  end
  return message, vim.log.levels.WARN
end

--- `:WorkbenchRun {task}`: runs the Workbench, streaming its events into a scratch buffer.
--- `options` is the task, or a table { task = ..., runtime = ..., env = { "NAME=value" }, ... }.
--- Returns the run's buffer.
function M.run(options)
  options = options_of(options)
  if busy() then
    return nil
  end
  local uri = current_manifest("run it")
  if not uri then
    return nil
  end
  options.task = ask_task(options.task)
  if not options.task then
    return nil
  end
  local manifest_buffer = vim.api.nvim_get_current_buf()
  local manifest_client = lsp.attached_client(manifest_buffer)
  if not manifest_client then
    return nil
  end
  handle_events(manifest_client)
  local bufnr = ui.scratch_buffer("run", "workbench-run", true)
  ui.append(bufnr, { ("── %s: %s"):format(vim.uri_to_fname(uri), options.task) })
  local run = new_run(bufnr)
  return follow(manifest_client, manifest_buffer, run, "workbench.run", arguments(uri, options), function(result)
    if options.session then
      -- A session answers when its first turn has ended; it waits for :WorkbenchSend.
      M.last_session = run.run_id or result.runId
      finish(run, turn_message(result))
      return
    end
    run_ended(run, result)
  end, function(err)
    -- Refused before it started (no event came), or interrupted.
    local what = run.run_id and "the run stopped: " or "the run could not start: "
    return what .. format.error_message(err)
  end)
end

--- `:WorkbenchSession {task}`: starts a session of the current Workbench on a task (its first turn), streaming its
--- events into a scratch buffer; :WorkbenchSend runs the next turns there. Returns the session's buffer.
function M.session(options)
  options = options_of(options)
  options.session = true
  return M.run(options)
end

--- `:WorkbenchSend {task}`: the next turn of a session (`workbench.send`): the last one started or sent to, or
--- `options.id`. Its events go to the session's buffer (a new one when that is gone). `options` is the task, or a
--- table { id = ..., task = ... }. Returns the buffer.
function M.send(options)
  options = options_of(options)
  local id = options.id or M.last_session
  if not M.is_run_id(id) then
    ui.notify("no session: :WorkbenchSession {task} starts one (or :WorkbenchRuns, s on a session)", vim.log.levels.WARN)
    return nil
  end
  local client = idle_runs_client()
  local task = client and ask_task(options.task)
  if not task then
    return nil
  end
  local previous = runs_by_id[id]
  local bufnr = previous and vim.api.nvim_buf_is_valid(previous.bufnr) and previous.bufnr
    or ui.scratch_buffer("run", "workbench-run", true)
  ui.append(bufnr, { ("── %s: %s"):format(id, task) })
  local turn = new_run(bufnr, id)
  return follow(client, bufnr, turn, "workbench.send", { runId = id, task = task }, function(result)
    M.last_session = id
    finish(turn, turn_message(result))
  end, function(err)
    return ("cannot send session %s its turn: %s"):format(id, format.error_message(err))
  end)
end

--- True for a run id (`wb_` and 24 lowercase hex digits).
function M.is_run_id(value)
  return type(value) == "string" and #value == 27 and value:match("^wb_%x+$") ~= nil and value == value:lower()
end

--- `:WorkbenchAttach {run}`: replays a run's events from its first, then follows it to its end
--- (`workbench.attach`), into a run buffer as :WorkbenchRun shows a run; :WorkbenchCancel cancels the run. Works
--- from any buffer (runs belong to the user, not to a repository). `description` (the package) goes in the
--- header. Returns the run's buffer.
function M.attach(run_id, description)
  run_id = type(run_id) == "string" and vim.trim(run_id) or ""
  if not M.is_run_id(run_id) then
    ui.notify(("not a run id: %s (wb_…; :WorkbenchRuns lists them)"):format(run_id), vim.log.levels.WARN)
    return nil
  end
  local client = idle_runs_client()
  if not client then
    return nil
  end
  local bufnr = ui.scratch_buffer("run", "workbench-run", true)
  local header = ("── attached to %s"):format(run_id)
  if format.text(description) then
    header = header .. ": " .. description
  end
  ui.append(bufnr, { header })
  local run = new_run(bufnr, run_id)
  return follow(client, bufnr, run, "workbench.attach", { runId = run_id }, function(result)
    run_ended(run, result)
  end, function(err)
    return "cannot follow run " .. run_id .. ": " .. format.error_message(err)
  end)
end

--- `:WorkbenchCancel`: cancels the run in progress: `$/cancelRequest` for its request (client.cancel_request)
--- and `window/workDoneProgress/cancel` for its progress token. The run ends with `run.cancelled`.
function M.cancel()
  local run = M.active_run
  if not run or not run.client then
    ui.notify("no run is in progress")
    return false
  end
  if run.cancelling then
    return true
  end
  run.cancelling = true
  ui.append(run.bufnr, { "  cancelling…" })
  lsp.send_notification(run.client, "window/workDoneProgress/cancel", { token = run.token })
  lsp.cancel_request(run.client, run.request_id)
  return true
end

return M
