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

-- Sends workspace/executeCommand from the current buffer's client. `on_result(result)` gets the answer;
-- `on_error(err)` (default: a notification) an error. Returns the client and the request id, or nil.
local function execute(command, arguments, on_result, extra, on_error)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if not client then
    notify("no wb-lsp client is attached to this buffer", vim.log.levels.WARN)
    return nil
  end
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

-- A new scratch buffer (not listed, not a file) named `workbench://<kind>/<n>`, shown in a split at the
-- bottom. With `keep_focus` the cursor stays in the current window.
local function scratch_buffer(kind, filetype, keep_focus)
  scratch_count = scratch_count + 1
  local bufnr = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, bufnr, ("workbench://%s/%d"):format(kind, scratch_count))
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
