-- What the plugin sets up in a manifest buffer when the client attaches: `omnifunc` (so <C-x><C-o> completes),
-- buffer-local mappings for hover, definition, references and code actions (each can be changed or turned off
-- in setup()), and, before Neovim 0.11, the insertion of completions of several lines.

local M = {}

-- What each mapping does, by its name in setup({ mappings = { ... } }).
M.actions = {
  hover = { rhs = "hover", desc = "Workbench: hover documentation" },
  definition = { rhs = "definition", desc = "Workbench: go to definition" },
  references = { rhs = "references", desc = "Workbench: references" },
  code_action = { rhs = "code_action", desc = "Workbench: code actions (quick fixes, migrate)" },
}

-- The order the mappings are made in (and documented).
M.order = { "hover", "definition", "references", "code_action" }

local function set_mappings(bufnr, mappings)
  if type(mappings) ~= "table" then
    return
  end
  for _, name in ipairs(M.order) do
    local lhs = mappings[name]
    if type(lhs) == "string" and lhs ~= "" then
      local action = M.actions[name]
      vim.keymap.set("n", lhs, function()
        vim.lsp.buf[action.rhs]()
      end, { buffer = bufnr, silent = true, desc = action.desc })
    end
  end
end

--- The LSP item behind a completed `complete()` item, or nil.
local function lsp_item(completed)
  local data = type(completed) == "table" and completed.user_data
  if type(data) ~= "table" or type(data.nvim) ~= "table" or type(data.nvim.lsp) ~= "table" then
    return nil
  end
  return data.nvim.lsp.completion_item
end

-- Before 0.11, vim.lsp.omnifunc hands the item's text to complete(), which cannot insert a line break: a key
-- block arrives as one line with NUL characters where its lines end. The word just inserted is split into
-- its lines again.
local function split_multiline_completion()
  local completed = vim.v.completed_item
  local word = type(completed) == "table" and completed.word
  if type(word) ~= "string" or not word:find("\n", 1, true) or lsp_item(completed) == nil then
    return
  end
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local line = vim.api.nvim_get_current_line()
  local joined = (word:gsub("\n", "\0"))
  local start = col - #joined
  if start < 0 or line:sub(start + 1, col) ~= joined then
    return
  end
  local lines = vim.split(word, "\n", { plain = true })
  vim.api.nvim_buf_set_text(0, row - 1, start, row - 1, col, lines)
  vim.api.nvim_win_set_cursor(0, { row + #lines - 1, #lines[#lines] })
end

--- Sets up a manifest buffer for the options of setup() (`omnifunc`, `mappings`).
function M.setup_buffer(bufnr, config)
  if config.omnifunc then
    vim.bo[bufnr].omnifunc = "v:lua.vim.lsp.omnifunc"
  end
  set_mappings(bufnr, config.mappings)
  if vim.fn.has("nvim-0.11") == 0 then
    local group = vim.api.nvim_create_augroup("workbench_completion_" .. bufnr, { clear = true })
    vim.api.nvim_create_autocmd("CompleteDone", {
      group = group,
      buffer = bufnr,
      callback = split_multiline_completion,
    })
  end
end

return M
