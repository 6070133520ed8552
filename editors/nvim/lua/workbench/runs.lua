-- The runs under the Workbench home (`workbench.runs`, `workbench.kill`; docs/lsp-extensions.md): :WorkbenchRuns
-- lists the running and recent runs (started here, in another editor or from the CLI: each is owned by its
-- supervisor and outlives the editor) in a scratch buffer whose keys attach (workbench.run's :WorkbenchAttach),
-- kill and open the outcome; :WorkbenchKill asks a run to stop.

local format = require("workbench.ui.format")
local lsp = require("workbench.client")
local outcome = require("workbench.outcome")
local run = require("workbench.run")
local ui = require("workbench.ui")

local M = {}

-- The runs buffer (one, read again in place) and the records it shows, by line.
M.last_runs_buffer = nil
-- The records of the last listing, newest first.
M.last_runs = {}
-- How many finished runs the list shows after the running ones.
M.RECENT = 20

local records_by_line = {}

-- Days since 1970-01-01 of a civil date (proleptic Gregorian), without the local time zone os.time would use.
local function days_from_civil(year, month, day)
  year = month <= 2 and year - 1 or year
  local era = math.floor(year / 400)
  local yoe = year - era * 400
  local mp = (month + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + day - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

--- Seconds since the epoch of an RFC 3339 UTC timestamp (`2026-12-04T10:00:00.123Z`), or nil.
function M.epoch_seconds(timestamp)
  if type(timestamp) ~= "string" then
    return nil
  end
  local y, mo, d, h, mi, s, fraction = timestamp:match("^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)(%.?%d*)Z$")
  if not y then
    return nil
  end
  local days = days_from_civil(tonumber(y), tonumber(mo), tonumber(d))
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(s) + (tonumber("0" .. fraction) or 0)
end

--- `12s`, `3m 05s`, `1h 02m`.
function M.format_elapsed(seconds)
  seconds = math.max(0, math.floor(seconds))
  if seconds < 60 then
    return ("%ds"):format(seconds)
  end
  local minutes = math.floor(seconds / 60)
  if minutes < 60 then
    return ("%dm %02ds"):format(minutes, seconds % 60)
  end
  return ("%dh %02dm"):format(math.floor(minutes / 60), minutes % 60)
end

--- `$0.2500`, or `cost unknown` when the runner reported none (never `$0`).
function M.format_cost(cost)
  if type(cost) == "number" then
    return ("$%.4f"):format(cost)
  end
  return "cost unknown"
end

--- How long the run went on (until now while it runs), in seconds, or nil.
function M.elapsed(record, now)
  local start = M.epoch_seconds(record.started_at)
  if not start then
    return nil
  end
  local stop = record.state ~= "running" and M.epoch_seconds(record.ended_at) or (now or os.time())
  return stop - start
end

--- The line of a run in the runs buffer: id, package, state, elapsed, cost, then the activity (running) or the
--- outcome and message. `width` pads the package name.
function M.run_line(record, now, width)
  local elapsed = M.elapsed(record, now)
  local parts = {
    record.run_id,
    ("%-" .. math.max(width or 1, 1) .. "s"):format(tostring(record.workbench)),
    ("%-9s"):format(tostring(record.state)),
    ("%7s"):format(elapsed and M.format_elapsed(elapsed) or "?"),
    M.format_cost(record.cost_usd),
  }
  if record.state == "running" and format.text(record.activity) then
    table.insert(parts, record.activity)
  end
  if record.session == true then
    table.insert(parts, ("session, %s turn%s"):format(tostring(record.turns or 0), record.turns == 1 and "" or "s"))
  end
  if format.text(record.outcome_id) then
    table.insert(parts, "outcome " .. record.outcome_id)
  end
  if format.text(record.message) then
    table.insert(parts, record.message)
  end
  return table.concat(parts, "  ")
end

-- The records of a `workbench.runs` answer: the running ones, then the RECENT newest finished ones.
local function listed(answer)
  local running, finished = {}, {}
  for _, record in ipairs(format.list(answer)) do
    if type(record) == "table" and run.is_run_id(record.run_id) and format.text(record.state) then
      if record.state == "running" or record.state == "idle" then
        table.insert(running, record)
      elseif #finished < M.RECENT then
        table.insert(finished, record)
      end
    end
  end
  return vim.list_extend(running, finished)
end

local HELP = "<CR>/a attach · s send a turn · X kill · o outcome · r refresh · q close"

local function render(bufnr, records)
  local now = os.time()
  local width = 0
  for _, record in ipairs(records) do
    width = math.max(width, #tostring(record.workbench))
  end
  local lines = { "Workbench runs — " .. HELP }
  records_by_line[bufnr] = {}
  for _, record in ipairs(records) do
    table.insert(lines, M.run_line(record, now, width))
    records_by_line[bufnr][#lines] = record
  end
  if #records == 0 then
    table.insert(lines, "No Workbench runs yet.")
  end
  ui.set_lines(bufnr, 0, -1, lines)
end

local function record_under_cursor(bufnr)
  local entries = records_by_line[bufnr] or {}
  local record = entries[vim.api.nvim_win_get_cursor(0)[1]]
  if not record then
    ui.notify("no run on this line", vim.log.levels.WARN)
  end
  return record
end

-- `workbench.runs` with `all`; `on_records(records)` gets the listed records.
local function fetch(on_records)
  local client = lsp.any_client()
  if not client then
    ui.notify("no wb-lsp client is running: open a manifest first", vim.log.levels.WARN)
    return
  end
  lsp.execute_on(client, vim.api.nvim_get_current_buf(), "workbench.runs", { { all = true } }, function(answer)
    M.last_runs = listed(answer)
    on_records(M.last_runs)
  end, nil, function(err)
    ui.notify("cannot list the runs: " .. format.error_message(err), vim.log.levels.ERROR)
  end)
end

--- Reads the runs again into the runs buffer, when it is open.
function M.refresh_runs()
  local bufnr = M.last_runs_buffer
  if not bufnr or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  fetch(function(records)
    if vim.api.nvim_buf_is_valid(bufnr) then
      render(bufnr, records)
    end
  end)
end

--- Asks before killing; returns true to go on. Replaceable (the tests answer it).
function M.confirm_kill(message)
  return vim.fn.confirm(message, "&Kill\n&Cancel", 2, "Question") == 1
end

--- `:WorkbenchKill[!] {run}`: asks the run's supervisor to cancel it (`workbench.kill`): the runner stops and the
--- partial outcome is collected. Asks first (`confirm_kill`), not with `!`. From Lua: kill({ id = ..., confirm =
--- false }) or kill(id).
function M.kill(options)
  if type(options) ~= "table" then
    options = { id = options }
  end
  local id = type(options.id) == "string" and vim.trim(options.id) or ""
  if not run.is_run_id(id) then
    ui.notify(("not a run id: %s (wb_…; :WorkbenchRuns lists them)"):format(id), vim.log.levels.WARN)
    return
  end
  local name = id
  for _, record in ipairs(M.last_runs) do
    if record.run_id == id then
      name = ("%s (%s)"):format(tostring(record.workbench), id)
    end
  end
  if options.confirm ~= false and not M.confirm_kill(("Kill run %s?\nThe runner stops; the partial outcome is collected."):format(name)) then
    ui.notify(("run %s goes on"):format(id))
    return
  end
  local client = lsp.any_client()
  if not client then
    ui.notify("no wb-lsp client is running: open a manifest first", vim.log.levels.WARN)
    return
  end
  lsp.execute_on(client, vim.api.nvim_get_current_buf(), "workbench.kill", { { runId = id } }, function()
    ui.notify(("asked run %s to stop"):format(name))
    M.refresh_runs()
    -- The run's state changes once its supervisor has cancelled it.
    vim.defer_fn(M.refresh_runs, 1000)
  end, nil, function(err)
    ui.notify(("cannot kill run %s: %s"):format(id, format.error_message(err)), vim.log.levels.ERROR)
  end)
end

--- `:WorkbenchRuns`: the running and recent runs (the running first, then the 20 newest finished ones) in a
--- scratch buffer `workbench://runs/N` (filetype `workbench-runs`), one line each: id, package, state, elapsed,
--- cost (or `cost unknown`), activity or outcome. Keys: <CR> or a attaches (:WorkbenchAttach), s sends an idle
--- session its next turn (:WorkbenchSend), X kills (:WorkbenchKill, confirmed), o opens the outcome
--- (:WorkbenchOutcome), r reads the list again, q closes.
--- Returns nothing; the buffer is M.last_runs_buffer once the answer came.
function M.show_runs()
  fetch(function(records)
    local bufnr = M.last_runs_buffer
    if bufnr and vim.api.nvim_buf_is_valid(bufnr) then
      if #vim.fn.win_findbuf(bufnr) == 0 then
        vim.cmd("botright split")
        vim.api.nvim_win_set_buf(0, bufnr)
      end
    else
      bufnr = ui.scratch_buffer("runs", "workbench-runs", false)
      M.last_runs_buffer = bufnr
      local function map(key, action, desc)
        vim.keymap.set("n", key, action, { buffer = bufnr, desc = desc, nowait = true })
      end
      local function attach()
        local record = record_under_cursor(bufnr)
        if record then
          if record.state == "lost" then
            ui.notify(("run %s is lost: its supervisor ended before the run did"):format(record.run_id), vim.log.levels.WARN)
            return
          end
          run.attach(record.run_id, record.workbench)
        end
      end
      map("<CR>", attach, "Workbench: attach to the run on this line")
      map("a", attach, "Workbench: attach to the run on this line")
      map("s", function()
        local record = record_under_cursor(bufnr)
        if record then
          if record.state ~= "idle" then
            ui.notify(("run %s is not a session waiting for a turn (%s)"):format(record.run_id, record.state), vim.log.levels.WARN)
            return
          end
          run.send({ id = record.run_id })
        end
      end, "Workbench: send the session on this line its next turn")
      map("X", function()
        local record = record_under_cursor(bufnr)
        if record then
          M.kill(record.run_id)
        end
      end, "Workbench: kill the run on this line")
      map("o", function()
        local record = record_under_cursor(bufnr)
        if record then
          if outcome.is_outcome_id(record.outcome_id) then
            outcome.show_outcome(record.outcome_id)
          else
            ui.notify(("run %s has no outcome%s"):format(record.run_id, record.state == "running" and " yet" or ""))
          end
        end
      end, "Workbench: open the outcome of the run on this line")
      map("r", M.refresh_runs, "Workbench: read the runs again")
      map("q", "<cmd>close<CR>", "Workbench: close the runs")
    end
    render(bufnr, records)
  end)
end

-- A run or an attach of this editor ended: the list changed.
run.on_run_end = function()
  M.refresh_runs()
end

--- Completion of a run id for :WorkbenchAttach and :WorkbenchKill: the ids of the last listing.
function M.complete(prefix)
  local ids = {}
  for _, record in ipairs(M.last_runs) do
    if record.run_id:sub(1, #prefix) == prefix then
      table.insert(ids, record.run_id)
    end
  end
  return ids
end

return M
