-- Neovim client for wb-lsp, the language server for Workbench manifests (.workbenches/<name>/workbench.yml).
--
-- Works on Neovim 0.7 and later, with one client per repository root (the directory holding `.workbenches`).
-- Before 0.10 it starts the server with vim.lsp.start_client and attaches buffers with
-- vim.lsp.buf_attach_client (0.7 has no vim.lsp.start); from 0.10 it uses vim.lsp.start, as start_client is
-- deprecated from 0.11. When nvim-lspconfig is installed a `workbench` config is registered with it too.

local M = {}

M.name = "workbench"

-- The Lua pattern of a manifest path, capturing the repository root.
local MANIFEST = "^(.*)/%.workbenches/[^/]+/workbench%.yml$"
-- The autocmd pattern of a manifest path.
M.pattern = "*/.workbenches/*/workbench.yml"

local defaults = {
  -- The server command: `wb-lsp` speaks LSP over stdio with no arguments or with `serve`.
  cmd = { "wb-lsp", "serve" },
  -- Settings of the `workbench` section: modelCatalog, severity, runTimeWarnings. Either the section itself
  -- ({ runTimeWarnings = false }) or wrapped ({ workbench = { runTimeWarnings = false } }).
  settings = {},
  -- The filetype given to manifests: a compound filetype keeps YAML syntax and indentation. Set to false to
  -- leave the filetype alone.
  filetype = "yaml.workbench",
  -- Extra client capabilities merged over Neovim's (for example from cmp-nvim-lsp).
  capabilities = nil,
  -- Called as on_attach(client, bufnr) for every attached manifest buffer.
  on_attach = nil,
  -- Extra handlers passed to the client (the plugin adds its own for `workbench/runEvent`).
  handlers = nil,
  -- Start the server automatically when a manifest is opened.
  autostart = true,
  -- Register a `workbench` config with nvim-lspconfig when it is installed.
  lspconfig = true,
}

M.config = vim.deepcopy(defaults)

-- Client ids started by this plugin, per repository root.
local clients = {}

local function notify(message, level)
  vim.notify("[workbench] " .. message, level or vim.log.levels.INFO)
end

--- The repository root of a manifest path (the directory containing `.workbenches`), or nil.
function M.root_dir(path)
  if type(path) ~= "string" or path == "" then
    return nil
  end
  return path:match(MANIFEST)
end

--- True when the path is a Workbench manifest.
function M.is_manifest(path)
  return M.root_dir(path) ~= nil
end

local function section(settings)
  settings = settings or {}
  if settings.workbench ~= nil then
    return settings.workbench
  end
  return settings
end

local function buffer_clients(bufnr)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ bufnr = bufnr })
  end
  local list = {}
  for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
    table.insert(list, client)
  end
  return list
end

--- The workbench client attached to a buffer (0 for the current one), or nil.
function M.client(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  for _, client in ipairs(buffer_clients(bufnr)) do
    if client.name == M.name then
      return client
    end
  end
  return nil
end

-- Client methods are called with `:` from Neovim 0.11 (`.` is deprecated there) and with `.` before.
local method_calls = vim.fn.has("nvim-0.11") == 1

local function client_request(client, method, params, handler, bufnr)
  if method_calls then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

local function client_notify(client, method, params)
  if method_calls then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

local function client_cancel(client, id)
  if method_calls then
    return client:cancel_request(id)
  end
  return client.cancel_request(id)
end

local function client_alive(id)
  local client = id and vim.lsp.get_client_by_id(id)
  if client == nil then
    return false
  end
  if method_calls then
    return not client:is_stopped()
  end
  return not client.is_stopped()
end

-- The notification carrying each canonical event of a `workbench.run` (docs/lsp-extensions.md).
M.RUN_EVENT = "workbench/runEvent"

local function client_handlers()
  -- The plugin's `workbench/runEvent` handler fills :WorkbenchRun's buffer; a user handler of the same name
  -- replaces it.
  return vim.tbl_extend("force", { [M.RUN_EVENT] = function(...)
    return M.on_run_event(...)
  end }, M.config.handlers or {})
end

--- The client configuration for a repository root (also what the lspconfig registration uses).
function M.client_config(root)
  local config = M.config
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  if config.capabilities then
    capabilities = vim.tbl_deep_extend("force", capabilities, config.capabilities)
  end
  local settings = section(config.settings)
  return {
    name = M.name,
    cmd = config.cmd,
    root_dir = root,
    workspace_folders = root and { { uri = vim.uri_from_fname(root), name = root } } or nil,
    capabilities = capabilities,
    -- Answered to the server's workspace/configuration request for the `workbench` section.
    settings = { workbench = settings },
    init_options = settings,
    handlers = client_handlers(),
    on_attach = config.on_attach,
  }
end

--- Starts (or reuses) the client of the buffer's repository and attaches the buffer. Returns the client id.
function M.attach(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  local path = vim.api.nvim_buf_get_name(bufnr)
  local root = M.root_dir(path)
  if not root then
    return nil
  end
  local existing = M.client(bufnr)
  if existing then
    -- Already attached, by this plugin or by an nvim-lspconfig setup.
    return existing.id
  end
  if vim.fn.executable(M.config.cmd[1]) ~= 1 then
    notify(
      ("cannot start the language server: `%s` is not executable. Install wb-lsp or set cmd in setup()."):format(
        M.config.cmd[1]
      ),
      vim.log.levels.ERROR
    )
    return nil
  end
  -- vim.lsp.start (0.8+, with a bufnr option from 0.10) reuses the client of the same name and root.
  -- vim.lsp.start_client is what Neovim 0.7 has (it is deprecated from 0.11).
  if vim.fn.has("nvim-0.10") == 1 then
    local started = vim.lsp.start(M.client_config(root), { bufnr = bufnr })
    if not started then
      notify("cannot start " .. table.concat(M.config.cmd, " "), vim.log.levels.ERROR)
    end
    return started
  end
  local id = clients[root]
  if not client_alive(id) then
    id = vim.lsp.start_client(M.client_config(root))
    if not id then
      notify("cannot start " .. table.concat(M.config.cmd, " "), vim.log.levels.ERROR)
      return nil
    end
    clients[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
  return id
end

local function on_manifest(args)
  local bufnr = args.buf
  if M.config.filetype and vim.bo[bufnr].filetype ~= M.config.filetype then
    vim.bo[bufnr].filetype = M.config.filetype
  end
  if M.config.autostart then
    M.attach(bufnr)
  end
end

local execute_on

-- Sends workspace/executeCommand from the current buffer's client. `on_result(result)` gets the answer;
-- `on_error(err)` (default: a notification) an error. Returns the client and the request id, or nil.
local function execute(command, arguments, on_result, extra, on_error)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if not client then
    notify("no wb-lsp client is attached to this buffer", vim.log.levels.WARN)
    return nil
  end
  return execute_on(client, bufnr, command, arguments, on_result, extra, on_error)
end

-- The same as execute(), on a given client (`bufnr` only goes to the handler's context).
execute_on = function(client, bufnr, command, arguments, on_result, extra, on_error)
  local params = vim.tbl_extend("force", extra or {}, { command = command, arguments = arguments })
  local ok, request_id = client_request(client, "workspace/executeCommand", params, function(err, result)
    if err then
      if on_error then
        on_error(err)
      else
        notify(("%s failed: %s"):format(command, err.message or vim.inspect(err)), vim.log.levels.ERROR)
      end
      return
    end
    on_result(result or {})
  end, bufnr)
  if not ok then
    notify(("cannot send %s: the server is not running"):format(command), vim.log.levels.ERROR)
    return nil
  end
  return client, request_id
end

--- Migrates the current manifest to spec 1 (workspace/executeCommand `workbench.migrate`); the server sends the
--- edit back as workspace/applyEdit, which Neovim applies to the buffer.
function M.migrate()
  local uri = vim.uri_from_bufnr(vim.api.nvim_get_current_buf())
  execute("workbench.migrate", { uri }, function(result)
    if result.migrated then
      notify("migrated to spec 1")
    else
      notify("nothing to migrate: the manifest is already on spec 1")
    end
  end)
end

--- Re-scans the workspace and re-checks every package (`workbench.checkWorkspace`).
function M.check_workspace()
  execute("workbench.checkWorkspace", {}, function(result)
    notify(("checking %s package(s)"):format(tostring(result.packages or 0)))
  end)
end

-- Dry run, smoke and run (`workbench.dryRun`, `workbench.smoke`, `workbench.run`; docs/lsp-extensions.md).

local REQUEST_CANCELLED = -32800
local TERMINAL = { ["run.completed"] = "completed", ["run.failed"] = "failed", ["run.cancelled"] = "cancelled" }

local function text(value)
  if type(value) == "string" and value ~= "" then
    return value
  end
  return nil
end

local function duration(data)
  local ms = type(data) == "table" and tonumber(data.duration_ms) or nil
  if not ms then
    return ""
  end
  if ms < 1000 then
    return (" in %d ms"):format(ms)
  end
  return (" in %.1f s"):format(ms / 1000)
end

local function tool_label(data)
  local detail = text(data.title) or text(data.target)
  local name = text(data.name) or "tool"
  return detail and ("%s (%s)"):format(name, detail) or name
end

local function usage(data)
  local parts = {}
  for _, field in ipairs({
    { "input_tokens", "input" },
    { "output_tokens", "output" },
    { "reasoning_tokens", "reasoning" },
    { "cache_read_tokens", "cache read" },
    { "cache_write_tokens", "cache write" },
  }) do
    local value = tonumber(data[field[1]])
    if value then
      table.insert(parts, ("%d %s"):format(value, field[2]))
    end
  end
  local line = #parts > 0 and (table.concat(parts, ", ") .. " tokens") or "updated"
  local cost = tonumber(data.cost_usd)
  if cost then
    line = line .. ("; $%.4f"):format(cost)
  end
  return line
end

--- The readable lines for one canonical event (protocol 0): text, tools, files changed, usage, the ending.
function M.format_event(event)
  local data = type(event.data) == "table" and event.data or {}
  local kind = event.type
  if kind == "run.started" then
    local what = table.concat(vim.tbl_filter(function(part)
      return part ~= nil
    end, { text(data.workbench), text(data.version) }), " ")
    local runtime = text(data.runtime)
    return {
      ("▶ Run %s started: %s%s (%s)"):format(
        tostring(event.run_id),
        what ~= "" and what or "Workbench",
        runtime and (" on " .. runtime) or "",
        tostring(event.runner)
      ),
    }
  elseif kind == "run.ready" then
    return { "  the runner is ready" }
  elseif kind == "output.text" then
    if type(data.text) ~= "string" or data.text == "" then
      return {}
    end
    return vim.split(data.text, "\r?\n")
  elseif kind == "tool.started" then
    return { ("⚙ %s started"):format(tool_label(data)) }
  elseif kind == "tool.completed" then
    if data.status == "failed" then
      local message = text(data.message)
      return { ("✗ %s failed%s"):format(tool_label(data), message and (": " .. message) or "") }
    end
    return { ("✓ %s completed"):format(tool_label(data)) }
  elseif kind == "file.changed" then
    local tool = text(data.tool)
    return { ("✎ %s changed%s"):format(text(data.path) or "a file", tool and (" (" .. tool .. ")") or "") }
  elseif kind == "usage.updated" then
    return { "  usage: " .. usage(data) }
  elseif kind == "outcome.available" then
    local function count(n, word)
      n = tonumber(n) or 0
      return ("%d %s%s"):format(n, word, n == 1 and "" or "s")
    end
    return {
      ("  outcome %s (%s, %s, %s)"):format(
        text(data.outcome_id) or "?",
        count(data.changesets, "changeset"),
        count(data.artifacts, "artifact"),
        count(data.links, "link")
      ),
    }
  elseif kind == "outcome.failed" then
    local message = text(data.message)
    return { "  outcome failed" .. (message and (": " .. message) or "") }
  elseif kind == "run.completed" then
    return { "■ Run completed" .. duration(data) }
  elseif kind == "run.failed" then
    local message = text(data.message)
    return { "■ Run failed" .. duration(data) .. (message and (": " .. message) or "") }
  elseif kind == "run.cancelled" then
    return { "■ Run cancelled" .. duration(data) }
  elseif kind == "runner.event" then
    return {}
  end
  return { ("  %s %s"):format(tostring(kind), vim.fn.json_encode(data)) }
end

local empty_dict_mt = getmetatable(vim.empty_dict())
-- vim.islist from Neovim 0.10 (vim.tbl_islist is deprecated there).
local islist = vim.islist or vim.tbl_islist

local function is_object(value)
  if getmetatable(value) == empty_dict_mt then
    return true
  end
  return next(value) ~= nil and not islist(value)
end

--- JSON with two-space indentation and sorted keys (Lua tables keep no key order).
function M.json_pretty(value, indent)
  indent = indent or ""
  if value == nil or value == vim.NIL then
    return "null"
  end
  if type(value) ~= "table" then
    return vim.fn.json_encode(value)
  end
  local inner = indent .. "  "
  local items = {}
  if is_object(value) then
    local keys = vim.tbl_keys(value)
    table.sort(keys, function(a, b)
      return tostring(a) < tostring(b)
    end)
    for _, key in ipairs(keys) do
      table.insert(items, inner .. vim.fn.json_encode(tostring(key)) .. ": " .. M.json_pretty(value[key], inner))
    end
    if #items == 0 then
      return "{}"
    end
    return "{\n" .. table.concat(items, ",\n") .. "\n" .. indent .. "}"
  end
  for _, item in ipairs(value) do
    table.insert(items, inner .. M.json_pretty(item, inner))
  end
  if #items == 0 then
    return "[]"
  end
  return "[\n" .. table.concat(items, ",\n") .. "\n" .. indent .. "]"
end

local scratch_count = 0

-- A new scratch buffer (not listed, not a file) named `workbench://<kind>/<n>` (with `/<name>` after it when
-- given), shown in a split at the bottom. With `keep_focus` the cursor stays in the current window.
local function scratch_buffer(kind, filetype, keep_focus, name)
  scratch_count = scratch_count + 1
  local bufnr = vim.api.nvim_create_buf(false, true)
  local buffer_name = ("workbench://%s/%d"):format(kind, scratch_count)
  if name then
    buffer_name = buffer_name .. "/" .. name
  end
  pcall(vim.api.nvim_buf_set_name, bufnr, buffer_name)
  vim.bo[bufnr].bufhidden = "hide"
  vim.bo[bufnr].swapfile = false
  if filetype then
    vim.bo[bufnr].filetype = filetype
  end
  local window = vim.api.nvim_get_current_win()
  vim.cmd("botright split")
  vim.api.nvim_win_set_buf(0, bufnr)
  if keep_focus and vim.api.nvim_win_is_valid(window) then
    vim.api.nvim_set_current_win(window)
  end
  return bufnr
end

local function set_lines(bufnr, first, last, lines)
  vim.bo[bufnr].modifiable = true
  vim.api.nvim_buf_set_lines(bufnr, first, last, false, lines)
  vim.bo[bufnr].modifiable = false
end

-- Appends lines to a scratch buffer (replacing its first, empty line) and scrolls its windows to the end.
local function append(bufnr, lines)
  if #lines == 0 or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local count = vim.api.nvim_buf_line_count(bufnr)
  if count == 1 and vim.api.nvim_buf_get_lines(bufnr, 0, 1, false)[1] == "" then
    set_lines(bufnr, 0, 1, lines)
  else
    set_lines(bufnr, count, count, lines)
  end
  local last = vim.api.nvim_buf_line_count(bufnr)
  for _, window in ipairs(vim.fn.win_findbuf(bufnr)) do
    pcall(vim.api.nvim_win_set_cursor, window, { last, 0 })
  end
end

-- The manifest of the current buffer, or nil (after saying so).
local function current_manifest(action)
  local bufnr = vim.api.nvim_get_current_buf()
  local path = vim.api.nvim_buf_get_name(bufnr)
  if not M.is_manifest(path) then
    notify(("open a manifest (.workbenches/<name>/workbench.yml) to %s"):format(action), vim.log.levels.WARN)
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
    notify("a task is required", vim.log.levels.WARN)
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
  execute("workbench.dryRun", { arguments(uri, options) }, function(result)
    local bufnr = scratch_buffer("dry-run", "json", false)
    set_lines(bufnr, 0, -1, vim.split(M.json_pretty(result), "\n"))
    M.last_dry_run = bufnr
  end, nil, function(err)
    notify("dry run failed: " .. tostring(err.message or vim.inspect(err)), vim.log.levels.ERROR)
  end)
end

local SMOKE_LEVELS = { ready = vim.log.levels.INFO, ["needs-auth"] = vim.log.levels.WARN }

--- The text and level of a `workbench.smoke` answer (the worst status decides the level).
function M.format_smoke(reports)
  local lines, level = {}, vim.log.levels.INFO
  if type(reports) ~= "table" or #reports == 0 then
    return "smoke: no package was checked", vim.log.levels.WARN
  end
  for _, report in ipairs(reports) do
    local name = table.concat(vim.tbl_filter(function(part)
      return part ~= nil
    end, { text(report.workbench), text(report.version) }), " ")
    table.insert(lines, ("smoke %s%s: %s"):format(
      name ~= "" and name or "Workbench",
      text(report.runtime) and (" on " .. report.runtime) or "",
      tostring(report.status)
    ))
    local report_level = SMOKE_LEVELS[report.status] or vim.log.levels.ERROR
    if report_level > level then
      level = report_level
    end
    if type(report.runner) == "table" and text(report.runner.name) then
      local path = text(report.runner.path)
      table.insert(lines, "  runner: " .. report.runner.name .. (path and (" (" .. path .. ")") or ""))
    end
    for _, warning in ipairs(type(report.warnings) == "table" and report.warnings or {}) do
      table.insert(lines, "  warning: " .. tostring(warning))
    end
    if type(report.error) == "table" and text(report.error.message) then
      table.insert(lines, "  error: " .. report.error.message)
    end
  end
  return table.concat(lines, "\n"), level
end

--- `:WorkbenchSmoke`: can the package start here (runner, tools, authentication), without a model request?
function M.smoke(options)
  options = options_of(options)
  options.task = nil
  local uri = current_manifest("smoke it")
  if not uri then
    return
  end
  execute("workbench.smoke", { arguments(uri, options) }, function(result)
    local message, level = M.format_smoke(result)
    notify(message, level)
  end, nil, function(err)
    notify("smoke failed: " .. tostring(err.message or vim.inspect(err)), vim.log.levels.ERROR)
  end)
end

-- The run in progress (one at a time): { client, request_id, token, bufnr, run_id, done }.
M.active_run = nil
-- The client of the last run (the outcome commands use it from buffers without a client).
local last_run_client = nil
local runs_by_id = {}
local run_count = 0

local function finish(run, message, level)
  if run.done then
    return
  end
  run.done = true
  if M.active_run == run then
    M.active_run = nil
  end
  if message then
    notify(message, level)
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
  if event.type == "outcome.available" and type(event.data) == "table" and M.is_outcome_id(event.data.outcome_id) then
    -- Also known when the run's answer is lost (a cancelled request): the outcome commands default to it.
    M.last_outcome_id = event.data.outcome_id
  end
  append(run.bufnr, M.format_event(event))
  local status = TERMINAL[event.type]
  if status then
    local level = status == "completed" and vim.log.levels.INFO
      or status == "cancelled" and vim.log.levels.WARN
      or vim.log.levels.ERROR
    local message = event.type == "run.failed" and text(event.data and event.data.message)
    finish(run, ("run %s%s"):format(status, message and (": " .. message) or ""), level)
  end
end

--- `:WorkbenchRun {task}`: runs the Workbench, streaming its events into a scratch buffer.
--- `options` is the task, or a table { task = ..., runtime = ..., env = { "NAME=value" }, ... }.
--- Returns the run's buffer.
function M.run(options)
  options = options_of(options)
  if M.active_run and M.active_run.client and not client_alive(M.active_run.client.id) then
    -- The server stopped during the run: nothing more will come of it.
    finish(M.active_run, nil)
  end
  if M.active_run then
    notify("a run is in progress; :WorkbenchCancel cancels it", vim.log.levels.WARN)
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
  local manifest_client = M.client(0)
  if not manifest_client then
    notify("no wb-lsp client is attached to this buffer", vim.log.levels.WARN)
    return nil
  end
  if manifest_client.handlers and manifest_client.handlers[M.RUN_EVENT] == nil then
    -- A client this plugin did not configure (nvim-lspconfig): give it the event handler.
    manifest_client.handlers[M.RUN_EVENT] = M.on_run_event
  end
  run_count = run_count + 1
  local token = ("workbench-run-%d"):format(run_count)
  local bufnr = scratch_buffer("run", "workbench-run", true)
  append(bufnr, { ("── %s: %s"):format(vim.uri_to_fname(uri), options.task) })
  local run = { token = token, bufnr = bufnr, done = false }
  M.active_run = run
  local client, request_id = execute("workbench.run", { arguments(uri, options) }, function(result)
    local ending = type(result.ending) == "table" and result.ending or {}
    local status = ending.status or "failed"
    local level = status == "completed" and vim.log.levels.INFO
      or status == "cancelled" and vim.log.levels.WARN
      or vim.log.levels.ERROR
    finish(run, ("run %s%s"):format(status, text(ending.message) and (": " .. ending.message) or ""), level)
    if M.is_outcome_id(result.outcomeId) then
      M.last_outcome_id = result.outcomeId
      M.announce_outcome(run.client, result.outcomeId)
    end
  end, { workDoneToken = token }, function(err)
    if err.code == REQUEST_CANCELLED then
      -- The answer to :WorkbenchCancel's $/cancelRequest: the run's own `run.cancelled` event ends it.
      return
    end
    -- Refused before it started (no event came), or interrupted.
    local what = run.run_id and "the run stopped: " or "the run could not start: "
    local message = what .. tostring(err.message or vim.inspect(err))
    append(bufnr, { "■ " .. message })
    finish(run, message, vim.log.levels.ERROR)
  end)
  if not client then
    M.active_run = nil
    return nil
  end
  run.client, run.request_id = client, request_id
  last_run_client = client.id
  return bufnr
end

--- `:WorkbenchCancel`: cancels the run in progress: `$/cancelRequest` for its request (client.cancel_request)
--- and `window/workDoneProgress/cancel` for its progress token. The run ends with `run.cancelled`.
function M.cancel()
  local run = M.active_run
  if not run or not run.client then
    notify("no run is in progress")
    return false
  end
  if run.cancelling then
    return true
  end
  run.cancelling = true
  append(run.bufnr, { "  cancelling…" })
  client_notify(run.client, "window/workDoneProgress/cancel", { token = run.token })
  client_cancel(run.client, run.request_id)
  return true
end

-- Outcomes (`workbench.outcome`, `workbench.applyOutcome`; docs/lsp-extensions.md): what a run returned
-- (changesets, artifacts, links), its stored files opened read-only, and applying a pending one.

-- The outcome the outcome commands use without an id: the last run's, or the last one shown.
M.last_outcome_id = nil

--- True for an outcome id (`wbo_` and 20 to 64 lowercase letters and digits).
function M.is_outcome_id(value)
  return type(value) == "string" and #value >= 24 and #value <= 68 and value:match("^wbo_[a-z0-9]+$") ~= nil
end

-- The client the outcome commands talk to: the current buffer's, else the last run's, else any running
-- workbench client (outcomes are stored per user, not per repository).
local function outcome_client()
  local client = M.client(0)
  if client then
    return client
  end
  if client_alive(last_run_client) then
    return vim.lsp.get_client_by_id(last_run_client)
  end
  local all = vim.lsp.get_clients and vim.lsp.get_clients({ name = M.name }) or vim.lsp.get_active_clients()
  for _, candidate in ipairs(all) do
    if candidate.name == M.name and client_alive(candidate.id) then
      return candidate
    end
  end
  return nil
end

-- `workbench.outcome` for an id; `on_outcome(result)` gets { outcome, receipt, files }.
local function fetch_outcome(id, on_outcome, client)
  client = client or outcome_client()
  if not client then
    notify("no wb-lsp client is running: open a manifest first", vim.log.levels.WARN)
    return
  end
  execute_on(client, vim.api.nvim_get_current_buf(), "workbench.outcome", { id }, function(result)
    if type(result.outcome) ~= "table" or type(result.receipt) ~= "table" then
      notify("the server answered workbench.outcome with something unexpected", vim.log.levels.ERROR)
      return
    end
    M.last_outcome_id = id
    on_outcome(result)
  end, nil, function(err)
    notify(("cannot read outcome %s: %s"):format(id, tostring(err.message or vim.inspect(err))), vim.log.levels.ERROR)
  end)
end

-- The outcome id a command works on: the one given, else the last one. Nil (after saying so) when none.
local function outcome_id(id)
  if type(id) == "string" and vim.trim(id) ~= "" then
    id = vim.trim(id)
    if not M.is_outcome_id(id) then
      notify(("not an outcome id: %s (wbo_…)"):format(id), vim.log.levels.WARN)
      return nil
    end
    return id
  end
  if M.last_outcome_id then
    return M.last_outcome_id
  end
  notify("no outcome yet: run the Workbench, or give an outcome id (wbo_…)", vim.log.levels.WARN)
  return nil
end

local function list(value)
  return type(value) == "table" and value or {}
end

local function count(value)
  return tonumber(value) or 0
end

local function workspace_label(workspace)
  if type(workspace) == "table" and workspace.kind == "named" then
    return "workspace " .. tostring(workspace.name)
  end
  return "primary workspace"
end

local function changeset_stats(changeset)
  local stats = type(changeset.stats) == "table" and changeset.stats or {}
  return ("%d added, %d modified, %d deleted"):format(
    count(stats.additions),
    count(stats.modifications),
    count(stats.deletions)
  )
end

local MARKS = { add = "A", modify = "M", delete = "D" }

--- The summary of a `workbench.outcome` answer, line by line: the text of `wb-lsp outcome ID`. With
--- `targets`, also fills targets[line] = { kind = "review", changeset = ID } or { kind = "artifact", id = ID }
--- for the lines that open something.
function M.format_outcome(result, targets)
  targets = targets or {}
  local outcome, receipt = result.outcome, result.receipt
  local lines = {
    ("Outcome %s (run %s, %s, %s)"):format(
      tostring(outcome.id),
      tostring(outcome.run_id),
      tostring(outcome.completeness),
      tostring(receipt.state)
    ),
  }
  if text(outcome.summary) then
    table.insert(lines, "Summary: " .. outcome.summary)
  end
  local changesets = list(outcome.changesets)
  if #changesets == 0 then
    table.insert(lines, "Changesets: none")
  end
  for _, changeset in ipairs(changesets) do
    local target = { kind = "review", changeset = changeset.id }
    table.insert(lines, ("Changeset %s (%s): %s"):format(
      tostring(changeset.id),
      workspace_label(changeset.workspace),
      changeset_stats(changeset)
    ))
    targets[#lines] = target
    for _, entry in ipairs(list(changeset.entries)) do
      table.insert(lines, ("  %s %s"):format(MARKS[entry.operation] or "?", tostring(entry.path)))
      targets[#lines] = target
    end
  end
  local artifacts = list(outcome.artifacts)
  table.insert(lines, ("Artifacts: %d"):format(#artifacts))
  for _, artifact in ipairs(artifacts) do
    local content = type(artifact.content) == "table" and artifact.content or {}
    table.insert(lines, ("  %s%s: %s, %d bytes"):format(
      tostring(artifact.name),
      text(artifact.path) and (" (" .. artifact.path .. ")") or "",
      tostring(content.media_type),
      count(content.size_bytes)
    ))
    targets[#lines] = { kind = "artifact", id = artifact.id }
  end
  local links = list(outcome.links)
  table.insert(lines, ("Links: %d"):format(#links))
  for _, link in ipairs(links) do
    table.insert(lines, ("  %s%s: %s"):format(
      tostring(link.label),
      text(link.kind) and (" [" .. link.kind .. "]") or "",
      tostring(link.uri)
    ))
  end
  for _, warning in ipairs(list(outcome.warnings)) do
    table.insert(lines, ("warning: %s (%s)"):format(tostring(warning.message), tostring(warning.code)))
  end
  return lines
end

local function plural(n, word)
  return ("%d %s%s"):format(n, word, n == 1 and "" or "s")
end

--- One line: `1 added, 1 modified, 1 deleted; 1 artifact; 1 link` (changes summed over the changesets).
function M.outcome_brief(outcome)
  local added, modified, deleted = 0, 0, 0
  for _, changeset in ipairs(list(outcome.changesets)) do
    local stats = type(changeset.stats) == "table" and changeset.stats or {}
    added = added + count(stats.additions)
    modified = modified + count(stats.modifications)
    deleted = deleted + count(stats.deletions)
  end
  local changes = added + modified + deleted == 0 and "no changes"
    or ("%d added, %d modified, %d deleted"):format(added, modified, deleted)
  local artifacts, links = plural(#list(outcome.artifacts), "artifact"), plural(#list(outcome.links), "link")
  return ("%s; %s; %s"):format(changes, artifacts, links)
end

--- After a run that committed an outcome: one notification with what it holds and the commands for it.
function M.announce_outcome(client, id)
  fetch_outcome(id, function(result)
    local state = tostring(result.receipt.state)
    local hint = state == "pending" and ":WorkbenchOutcome shows it, :WorkbenchApplyOutcome applies it"
      or ":WorkbenchOutcome shows it"
    notify(("outcome %s (%s): %s. %s"):format(id, state, M.outcome_brief(result.outcome), hint))
  end, client)
end

-- Per outcome buffer: { id = outcome id, targets = { [line] = target } } for <CR>.
local outcome_buffers = {}

local open_target

--- `:WorkbenchOutcome [id]`: the outcome's summary (changes, artifacts, links) in a scratch buffer
--- `workbench://outcome/N` (filetype `workbench-outcome`). <CR> on a change opens the review diff, on an
--- artifact the artifact. Without an id: the last run's outcome.
function M.show_outcome(id)
  id = outcome_id(id)
  if not id then
    return
  end
  fetch_outcome(id, function(result)
    local targets = {}
    local lines = M.format_outcome(result, targets)
    table.insert(lines, "")
    table.insert(lines, "<CR> on a change opens the review diff (:WorkbenchOutcomeDiff), on an artifact the artifact")
    table.insert(lines, "(:WorkbenchOutcomeArtifact [name]).")
    if result.receipt.state == "pending" then
      table.insert(lines, "Pending: :WorkbenchApplyOutcome applies it to its workspace.")
    end
    local bufnr = scratch_buffer("outcome", "workbench-outcome", false)
    set_lines(bufnr, 0, -1, lines)
    outcome_buffers[bufnr] = { id = id, targets = targets }
    vim.keymap.set("n", "<CR>", function()
      local entry = outcome_buffers[bufnr]
      local target = entry and entry.targets[vim.api.nvim_win_get_cursor(0)[1]]
      if target then
        open_target(entry.id, target)
      end
    end, { buffer = bufnr, desc = "Open the review diff or the artifact on this line" })
    M.last_outcome_buffer = bufnr
  end)
end

-- The stored bytes of a file the server named, checked against their digest. Returns the text, or nil and
-- why not (binary content is not opened: its path is given instead).
local function read_stored(file, content)
  local handle = type(file) == "string" and io.open(file, "rb")
  if not handle then
    return nil, ("cannot read %s"):format(tostring(file))
  end
  local bytes = handle:read("*a")
  handle:close()
  if bytes:find("\0", 1, true) then
    return nil, ("it is binary (%s, %d bytes); the stored file is %s"):format(
      tostring(content.media_type),
      #bytes,
      file
    )
  end
  if type(content.digest) ~= "string" or "sha256:" .. vim.fn.sha256(bytes) ~= content.digest then
    return nil, ("the stored content of %s does not match its digest %s"):format(file, tostring(content.digest))
  end
  return bytes
end

local function lines_of(bytes)
  local lines = vim.split(bytes, "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  return lines
end

-- A read-only scratch buffer with the given text, filetype and name.
local function read_only_buffer(kind, name, lines, filetype)
  local bufnr = scratch_buffer(kind, filetype, false, name)
  set_lines(bufnr, 0, -1, lines)
  vim.bo[bufnr].readonly = true
  return bufnr
end

-- Filetypes by extension, for Neovim 0.7 when its detection does not set one.
local EXTENSION_FILETYPES = {
  css = "css",
  csv = "csv",
  diff = "diff",
  htm = "html",
  html = "html",
  js = "javascript",
  json = "json",
  md = "markdown",
  patch = "diff",
  py = "python",
  rs = "rust",
  sh = "sh",
  sql = "sql",
  svg = "svg",
  toml = "toml",
  ts = "typescript",
  txt = "text",
  xml = "xml",
  yaml = "yaml",
  yml = "yaml",
}

-- The filetype of a file's name, set on the buffer. Neovim 0.8+: vim.filetype.match{filename}. 0.7:
-- vim.filetype.match(name, bufnr) sets it itself, except where it goes through `:setfiletype`, which does
-- nothing inside an autocommand that already set a filetype; the extension then decides.
local function detect_filetype(bufnr, name)
  if vim.fn.has("nvim-0.8") == 1 then
    local ok, filetype = pcall(vim.filetype.match, { filename = name, buf = bufnr })
    if ok and type(filetype) == "string" then
      vim.bo[bufnr].filetype = filetype
    end
    return
  end
  vim.api.nvim_buf_call(bufnr, function()
    pcall(vim.filetype.match, name, bufnr)
  end)
  local extension = name:match("%.([%w]+)$")
  if vim.bo[bufnr].filetype == "" and extension and EXTENSION_FILETYPES[extension:lower()] then
    vim.bo[bufnr].filetype = EXTENSION_FILETYPES[extension:lower()]
  end
end

-- A name as one path segment.
local function safe_name(name)
  local cleaned = tostring(name):gsub("[/\\%c]", "_")
  if cleaned == "" or cleaned == "." or cleaned == ".." then
    return "artifact"
  end
  return cleaned
end

local function open_review(result, changeset_id)
  local file
  for _, review in ipairs(list(result.files and result.files.reviews)) do
    if review.changeset == changeset_id then
      file = review.file
    end
  end
  local changeset
  for _, candidate in ipairs(list(result.outcome.changesets)) do
    if candidate.id == changeset_id then
      changeset = candidate
    end
  end
  if not file or not changeset or type(changeset.review) ~= "table" then
    notify(("changeset %s has no review diff"):format(tostring(changeset_id)), vim.log.levels.WARN)
    return nil
  end
  local bytes, why = read_stored(file, changeset.review)
  if not bytes then
    notify("cannot open the review diff: " .. why, vim.log.levels.ERROR)
    return nil
  end
  local bufnr = read_only_buffer("diff", safe_name(changeset_id) .. ".diff", lines_of(bytes), "diff")
  M.last_diff_buffer = bufnr
  return bufnr
end

local function open_artifact(result, artifact)
  local file
  for _, stored in ipairs(list(result.files and result.files.artifacts)) do
    if stored.id == artifact.id then
      file = stored.file
    end
  end
  local content = type(artifact.content) == "table" and artifact.content or {}
  local bytes, why = read_stored(file, content)
  if not bytes then
    notify(("cannot open %s: %s"):format(tostring(artifact.name), why), vim.log.levels.WARN)
    return nil
  end
  local name = safe_name(artifact.name)
  local bufnr = read_only_buffer("artifact", name, lines_of(bytes), nil)
  detect_filetype(bufnr, name)
  M.last_artifact_buffer = bufnr
  return bufnr
end

-- Asks with vim.ui.select when there are several; calls `choose(item)` with the one chosen.
local function pick(items, prompt, label, choose)
  if #items == 1 then
    choose(items[1])
    return
  end
  vim.ui.select(items, { prompt = prompt, format_item = label }, function(item)
    if item then
      choose(item)
    end
  end)
end

--- `:WorkbenchOutcomeDiff [id]`: the review diff of the outcome's changeset (asked for when there are several)
--- in a read-only scratch buffer with filetype `diff`.
function M.outcome_diff(id)
  id = outcome_id(id)
  if not id then
    return
  end
  fetch_outcome(id, function(result)
    local reviewed = {}
    for _, changeset in ipairs(list(result.outcome.changesets)) do
      if type(changeset.review) == "table" then
        table.insert(reviewed, changeset)
      end
    end
    if #reviewed == 0 then
      local why = #list(result.outcome.changesets) == 0 and "has no changes" or "has no review diff"
      notify(("outcome %s %s"):format(id, why))
      return
    end
    pick(reviewed, "Review diff of", function(changeset)
      return ("%s (%s): %s"):format(changeset.id, workspace_label(changeset.workspace), changeset_stats(changeset))
    end, function(changeset)
      open_review(result, changeset.id)
    end)
  end)
end

--- `:WorkbenchOutcomeArtifact [id] [name]`: an artifact of the outcome (by name, id or outbox path; asked for
--- when there are several) in a read-only scratch buffer named after it, with the filetype its name gives.
--- Binary artifacts are not opened: their stored path is given.
function M.outcome_artifact(options)
  if type(options) == "string" then
    local words = vim.split(vim.trim(options), "%s+")
    if M.is_outcome_id(words[1]) then
      options = { id = table.remove(words, 1), name = table.concat(words, " ") }
    else
      options = { name = table.concat(words, " ") }
    end
  end
  options = options or {}
  local id = outcome_id(options.id)
  if not id then
    return
  end
  fetch_outcome(id, function(result)
    local artifacts = {}
    for _, artifact in ipairs(list(result.outcome.artifacts)) do
      local wanted = text(options.name)
      if not wanted or artifact.name == wanted or artifact.id == wanted or artifact.path == wanted then
        table.insert(artifacts, artifact)
      end
    end
    if #artifacts == 0 then
      local what = text(options.name) and (" named " .. options.name) or ""
      notify(("outcome %s has no artifact%s"):format(id, what))
      return
    end
    pick(artifacts, "Artifact", function(artifact)
      local content = type(artifact.content) == "table" and artifact.content or {}
      local size = count(content.size_bytes)
      return ("%s (%s, %d bytes)"):format(tostring(artifact.name), tostring(content.media_type), size)
    end, function(artifact)
      open_artifact(result, artifact)
    end)
  end)
end

open_target = function(id, target)
  fetch_outcome(id, function(result)
    if target.kind == "review" then
      open_review(result, target.changeset)
      return
    end
    for _, artifact in ipairs(list(result.outcome.artifacts)) do
      if artifact.id == target.id then
        open_artifact(result, artifact)
      end
    end
  end)
end

--- Asks before applying; returns true to go on. Replaceable (the tests answer it).
function M.confirm(message)
  return vim.fn.confirm(message, "&Apply\n&Cancel", 2, "Question") == 1
end

--- `:WorkbenchApplyOutcome[!] [id]`: applies a pending outcome to its workspace (`workbench.applyOutcome`, all or
--- nothing), after a confirmation (not with !). A present or applied outcome is not sent: there is nothing to
--- apply. From Lua: apply_outcome({ id = ..., workspace = "/path", confirm = false }).
function M.apply_outcome(options)
  if type(options) ~= "table" then
    options = { id = options }
  end
  local id = outcome_id(options.id)
  if not id then
    return
  end
  fetch_outcome(id, function(result)
    local state = result.receipt.state
    if state ~= "pending" then
      local why = state == "present" and "the run already made its changes in the workspace"
        or "it was already applied"
      notify(("outcome %s is %s: %s; nothing to apply"):format(id, tostring(state), why))
      return
    end
    local lines = { ("Apply outcome %s to its workspace?"):format(id) }
    for _, changeset in ipairs(list(result.outcome.changesets)) do
      table.insert(lines, ("%s: %s"):format(workspace_label(changeset.workspace), changeset_stats(changeset)))
    end
    table.insert(lines, "All or nothing: if a file changed since the run, nothing is written.")
    if options.confirm ~= false and not M.confirm(table.concat(lines, "\n")) then
      notify(("outcome %s was not applied"):format(id))
      return
    end
    local client = outcome_client()
    if not client then
      return
    end
    local argument = { id = id }
    if text(options.workspace) then
      argument.workspace = options.workspace
    end
    execute_on(client, vim.api.nvim_get_current_buf(), "workbench.applyOutcome", { argument }, function(applied)
      local counts = ("%d applied, %d unchanged"):format(count(applied.applied), count(applied.unchanged))
      notify(("applied outcome %s: %s"):format(id, counts))
    end, nil, function(err)
      notify(
        ("outcome %s was not applied: %s"):format(id, tostring(err.message or vim.inspect(err))),
        vim.log.levels.ERROR
      )
    end)
  end)
end

local function register_lspconfig()
  local ok, configs = pcall(require, "lspconfig.configs")
  if not ok or configs[M.name] ~= nil then
    return
  end
  local settings = section(M.config.settings)
  configs[M.name] = {
    default_config = {
      cmd = M.config.cmd,
      filetypes = { M.config.filetype or "yaml" },
      root_dir = function(fname)
        return M.root_dir(fname)
      end,
      settings = { workbench = settings },
      init_options = settings,
      handlers = client_handlers(),
      single_file_support = false,
    },
    docs = {
      description = "wb-lsp, the language server for Workbench manifests (.workbenches/<name>/workbench.yml).",
    },
  }
end

--- Sets the plugin up: options are merged over the defaults (see the README).
function M.setup(options)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), options or {})
  if options and options.cmd then
    M.config.cmd = options.cmd
  end
  if type(M.config.cmd) == "string" then
    M.config.cmd = { M.config.cmd }
  end

  local group = vim.api.nvim_create_augroup("workbench", { clear = true })
  vim.api.nvim_create_autocmd({ "BufRead", "BufNewFile" }, {
    group = group,
    pattern = M.pattern,
    callback = on_manifest,
  })

  vim.api.nvim_create_user_command("WorkbenchMigrate", M.migrate, {
    desc = "Migrate the current Workbench manifest to spec 1",
  })
  vim.api.nvim_create_user_command("WorkbenchCheck", M.check_workspace, {
    desc = "Re-check every Workbench package of the workspace",
  })
  vim.api.nvim_create_user_command("WorkbenchDryRun", function(command)
    M.dry_run(command.args)
  end, { nargs = "*", desc = "Show what the runner of the current Workbench would receive for a task" })
  vim.api.nvim_create_user_command("WorkbenchSmoke", function()
    M.smoke()
  end, { nargs = 0, desc = "Check that the current Workbench can start here" })
  vim.api.nvim_create_user_command("WorkbenchRun", function(command)
    M.run(command.args)
  end, { nargs = "*", desc = "Run the current Workbench on a task, streaming its events" })
  vim.api.nvim_create_user_command("WorkbenchCancel", function()
    M.cancel()
  end, { nargs = 0, desc = "Cancel the Workbench run in progress" })
  vim.api.nvim_create_user_command("WorkbenchOutcome", function(command)
    M.show_outcome(command.args)
  end, { nargs = "?", desc = "Show a run's outcome (default: the last run's): changes, artifacts, links" })
  vim.api.nvim_create_user_command("WorkbenchOutcomeDiff", function(command)
    M.outcome_diff(command.args)
  end, { nargs = "?", desc = "Open the review diff of an outcome (default: the last run's), read-only" })
  vim.api.nvim_create_user_command("WorkbenchOutcomeArtifact", function(command)
    M.outcome_artifact(command.args)
  end, { nargs = "*", desc = "Open an artifact of an outcome (default: the last run's), read-only" })
  vim.api.nvim_create_user_command("WorkbenchApplyOutcome", function(command)
    M.apply_outcome({ id = command.args, confirm = not command.bang })
  end, { nargs = "?", bang = true, desc = "Apply a pending outcome (default: the last run's) to its workspace" })

  if M.config.lspconfig then
    register_lspconfig()
  end

  -- Manifests opened before setup() ran (lazy loading).
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and M.is_manifest(vim.api.nvim_buf_get_name(bufnr)) then
      on_manifest({ buf = bufnr })
    end
  end
end

return M
