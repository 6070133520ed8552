-- Neovim client for wb-lsp, the language server for Workbench manifests (.workbenches/<name>/workbench.yml).
--
-- Works on Neovim 0.7 and later, with one client per repository root (the directory holding `.workbenches`).
-- Before 0.10 it starts the server with vim.lsp.start_client and attaches buffers with
-- vim.lsp.buf_attach_client (0.7 has no vim.lsp.start); from 0.10 it uses vim.lsp.start, as start_client is
-- deprecated from 0.11. When nvim-lspconfig is installed a `workbench` config is registered with it too.
--
-- This module is setup() and the public API; the work is done in:
--   workbench.client     the options, the LSP client per repository, workspace/executeCommand, nvim-lspconfig
--   workbench.attach     what an attached manifest buffer gets: omnifunc, the K/gd/gr/<leader>ca mappings
--   workbench.commands   the :Workbench* user commands, migrate and check_workspace
--   workbench.run        dry run, smoke, run and its `workbench/runEvent` stream, cancel, attach, sessions
--   workbench.asks       what a run asks the person, answered with vim.ui.select / vim.ui.input
--   workbench.runs       the runs buffer (:WorkbenchRuns), kill
--   workbench.outcome    the outcome buffer, its review diff and artifacts, applying an outcome
--   workbench.trials     running a package's trial and opening its report
--   workbench.ui         messages and scratch buffers
--   workbench.ui.format  reading the server's answers (the server renders the text of events and outcomes)

local asks = require("workbench.asks")
local commands = require("workbench.commands")
local format = require("workbench.ui.format")
local lsp = require("workbench.client")
local outcome = require("workbench.outcome")
local run = require("workbench.run")
local runs = require("workbench.runs")
local trials = require("workbench.trials")

local M = {}

-- Every public name and the module that owns it. Reading require("workbench").NAME reads the owner's field and
-- assigning it assigns the owner's: state (config, active_run, last_outcome_id, ...) reads live, and a function
-- replaced here (confirm, on_run_event, ...) is the one the plugin itself calls.
local PUBLIC = {
  [lsp] = { "name", "pattern", "markdown_pattern", "task_pattern", "config", "root_dir", "is_manifest", "client", "client_config", "attach" },
  [commands] = { "migrate", "check_workspace" },
  [run] = {
    "RUN_EVENT",
    "on_run_event",
    "active_run",
    "dry_run",
    "last_dry_run",
    "smoke",
    "run",
    "session",
    "send",
    "last_session",
    "cancel",
    "attach",
    "is_run_id",
  },
  [runs] = { "show_runs", "last_runs_buffer", "last_runs", "refresh_runs", "kill", "confirm_kill" },
  [outcome] = {
    "is_outcome_id",
    "last_outcome_id",
    "announce_outcome",
    "show_outcome",
    "last_outcome_buffer",
    "outcome_diff",
    "last_diff_buffer",
    "outcome_artifact",
    "last_artifact_buffer",
    "confirm",
    "apply_outcome",
    "outcome_files",
    "open_file_diff",
    "apply_file",
    "last_files_buffer",
    "last_file_diff",
  },
  [format] = { "json_pretty" },
  [asks] = { "INPUT_REQUESTED", "INPUT_RESOLVED", "on_input_requested", "on_input_resolved", "pending", "choose", "read_text" },
  [trials] = { "trial", "open_report", "last_trial", "open" },
}

local owners = {}
for module, names in pairs(PUBLIC) do
  for _, name in ipairs(names) do
    owners[name] = module
  end
end

setmetatable(M, {
  __index = function(_, name)
    local owner = owners[name]
    if owner then
      return owner[name]
    end
    return nil
  end,
  __newindex = function(public, name, value)
    local owner = owners[name]
    if owner then
      owner[name] = value
    else
      rawset(public, name, value)
    end
  end,
})

local function on_manifest(args)
  local bufnr = args.buf
  local config = lsp.config
  if config.filetype and vim.bo[bufnr].filetype ~= config.filetype then
    vim.bo[bufnr].filetype = config.filetype
  end
  if config.autostart then
    lsp.attach(bufnr)
  end
end

--- Sets the plugin up: options are merged over the defaults (see the README).
function M.setup(options)
  lsp.configure(options)

  local group = vim.api.nvim_create_augroup("workbench", { clear = true })
  vim.api.nvim_create_autocmd({ "BufRead", "BufNewFile" }, {
    group = group,
    pattern = lsp.pattern,
    callback = on_manifest,
  })
  -- A package's Markdown and its trial tasks get the client too (their filetypes stay): the prose checks'
  -- warnings and quick fixes, a task's checks, completion and hover.
  vim.api.nvim_create_autocmd({ "BufRead", "BufNewFile" }, {
    group = group,
    pattern = { lsp.markdown_pattern, lsp.task_pattern },
    callback = function(args)
      if lsp.config.autostart then
        lsp.attach(args.buf)
      end
    end,
  })

  commands.register()

  if lsp.config.lspconfig then
    lsp.register_lspconfig()
  end

  -- Manifests opened before setup() ran (lazy loading).
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and lsp.is_manifest(vim.api.nvim_buf_get_name(bufnr)) then
      on_manifest({ buf = bufnr })
    end
  end
end

return M
