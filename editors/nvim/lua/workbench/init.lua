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
  -- Extra handlers passed to the client.
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
    handlers = config.handlers,
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

local function execute(command, arguments, on_result)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if not client then
    notify("no wb-lsp client is attached to this buffer", vim.log.levels.WARN)
    return
  end
  local params = { command = command, arguments = arguments }
  client_request(client, "workspace/executeCommand", params, function(err, result)
    if err then
      notify(("%s failed: %s"):format(command, err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    on_result(result or {})
  end, bufnr)
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
