-- The text the plugin shows, from the server's answers: the lines of each run event, the smoke report, the
-- summary of an outcome (the text of `wb-lsp outcome ID`) and its one-line brief, and JSON with sorted keys.
-- Plain functions: nothing here touches a buffer or a client.

local M = {}

--- The value when it is a non-empty string, else nil.
function M.text(value)
  if type(value) == "string" and value ~= "" then
    return value
  end
  return nil
end

--- The value when it is a table, else an empty one.
function M.list(value)
  return type(value) == "table" and value or {}
end

--- The value as a number, 0 when it is not one.
function M.count(value)
  return tonumber(value) or 0
end

--- `1 link`, `2 links`.
function M.plural(n, word)
  return ("%d %s%s"):format(n, word, n == 1 and "" or "s")
end

--- The message of an error answer: its `message`, else the whole error.
function M.error_message(err)
  return tostring(err.message or vim.inspect(err))
end

--- `NAME VERSION` of a package (either may be missing), or `Workbench` when both are.
function M.package_label(workbench, version)
  local name = table.concat(vim.tbl_filter(function(part)
    return part ~= nil
  end, { M.text(workbench), M.text(version) }), " ")
  return name ~= "" and name or "Workbench"
end

local function with_detail(message)
  local detail = M.text(message)
  return detail and (": " .. detail) or ""
end

local ENDING_LEVELS = { completed = vim.log.levels.INFO, cancelled = vim.log.levels.WARN }

--- The message and level of a run's ending: `run completed`, `run cancelled`, `run failed: why`.
function M.run_ending(status, message)
  return ("run %s%s"):format(status, with_detail(message)), ENDING_LEVELS[status] or vim.log.levels.ERROR
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
  local detail = M.text(data.title) or M.text(data.target)
  local name = M.text(data.name) or "tool"
  return detail and ("%s (%s)"):format(name, detail) or name
end

local USAGE_FIELDS = {
  { "input_tokens", "input" },
  { "output_tokens", "output" },
  { "reasoning_tokens", "reasoning" },
  { "cache_read_tokens", "cache read" },
  { "cache_write_tokens", "cache write" },
}

local function usage(data)
  local parts = {}
  for _, field in ipairs(USAGE_FIELDS) do
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

-- The lines of a text: a buffer line holds no line break (a `\r` before one is dropped too).
local function split_lines(text)
  return vim.split(text, "\r?\n")
end

local function event_lines(event)
  local data = type(event.data) == "table" and event.data or {}
  local kind = event.type
  if kind == "run.started" then
    local runtime = M.text(data.runtime)
    return {
      ("▶ Run %s started: %s%s (%s)"):format(
        tostring(event.run_id),
        M.package_label(data.workbench, data.version),
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
    return { data.text }
  elseif kind == "tool.started" then
    return { ("⚙ %s started"):format(tool_label(data)) }
  elseif kind == "tool.completed" then
    if data.status == "failed" then
      return { ("✗ %s failed%s"):format(tool_label(data), with_detail(data.message)) }
    end
    return { ("✓ %s completed"):format(tool_label(data)) }
  elseif kind == "file.changed" then
    local tool = M.text(data.tool)
    return { ("✎ %s changed%s"):format(M.text(data.path) or "a file", tool and (" (" .. tool .. ")") or "") }
  elseif kind == "usage.updated" then
    return { "  usage: " .. usage(data) }
  elseif kind == "outcome.available" then
    return {
      ("  outcome %s (%s, %s, %s)"):format(
        M.text(data.outcome_id) or "?",
        M.plural(M.count(data.changesets), "changeset"),
        M.plural(M.count(data.artifacts), "artifact"),
        M.plural(M.count(data.links), "link")
      ),
    }
  elseif kind == "outcome.failed" then
    return { "  outcome failed" .. with_detail(data.message) }
  elseif kind == "run.completed" then
    return { "■ Run completed" .. duration(data) }
  elseif kind == "run.failed" then
    return { "■ Run failed" .. duration(data) .. with_detail(data.message) }
  elseif kind == "run.cancelled" then
    return { "■ Run cancelled" .. duration(data) }
  elseif kind == "runner.event" then
    return {}
  end
  return { ("  %s %s"):format(tostring(kind), vim.fn.json_encode(data)) }
end

--- The readable lines for one canonical event (protocol 0): text, tools, files changed, usage, the ending. A
--- message of several lines (a failed tool's or run's) gives as many lines.
function M.format_event(event)
  local lines = {}
  for _, line in ipairs(event_lines(event)) do
    vim.list_extend(lines, split_lines(line))
  end
  return lines
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

local SMOKE_LEVELS = { ready = vim.log.levels.INFO, ["needs-auth"] = vim.log.levels.WARN }

--- The text and level of a `workbench.smoke` answer (the worst status decides the level).
function M.format_smoke(reports)
  local lines, level = {}, vim.log.levels.INFO
  if type(reports) ~= "table" or #reports == 0 then
    return "smoke: no package was checked", vim.log.levels.WARN
  end
  for _, report in ipairs(reports) do
    table.insert(lines, ("smoke %s%s: %s"):format(
      M.package_label(report.workbench, report.version),
      M.text(report.runtime) and (" on " .. report.runtime) or "",
      tostring(report.status)
    ))
    local report_level = SMOKE_LEVELS[report.status] or vim.log.levels.ERROR
    if report_level > level then
      level = report_level
    end
    if type(report.runner) == "table" and M.text(report.runner.name) then
      local path = M.text(report.runner.path)
      table.insert(lines, "  runner: " .. report.runner.name .. (path and (" (" .. path .. ")") or ""))
    end
    for _, warning in ipairs(type(report.warnings) == "table" and report.warnings or {}) do
      table.insert(lines, "  warning: " .. tostring(warning))
    end
    if type(report.error) == "table" and M.text(report.error.message) then
      table.insert(lines, "  error: " .. report.error.message)
    end
  end
  return table.concat(lines, "\n"), level
end

--- `primary workspace` or `workspace NAME`.
function M.workspace_label(workspace)
  if type(workspace) == "table" and workspace.kind == "named" then
    return "workspace " .. tostring(workspace.name)
  end
  return "primary workspace"
end

local function stats_text(added, modified, deleted)
  return ("%d added, %d modified, %d deleted"):format(added, modified, deleted)
end

local function stats_of(changeset)
  local stats = type(changeset.stats) == "table" and changeset.stats or {}
  return M.count(stats.additions), M.count(stats.modifications), M.count(stats.deletions)
end

--- `1 added, 2 modified, 0 deleted` for one changeset.
function M.changeset_stats(changeset)
  return stats_text(stats_of(changeset))
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
  if M.text(outcome.summary) then
    -- As `wb-lsp outcome` prints it: continuation lines indented, so they cannot pass for lines of their own.
    for index, line in ipairs(split_lines(outcome.summary)) do
      table.insert(lines, (index == 1 and "Summary: " or "  ") .. line)
    end
  end
  local changesets = M.list(outcome.changesets)
  if #changesets == 0 then
    table.insert(lines, "Changesets: none")
  end
  for _, changeset in ipairs(changesets) do
    local target = { kind = "review", changeset = changeset.id }
    table.insert(lines, ("Changeset %s (%s): %s"):format(
      tostring(changeset.id),
      M.workspace_label(changeset.workspace),
      M.changeset_stats(changeset)
    ))
    targets[#lines] = target
    for _, entry in ipairs(M.list(changeset.entries)) do
      table.insert(lines, ("  %s %s"):format(MARKS[entry.operation] or "?", tostring(entry.path)))
      targets[#lines] = target
    end
  end
  local artifacts = M.list(outcome.artifacts)
  table.insert(lines, ("Artifacts: %d"):format(#artifacts))
  for _, artifact in ipairs(artifacts) do
    local content = type(artifact.content) == "table" and artifact.content or {}
    table.insert(lines, ("  %s%s: %s, %d bytes"):format(
      tostring(artifact.name),
      M.text(artifact.path) and (" (" .. artifact.path .. ")") or "",
      tostring(content.media_type),
      M.count(content.size_bytes)
    ))
    targets[#lines] = { kind = "artifact", id = artifact.id }
  end
  local links = M.list(outcome.links)
  table.insert(lines, ("Links: %d"):format(#links))
  for _, link in ipairs(links) do
    table.insert(lines, ("  %s%s: %s"):format(
      tostring(link.label),
      M.text(link.kind) and (" [" .. link.kind .. "]") or "",
      tostring(link.uri)
    ))
  end
  for _, warning in ipairs(M.list(outcome.warnings)) do
    table.insert(lines, ("warning: %s (%s)"):format(tostring(warning.message), tostring(warning.code)))
  end
  return lines
end

--- One line: `1 added, 1 modified, 1 deleted; 1 artifact; 1 link` (changes summed over the changesets).
function M.outcome_brief(outcome)
  local added, modified, deleted = 0, 0, 0
  for _, changeset in ipairs(M.list(outcome.changesets)) do
    local a, m, d = stats_of(changeset)
    added, modified, deleted = added + a, modified + m, deleted + d
  end
  local changes = added + modified + deleted == 0 and "no changes" or stats_text(added, modified, deleted)
  local artifacts = M.plural(#M.list(outcome.artifacts), "artifact")
  local links = M.plural(#M.list(outcome.links), "link")
  return ("%s; %s; %s"):format(changes, artifacts, links)
end

return M
