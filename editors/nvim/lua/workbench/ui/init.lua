-- What the plugin shows in the editor besides the server's own features: messages (vim.notify with a
-- `[workbench]` prefix) and scratch buffers named `workbench://KIND/N`, read-only where they hold stored
-- content, with a filetype detected from a file name also on Neovim 0.7.

local M = {}

function M.notify(message, level)
  vim.notify("[workbench] " .. message, level or vim.log.levels.INFO)
end

local scratch_count = 0

--- A new scratch buffer (not listed, not a file) named `workbench://<kind>/<n>` (with `/<name>` after it when
--- given), shown in a split at the bottom. With `keep_focus` the cursor stays in the current window.
function M.scratch_buffer(kind, filetype, keep_focus, name)
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

--- Replaces lines of a buffer the user cannot modify.
function M.set_lines(bufnr, first, last, lines)
  vim.bo[bufnr].modifiable = true
  vim.api.nvim_buf_set_lines(bufnr, first, last, false, lines)
  vim.bo[bufnr].modifiable = false
end

--- Appends lines to a scratch buffer (replacing its first, empty line) and scrolls its windows to the end.
function M.append(bufnr, lines)
  if #lines == 0 or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local count = vim.api.nvim_buf_line_count(bufnr)
  if count == 1 and vim.api.nvim_buf_get_lines(bufnr, 0, 1, false)[1] == "" then
    M.set_lines(bufnr, 0, 1, lines)
  else
    M.set_lines(bufnr, count, count, lines)
  end
  local last = vim.api.nvim_buf_line_count(bufnr)
  for _, window in ipairs(vim.fn.win_findbuf(bufnr)) do
    pcall(vim.api.nvim_win_set_cursor, window, { last, 0 })
  end
end

--- A read-only scratch buffer with the given lines, filetype and name.
function M.read_only_buffer(kind, name, lines, filetype)
  local bufnr = M.scratch_buffer(kind, filetype, false, name)
  M.set_lines(bufnr, 0, -1, lines)
  vim.bo[bufnr].readonly = true
  return bufnr
end

--- The lines of a text (a final newline ends the last line rather than starting an empty one).
function M.lines_of(bytes)
  local lines = vim.split(bytes, "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  return lines
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

--- The filetype of a file's name, set on the buffer. Neovim 0.8+: vim.filetype.match{filename}. 0.7:
--- vim.filetype.match(name, bufnr) sets it itself, except where it goes through `:setfiletype`, which does
--- nothing inside an autocommand that already set a filetype; the extension then decides.
function M.detect_filetype(bufnr, name)
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

return M
