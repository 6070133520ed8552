-- Trials: :WorkbenchTrial runs the current package's trial (`workbench.trial`: every task in each arm, graded by
-- gates the agent never sees) with its progress in the messages; :WorkbenchTrialReport opens the latest trial's
-- report.html with the system's opener (vim.g.workbench_open_command, default xdg-open or open).

local lsp = require("workbench.client")
local ui = require("workbench.ui")

local M = {}

--- The job of the last trial run or opened here (workbench.trials' shape: jobId, summary, reportHtml, ...).
M.last_trial = nil

local trials_started = 0

local function manifest_uri(what)
  local bufnr = vim.api.nvim_get_current_buf()
  if not lsp.is_manifest(vim.api.nvim_buf_get_name(bufnr)) then
    ui.notify("open a Workbench manifest (workbench.yml) to " .. what, vim.log.levels.WARN)
    return nil
  end
  return vim.uri_from_bufnr(bufnr)
end

--- Opens `path` (a report) with the system's opener, detached from Neovim.
function M.open(path)
  local opener = vim.g.workbench_open_command or (vim.fn.has("mac") == 1 and "open" or "xdg-open")
  local job = vim.fn.jobstart({ opener, path }, { detach = true })
  if job <= 0 then
    ui.notify(("cannot start %s to open %s"):format(opener, path), vim.log.levels.ERROR)
  end
end

--- Runs the current package's trial. `args` is the command line's: `reps=N parallel=N arms=workbench,plain`.
function M.trial(args)
  local uri = manifest_uri("run its trial")
  if not uri then
    return
  end
  local argument = { uri = uri }
  for key, value in (args or ""):gmatch("(%w+)=(%S+)") do
    if key == "reps" or key == "parallel" then
      argument[key] = tonumber(value)
    elseif key == "arms" or key == "runtime" then
      argument[key] = value
    end
  end
  trials_started = trials_started + 1
  ui.notify("trial started: its progress shows as attempts end")
  lsp.execute("workbench.trial", { argument }, function(result)
    M.last_trial = result.job
    local job = result.job or {}
    local level = result.exitCode == 0 and vim.log.levels.INFO or vim.log.levels.WARN
    ui.notify(("%s (%s; :WorkbenchTrialReport opens its report)"):format(job.summary or "trial ended", job.jobId or "?"), level)
  end, { workDoneToken = "workbench-trial-" .. trials_started })
end

--- Opens the report of the current package's latest trial.
function M.open_report()
  local uri = manifest_uri("open its latest trial's report")
  if not uri then
    return
  end
  lsp.execute("workbench.openTrialReport", { { uri = uri, open = false } }, function(job)
    M.last_trial = job
    if job.reportHtml then
      M.open(job.reportHtml)
      ui.notify(("opened %s: %s"):format(job.reportHtml, job.summary or ""))
    end
  end)
end

return M
