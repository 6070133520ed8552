-- Reading the server's answers: strings, lists and counts that may be missing, the lines of a `text` field
-- (the server renders run events, smoke reports and outcomes; docs/lsp-extensions.md), the level of smoke
-- reports, a run's ending, and JSON with sorted keys. Plain functions: nothing here touches a buffer or a client.

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

--- The strings of a server `text` field (a list of lines; anything else gives none).
function M.lines(value)
  return vim.tbl_filter(function(line)
    return type(line) == "string"
  end, M.list(value))
end

--- The message of an error answer: its `message`, else the whole error.
function M.error_message(err)
  return tostring(err.message or vim.inspect(err))
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

--- The text and level of a `workbench.smoke` answer: each report's lines as the server wrote them; the worst
--- status decides the level.
function M.smoke_message(reports)
  if type(reports) ~= "table" or #reports == 0 then
    return "smoke: no package was checked", vim.log.levels.WARN
  end
  local lines, level = {}, vim.log.levels.INFO
  for _, report in ipairs(reports) do
    vim.list_extend(lines, M.lines(report.text))
    local report_level = SMOKE_LEVELS[report.status] or vim.log.levels.ERROR
    if report_level > level then
      level = report_level
    end
  end
  return table.concat(lines, "\n"), level
end

return M
