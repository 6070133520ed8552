-- The user commands (:WorkbenchMigrate, :WorkbenchCheck, the run commands of workbench.run, the runs commands of
-- workbench.runs, the outcome commands of workbench.outcome and the trial commands of workbench.trials), and the two that act on the manifests' checks: migrate and check_workspace.

local lsp = require("workbench.client")
local outcome = require("workbench.outcome")
local run = require("workbench.run")
local runs = require("workbench.runs")
local trials = require("workbench.trials")
local ui = require("workbench.ui")

local M = {}

--- Migrates the current manifest to spec 1 (workspace/executeCommand `workbench.migrate`); the server sends the
--- edit back as workspace/applyEdit, which Neovim applies to the buffer.
function M.migrate()
  local uri = vim.uri_from_bufnr(vim.api.nvim_get_current_buf())
  lsp.execute("workbench.migrate", { uri }, function(result)
    if result.applied == false then
      ui.notify("the migration was not applied: " .. tostring(result.failureReason or "the edit was refused"), vim.log.levels.WARN)
    elseif result.migrated then
      ui.notify("migrated to spec 1")
    else
      ui.notify("nothing to migrate: the manifest is already on spec 1")
    end
  end)
end

--- Re-scans the workspace and re-checks every package (`workbench.checkWorkspace`).
function M.check_workspace()
  lsp.execute("workbench.checkWorkspace", {}, function(result)
    ui.notify(("checking %s package(s)"):format(tostring(result.packages or 0)))
  end)
end

--- Creates the :Workbench* commands. The run and outcome commands look their function up when they run, so one
--- replaced through require("workbench") is the one they call.
function M.register()
  vim.api.nvim_create_user_command("WorkbenchMigrate", M.migrate, {
    desc = "Migrate the current Workbench manifest to spec 1",
  })
  vim.api.nvim_create_user_command("WorkbenchCheck", M.check_workspace, {
    desc = "Re-check every Workbench package of the workspace",
  })
  -- The commands that call one function, with the command's arguments unless they take none.
  local simple = {
    { "WorkbenchDryRun", run, "dry_run", "*", "Show what the runner of the current Workbench would receive for a task" },
    { "WorkbenchSmoke", run, "smoke", 0, "Check that the current Workbench can start here" },
    { "WorkbenchRun", run, "run", "*", "Run the current Workbench on a task, streaming its events" },
    { "WorkbenchSession", run, "session", "*", "Start a session of the current Workbench on a task (its first turn)" },
    { "WorkbenchSend", run, "send", "*", "Send the last Workbench session its next turn" },
    { "WorkbenchCancel", run, "cancel", 0, "Cancel the Workbench run in progress" },
    { "WorkbenchRuns", runs, "show_runs", 0, "List the running and recent Workbench runs: attach, kill, open the outcome" },
    { "WorkbenchOutcome", outcome, "show_outcome", "?", "Show a run's outcome (default: the last run's): changes, artifacts, links" },
    { "WorkbenchOutcomeDiff", outcome, "outcome_diff", "?", "Open the review diff of an outcome (default: the last run's), read-only" },
    { "WorkbenchOutcomeFiles", outcome, "outcome_files", "?", "List an outcome's changed files (default: the last run's): diff each, apply one" },
    { "WorkbenchOutcomeArtifact", outcome, "outcome_artifact", "*", "Open an artifact of an outcome (default: the last run's), read-only" },
    { "WorkbenchTrial", trials, "trial", "*", "Run the current package's trial (reps=N parallel=N arms=workbench,plain)" },
    { "WorkbenchTrialReport", trials, "open_report", 0, "Open the report of the current package's latest trial" },
  }
  for _, entry in ipairs(simple) do
    local name, module, fn, nargs, desc = entry[1], entry[2], entry[3], entry[4], entry[5]
    vim.api.nvim_create_user_command(name, function(command)
      if nargs == 0 then
        module[fn]()
      else
        module[fn](command.args)
      end
    end, { nargs = nargs, desc = desc })
  end
  vim.api.nvim_create_user_command("WorkbenchAttach", function(command)
    run.attach(command.args)
  end, {
    nargs = 1,
    complete = runs.complete,
    desc = "Follow a Workbench run (its events replayed, then live) in a run buffer",
  })
  vim.api.nvim_create_user_command("WorkbenchKill", function(command)
    runs.kill({ id = command.args, confirm = not command.bang })
  end, { nargs = 1, bang = true, complete = runs.complete, desc = "Cancel a Workbench run (asks first; ! does not)" })
  vim.api.nvim_create_user_command("WorkbenchApplyOutcome", function(command)
    outcome.apply_outcome({ id = command.args, confirm = not command.bang })
  end, { nargs = "?", bang = true, desc = "Apply a pending outcome (default: the last run's) to its workspace" })
end

return M
