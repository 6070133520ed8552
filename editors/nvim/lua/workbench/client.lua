-- The plugin's LSP client: the options of setup(), which paths are manifests, one client per repository root
-- (the directory holding `.workbenches`) started or reused and attached to manifest buffers, sending
-- workspace/executeCommand, and the nvim-lspconfig registration. Neovim's client API differs between 0.7 and
-- 0.11; this module bridges it, so the other modules call it the same way everywhere.

local attach = require("workbench.attach")
local ui = require("workbench.ui")

local M = {}

M.name = "workbench"

-- The Lua pattern of a manifest path, capturing the repository root.
local MANIFEST = "^(.*)/%.workbenches/[^/]+/workbench%.yml$"
-- The autocmd pattern of a manifest path.
M.pattern = "*/.workbenches/*/workbench.yml"
-- A package's Markdown (its instructions and skills, where the prose checks report), and its autocmd pattern
-- (`*` also matches `/` there).
local PACKAGE_MARKDOWN = "^(.*)/%.workbenches/[^/]+/.+%.md$"
M.markdown_pattern = "*/.workbenches/*.md"
-- A package's trial task (`trials/<id>/task.json`), and its autocmd pattern.
local TRIAL_TASK = "^(.*)/%.workbenches/[^/]+/trials/[^/]+/task%.json$"
M.task_pattern = "*/.workbenches/*/trials/*/task.json"

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
  -- Called as on_attach(client, bufnr) for every attached manifest buffer, after the plugin's own setup of it.
  on_attach = nil,
  -- Set the buffer's 'omnifunc' to vim.lsp.omnifunc, so <C-x><C-o> completes.
  omnifunc = true,
  -- Buffer-local normal-mode mappings made when the client attaches: a key, or false for none. false instead
  -- of the table makes none.
  mappings = {
    hover = "K",
    definition = "gd",
    references = "gr",
    code_action = "<leader>ca",
  },
  -- Extra handlers passed to the client (the plugin adds its own for `workbench/runEvent`).
  handlers = nil,
  -- Start the server automatically when a manifest is opened.
  autostart = true,
  -- Register a `workbench` config with nvim-lspconfig when it is installed.
  lspconfig = true,
}

M.config = vim.deepcopy(defaults)

--- Merges the options of setup() over the defaults (a `cmd` given replaces the default one whole).
function M.configure(options)
  local config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), options or {})
  if options and options.cmd then
    config.cmd = options.cmd
  end
  if type(config.cmd) == "string" then
    config.cmd = { config.cmd }
  end
  M.config = config
end

-- The handlers the plugin's modules give every client it configures, by method (workbench.run adds
-- `workbench/runEvent`); a handler of the same method in the options replaces one.
M.handlers = {}

-- Client ids started by this plugin, per repository root.
local clients = {}

-- The id of the client of the last run: the outcome commands use it from buffers without a client.
M.last_run_client = nil

--- The repository root of a manifest path, of a package's Markdown or of a trial task (the directory containing
--- `.workbenches`), or nil.
function M.root_dir(path)
  if type(path) ~= "string" or path == "" then
    return nil
  end
  return path:match(MANIFEST) or path:match(PACKAGE_MARKDOWN) or path:match(TRIAL_TASK)
end

--- True when the path is a Workbench manifest.
function M.is_manifest(path)
  return type(path) == "string" and path:match(MANIFEST) ~= nil
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

--- Sends a notification to the server of a client.
function M.send_notification(client, method, params)
  if method_calls then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

--- Cancels a request of a client (`$/cancelRequest`).
function M.cancel_request(client, id)
  if method_calls then
    return client:cancel_request(id)
  end
  return client.cancel_request(id)
end

--- True when the client of this id exists and has not stopped.
function M.is_alive(id)
  local client = id and vim.lsp.get_client_by_id(id)
  if client == nil then
    return false
  end
  if method_calls then
    return not client:is_stopped()
  end
  return not client.is_stopped()
end

--- What the client runs for every attached manifest buffer: the plugin's setup, then the user's on_attach.
function M.on_attach(client, bufnr)
  attach.setup_buffer(bufnr, M.config)
  if M.config.on_attach then
    M.config.on_attach(client, bufnr)
  end
end

local function client_handlers()
  return vim.tbl_extend("force", M.handlers, M.config.handlers or {})
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
    on_attach = M.on_attach,
  }
end

local function cannot_start()
  ui.notify("cannot start " .. table.concat(M.config.cmd, " "), vim.log.levels.ERROR)
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
    ui.notify(
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
      cannot_start()
    end
    return started
  end
  local id = clients[root]
  if not M.is_alive(id) then
    id = vim.lsp.start_client(M.client_config(root))
    if not id then
      cannot_start()
      return nil
    end
    clients[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
  return id
end

--- Sends workspace/executeCommand from a client (`bufnr` only goes to the handler's context). `on_result(result)`
--- gets the answer; `on_error(err)` (default: a notification) an error. Returns the client and the request id,
--- or nil.
function M.execute_on(client, bufnr, command, arguments, on_result, extra, on_error)
  local params = vim.tbl_extend("force", extra or {}, { command = command, arguments = arguments })
  local ok, request_id = client_request(client, "workspace/executeCommand", params, function(err, result)
    if err then
      if on_error then
        on_error(err)
      else
        ui.notify(("%s failed: %s"):format(command, err.message or vim.inspect(err)), vim.log.levels.ERROR)
      end
      return
    end
    on_result(result or {})
  end, bufnr)
  if not ok then
    ui.notify(("cannot send %s: the server is not running"):format(command), vim.log.levels.ERROR)
    return nil
  end
  return client, request_id
end

--- The client attached to `bufnr`, or nil after saying there is none.
function M.attached_client(bufnr)
  local client = M.client(bufnr)
  if not client then
    ui.notify("no wb-lsp client is attached to this buffer", vim.log.levels.WARN)
  end
  return client
end

--- The same as execute_on(), from the current buffer's client (after saying so when it has none).
function M.execute(command, arguments, on_result, extra, on_error)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = M.attached_client(bufnr)
  if not client then
    return nil
  end
  return M.execute_on(client, bufnr, command, arguments, on_result, extra, on_error)
end

--- The client for commands that need no manifest (outcomes are stored per user, not per repository): the
--- current buffer's, else the last run's, else any running workbench client.
function M.any_client()
  local client = M.client(0)
  if client then
    return client
  end
  if M.is_alive(M.last_run_client) then
    return vim.lsp.get_client_by_id(M.last_run_client)
  end
  local all = vim.lsp.get_clients and vim.lsp.get_clients({ name = M.name }) or vim.lsp.get_active_clients()
  for _, candidate in ipairs(all) do
    if candidate.name == M.name and M.is_alive(candidate.id) then
      return candidate
    end
  end
  return nil
end

--- Registers a `workbench` config with nvim-lspconfig, when it is installed and has none.
function M.register_lspconfig()
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
      on_attach = M.on_attach,
      single_file_support = false,
    },
    docs = {
      description = "wb-lsp, the language server for Workbench manifests (.workbenches/<name>/workbench.yml).",
    },
  }
end

return M
