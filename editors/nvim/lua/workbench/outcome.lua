-- Outcomes (`workbench.outcome`, `workbench.applyOutcome`; docs/lsp-extensions.md): what a run returned
-- (changesets, artifacts, links) in a summary buffer where <CR> opens a line's review diff or artifact, the
-- stored files opened read-only once their digest matches, and applying a pending outcome after a confirmation.

local format = require("workbench.ui.format")
local lsp = require("workbench.client")
local ui = require("workbench.ui")

local M = {}

-- The outcome the outcome commands use without an id: the last run's, or the last one shown.
M.last_outcome_id = nil
-- The buffers the commands last opened: the summary, a review diff, an artifact.
M.last_outcome_buffer = nil
M.last_diff_buffer = nil
M.last_artifact_buffer = nil

--- True for an outcome id (`wbo_` and 20 to 64 lowercase letters and digits).
function M.is_outcome_id(value)
  return type(value) == "string" and #value >= 24 and #value <= 68 and value:match("^wbo_[a-z0-9]+$") ~= nil
end

-- `workbench.outcome` for an id; `on_outcome(result)` gets { outcome, receipt, files }.
local function fetch_outcome(id, on_outcome, client)
  client = client or lsp.any_client()
  if not client then
    ui.notify("no wb-lsp client is running: open a manifest first", vim.log.levels.WARN)
    return
  end
  lsp.execute_on(client, vim.api.nvim_get_current_buf(), "workbench.outcome", { id }, function(result)
    if type(result.outcome) ~= "table" or type(result.receipt) ~= "table" then
      ui.notify("the server answered workbench.outcome with something unexpected", vim.log.levels.ERROR)
      return
    end
    M.last_outcome_id = id
    on_outcome(result)
  end, nil, function(err)
    ui.notify(("cannot read outcome %s: %s"):format(id, format.error_message(err)), vim.log.levels.ERROR)
  end)
end

-- The outcome id a command works on: the one given, else the last one. Nil (after saying so) when none.
local function outcome_id(id)
  if type(id) == "string" and vim.trim(id) ~= "" then
    id = vim.trim(id)
    if not M.is_outcome_id(id) then
      ui.notify(("not an outcome id: %s (wbo_…)"):format(id), vim.log.levels.WARN)
      return nil
    end
    return id
  end
  if M.last_outcome_id then
    return M.last_outcome_id
  end
  ui.notify("no outcome yet: run the Workbench, or give an outcome id (wbo_…)", vim.log.levels.WARN)
  return nil
end

--- After a run that committed an outcome: one notification with what it holds and the commands for it.
function M.announce_outcome(client, id)
  fetch_outcome(id, function(result)
    local state = tostring(result.receipt.state)
    local hint = state == "pending" and ":WorkbenchOutcome shows it, :WorkbenchApplyOutcome applies it"
      or ":WorkbenchOutcome shows it"
    ui.notify(("outcome %s (%s): %s. %s"):format(id, state, tostring(result.brief), hint))
  end, client)
end

-- Per outcome buffer: { id = outcome id, targets = { [line] = target } } for <CR>.
local outcome_buffers = {}

local open_target

--- `:WorkbenchOutcome [id]`: the outcome's summary (changes, artifacts, links) in a scratch buffer
--- `workbench://outcome/N` (filetype `workbench-outcome`). <CR> on a change opens the review diff, on an
--- artifact the artifact. Without an id: the last run's outcome.
function M.show_outcome(id)
  id = outcome_id(id)
  if not id then
    return
  end
  fetch_outcome(id, function(result)
    -- The server's summary (the text of `wb-lsp outcome ID`); a line naming a changeset or an artifact opens it.
    local lines, targets = {}, {}
    for index, line in ipairs(format.list(result.lines)) do
      line = type(line) == "table" and line or { text = line }
      lines[index] = tostring(line.text)
      if format.text(line.changeset) then
        targets[index] = { kind = "review", changeset = line.changeset }
      elseif format.text(line.artifact) then
        targets[index] = { kind = "artifact", id = line.artifact }
      end
    end
    table.insert(lines, "")
    table.insert(lines, "<CR> on a change opens the review diff (:WorkbenchOutcomeDiff), on an artifact the artifact")
    table.insert(lines, "(:WorkbenchOutcomeArtifact [name]).")
    if result.receipt.state == "pending" then
      table.insert(lines, "Pending: :WorkbenchApplyOutcome applies it to its workspace.")
    end
    local bufnr = ui.scratch_buffer("outcome", "workbench-outcome", false)
    ui.set_lines(bufnr, 0, -1, lines)
    outcome_buffers[bufnr] = { id = id, targets = targets }
    vim.keymap.set("n", "<CR>", function()
      local entry = outcome_buffers[bufnr]
      local target = entry and entry.targets[vim.api.nvim_win_get_cursor(0)[1]]
      if target then
        open_target(entry.id, target)
      end
    end, { buffer = bufnr, desc = "Open the review diff or the artifact on this line" })
    M.last_outcome_buffer = bufnr
  end)
end

-- The stored bytes of a file the server named, checked against their digest. Returns the text, or nil and
-- why not (binary content is not opened: its path is given instead).
local function read_stored(file, content)
  local handle = type(file) == "string" and io.open(file, "rb")
  if not handle then
    return nil, ("cannot read %s"):format(tostring(file))
  end
  local bytes = handle:read("*a")
  handle:close()
  if bytes:find("\0", 1, true) then
    return nil, ("it is binary (%s, %d bytes); the stored file is %s"):format(
      tostring(content.media_type),
      #bytes,
      file
    )
  end
  if type(content.digest) ~= "string" or "sha256:" .. vim.fn.sha256(bytes) ~= content.digest then
    return nil, ("the stored content of %s does not match its digest %s"):format(file, tostring(content.digest))
  end
  return bytes
end

-- A name as one path segment.
local function safe_name(name)
  local cleaned = tostring(name):gsub("[/\\%c]", "_")
  if cleaned == "" or cleaned == "." or cleaned == ".." then
    return "artifact"
  end
  return cleaned
end

local function open_review(result, changeset_id)
  local file
  for _, review in ipairs(format.list(result.files and result.files.reviews)) do
    if review.changeset == changeset_id then
      file = review.file
    end
  end
  local changeset
  for _, candidate in ipairs(format.list(result.outcome.changesets)) do
    if candidate.id == changeset_id then
      changeset = candidate
    end
  end
  if not file or not changeset or type(changeset.review) ~= "table" then
    ui.notify(("changeset %s has no review diff"):format(tostring(changeset_id)), vim.log.levels.WARN)
    return nil
  end
  local bytes, why = read_stored(file, changeset.review)
  if not bytes then
    ui.notify("cannot open the review diff: " .. why, vim.log.levels.ERROR)
    return nil
  end
  local bufnr = ui.read_only_buffer("diff", safe_name(changeset_id) .. ".diff", ui.lines_of(bytes), "diff")
  M.last_diff_buffer = bufnr
  return bufnr
end

local function open_artifact(result, artifact)
  local file
  for _, stored in ipairs(format.list(result.files and result.files.artifacts)) do
    if stored.id == artifact.id then
      file = stored.file
    end
  end
  local content = type(artifact.content) == "table" and artifact.content or {}
  local bytes, why = read_stored(file, content)
  if not bytes then
    ui.notify(("cannot open %s: %s"):format(tostring(artifact.name), why), vim.log.levels.WARN)
    return nil
  end
  local name = safe_name(artifact.name)
  local bufnr = ui.read_only_buffer("artifact", name, ui.lines_of(bytes), nil)
  ui.detect_filetype(bufnr, name)
  M.last_artifact_buffer = bufnr
  return bufnr
end

-- The server's label of a changeset: `primary workspace: 1 added, 0 modified, 0 deleted`.
local function changeset_label(result, changeset_id)
  for _, changeset in ipairs(format.list(result.changesets)) do
    if changeset.id == changeset_id then
      return tostring(changeset.text)
    end
  end
  return "?"
end

-- Asks with vim.ui.select when there are several; calls `choose(item)` with the one chosen.
local function pick(items, prompt, label, choose)
  if #items == 1 then
    choose(items[1])
    return
  end
  vim.ui.select(items, { prompt = prompt, format_item = label }, function(item)
    if item then
      choose(item)
    end
  end)
end

--- `:WorkbenchOutcomeDiff [id]`: the review diff of the outcome's changeset (asked for when there are several)
--- in a read-only scratch buffer with filetype `diff`.
function M.outcome_diff(id)
  id = outcome_id(id)
  if not id then
    return
  end
  fetch_outcome(id, function(result)
    local changesets = format.list(result.outcome.changesets)
    local reviewed = {}
    for _, changeset in ipairs(changesets) do
      if type(changeset.review) == "table" then
        table.insert(reviewed, changeset)
      end
    end
    if #reviewed == 0 then
      local why = #changesets == 0 and "has no changes" or "has no review diff"
      ui.notify(("outcome %s %s"):format(id, why))
      return
    end
    pick(reviewed, "Review diff of", function(changeset)
      return ("%s (%s)"):format(changeset.id, changeset_label(result, changeset.id))
    end, function(changeset)
      open_review(result, changeset.id)
    end)
  end)
end

--- `:WorkbenchOutcomeArtifact [id] [name]`: an artifact of the outcome (by name, id or outbox path; asked for
--- when there are several) in a read-only scratch buffer named after it, with the filetype its name gives.
--- Binary artifacts are not opened: their stored path is given.
function M.outcome_artifact(options)
  if type(options) == "string" then
    local words = vim.split(vim.trim(options), "%s+")
    if M.is_outcome_id(words[1]) then
      options = { id = table.remove(words, 1), name = table.concat(words, " ") }
    else
      options = { name = table.concat(words, " ") }
    end
  end
  options = options or {}
  local id = outcome_id(options.id)
  if not id then
    return
  end
  fetch_outcome(id, function(result)
    local wanted = format.text(options.name)
    local artifacts = {}
    for _, artifact in ipairs(format.list(result.outcome.artifacts)) do
      if not wanted or artifact.name == wanted or artifact.id == wanted or artifact.path == wanted then
        table.insert(artifacts, artifact)
      end
    end
    if #artifacts == 0 then
      local what = wanted and (" named " .. options.name) or ""
      ui.notify(("outcome %s has no artifact%s"):format(id, what))
      return
    end
    pick(artifacts, "Artifact", function(artifact)
      local content = type(artifact.content) == "table" and artifact.content or {}
      local size = format.count(content.size_bytes)
      return ("%s (%s, %d bytes)"):format(tostring(artifact.name), tostring(content.media_type), size)
    end, function(artifact)
      open_artifact(result, artifact)
    end)
  end)
end

open_target = function(id, target)
  fetch_outcome(id, function(result)
    if target.kind == "review" then
      open_review(result, target.changeset)
      return
    end
    for _, artifact in ipairs(format.list(result.outcome.artifacts)) do
      if artifact.id == target.id then
        open_artifact(result, artifact)
      end
    end
  end)
end

-- The marks of the change kinds, as `wb-lsp outcome` prints them.
local MARKS = { added = "A", modified = "M", deleted = "D", mode_changed = "M", link = "L" }

-- `+3 −1`, `binary`, `mode`, `link`; then `(taken)` once the file was applied on its own.
local function change_counts(entry)
  local counts
  if entry.kind == "mode_changed" then
    counts = "mode"
  elseif entry.kind == "link" then
    counts = "link"
  elseif entry.binary then
    counts = "binary"
  else
    local parts = {}
    if format.count(entry.additions) > 0 then
      table.insert(parts, "+" .. format.count(entry.additions))
    end
    if format.count(entry.deletions) > 0 then
      table.insert(parts, "−" .. format.count(entry.deletions))
    end
    counts = table.concat(parts, " ")
  end
  return counts .. (entry.taken and "  (taken)" or "")
end

-- What one side of a change shows: its text, or a line saying what it is.
local function side_lines(side)
  if side.kind == "text" then
    return ui.lines_of(tostring(side.text))
  elseif side.kind == "binary" then
    return { ("(binary file, %d bytes)"):format(format.count(side.size_bytes)) }
  elseif side.kind == "link" then
    return { ("(symbolic link to %s)"):format(tostring(side.target)) }
  elseif side.kind == "not_kept" then
    return { ("(the earlier content, %d bytes, was not kept and the workspace no longer holds it)"):format(format.count(side.size_bytes)) }
  end
  return {}
end

local file_count = 0

--- Opens a changed file of outcome `id` (its `label`) in a new tab: the before and after sides
--- (`workbench.outcomeFile`) in read-only buffers named like the file, side by side with `:diffthis`.
function M.open_file_diff(id, label)
  local client = lsp.any_client()
  if not client then
    ui.notify("no wb-lsp client is running: open a manifest first", vim.log.levels.WARN)
    return
  end
  local sides = {}
  local function show()
    file_count = file_count + 1
    local name = tostring(label):gsub(":", "/")
    vim.cmd("tabnew")
    local windows = {}
    for index, side in ipairs({ "before", "after" }) do
      if index == 2 then
        vim.cmd("rightbelow vsplit")
      end
      local bufnr = vim.api.nvim_create_buf(false, true)
      pcall(vim.api.nvim_buf_set_name, bufnr, ("workbench://%s/%d/%s"):format(side, file_count, name))
      vim.bo[bufnr].bufhidden = "wipe"
      vim.bo[bufnr].swapfile = false
      ui.set_lines(bufnr, 0, -1, side_lines(sides[side]))
      vim.bo[bufnr].readonly = true
      vim.api.nvim_win_set_buf(0, bufnr)
      ui.detect_filetype(bufnr, name)
      windows[index] = vim.api.nvim_get_current_win()
    end
    for _, window in ipairs(windows) do
      vim.api.nvim_win_call(window, function()
        vim.cmd("diffthis")
      end)
    end
    M.last_file_diff = { before = vim.api.nvim_win_get_buf(windows[1]), after = vim.api.nvim_win_get_buf(windows[2]) }
  end
  for _, side in ipairs({ "before", "after" }) do
    local argument = { id = id, path = label, side = side }
    lsp.execute_on(client, vim.api.nvim_get_current_buf(), "workbench.outcomeFile", { argument }, function(result)
      sides[side] = type(result) == "table" and result or { kind = "absent" }
      if sides.before and sides.after then
        show()
      end
    end, nil, function(err)
      ui.notify(("cannot open %s: %s"):format(label, format.error_message(err)), vim.log.levels.ERROR)
    end)
  end
end

-- Per files buffer: { id = outcome id, labels = { [line] = label } }.
local files_buffers = {}

--- `:WorkbenchOutcomeFiles [id]`: the outcome's changed files, one a line (`M  README.md  +1 −1`), in a scratch
--- buffer `workbench://outcome-files/N`: <CR> opens the file's diff in a tab, `a` applies that file alone
--- (a pending outcome's), `r` reads the list again.
function M.outcome_files(id, bufnr)
  id = outcome_id(id)
  if not id then
    return
  end
  fetch_outcome(id, function(result)
    local pending = result.receipt.state == "pending"
    local lines = {
      ("Outcome %s (%s) — <CR> diff%s · r refresh"):format(id, tostring(result.receipt.state), pending and " · a apply this file" or ""),
    }
    local labels, artifacts = {}, {}
    for _, entry in ipairs(format.list(result.entries)) do
      table.insert(lines, ("%s  %s  %s"):format(MARKS[entry.kind] or "?", tostring(entry.label), change_counts(entry)))
      labels[#lines] = entry.label
    end
    if #lines == 1 then
      table.insert(lines, "(no changed files)")
    end
    -- What else the outcome returned: <CR> on an artifact opens it read-only.
    for _, artifact in ipairs(format.list(result.outcome.artifacts)) do
      local content = type(artifact.content) == "table" and artifact.content or {}
      table.insert(lines, ("artifact  %s  %s, %d bytes"):format(tostring(artifact.name), tostring(content.media_type), format.count(content.size_bytes)))
      artifacts[#lines] = artifact
    end
    for _, link in ipairs(format.list(result.outcome.links)) do
      table.insert(lines, ("link  %s  %s"):format(tostring(link.label), tostring(link.uri)))
    end
    if not (bufnr and vim.api.nvim_buf_is_valid(bufnr)) then
      bufnr = ui.scratch_buffer("outcome-files", "workbench-outcome-files", false)
      local function label_here()
        local entry = files_buffers[bufnr]
        return entry, entry and entry.labels[vim.api.nvim_win_get_cursor(0)[1]]
      end
      vim.keymap.set("n", "<CR>", function()
        local entry, label = label_here()
        if label then
          M.open_file_diff(entry.id, label)
          return
        end
        local artifact = entry and entry.artifacts[vim.api.nvim_win_get_cursor(0)[1]]
        if artifact then
          fetch_outcome(entry.id, function(result)
            open_artifact(result, artifact)
          end)
        end
      end, { buffer = bufnr, desc = "Open this file's changes in a diff tab, or this artifact" })
      vim.keymap.set("n", "a", function()
        local entry, label = label_here()
        if label then
          M.apply_file(entry.id, label, { confirm = true, refresh = bufnr })
        end
      end, { buffer = bufnr, desc = "Apply this file of the outcome" })
      vim.keymap.set("n", "r", function()
        M.outcome_files(files_buffers[bufnr].id, bufnr)
      end, { buffer = bufnr, desc = "Read the changed files again" })
    end
    ui.set_lines(bufnr, 0, -1, lines)
    files_buffers[bufnr] = { id = id, labels = labels, artifacts = artifacts, result = result }
    M.last_files_buffer = bufnr
  end)
end

--- Sends `workbench.applyOutcome` with `argument` (any client: outcomes belong to the user); `what` names what
--- was not applied when it fails.
local function send_apply(argument, what, on_applied)
  local client = lsp.any_client()
  if not client then
    return
  end
  lsp.execute_on(client, vim.api.nvim_get_current_buf(), "workbench.applyOutcome", { argument }, on_applied, nil, function(err)
    ui.notify(("%s was not applied: %s"):format(what, format.error_message(err)), vim.log.levels.ERROR)
  end)
end

--- Applies one file of a pending outcome (`workbench.applyOutcome` with `only`), after a confirmation unless
--- `options.confirm` is false; `options.refresh`: a files buffer to read again afterwards.
function M.apply_file(id, label, options)
  options = options or {}
  if options.confirm ~= false and not M.confirm(("Apply %s of outcome %s?"):format(label, id)) then
    ui.notify(("%s was not applied"):format(label))
    return
  end
  send_apply({ id = id, only = { label } }, label, function(applied)
    ui.notify(("applied %s of outcome %s: %s (%s)"):format(label, id, tostring(applied.text), tostring(applied.applicationState)))
    if options.refresh then
      M.outcome_files(id, options.refresh)
    end
  end)
end

--- Asks before applying; returns true to go on. Replaceable (the tests answer it).
function M.confirm(message)
  return vim.fn.confirm(message, "&Apply\n&Cancel", 2, "Question") == 1
end

--- `:WorkbenchApplyOutcome[!] [id]`: applies a pending outcome to its workspace (`workbench.applyOutcome`, all or
--- nothing), after a confirmation (not with !). A present or applied outcome is not sent: there is nothing to
--- apply. From Lua: apply_outcome({ id = ..., workspace = "/path", confirm = false }).
function M.apply_outcome(options)
  if type(options) ~= "table" then
    options = { id = options }
  end
  local id = outcome_id(options.id)
  if not id then
    return
  end
  fetch_outcome(id, function(result)
    local state = result.receipt.state
    if state ~= "pending" then
      ui.notify(("outcome %s is %s: %s; nothing to apply"):format(id, tostring(state), tostring(result.receiptText)))
      return
    end
    local lines = { ("Apply outcome %s to its workspace?"):format(id) }
    for _, changeset in ipairs(format.list(result.changesets)) do
      table.insert(lines, tostring(changeset.text))
    end
    table.insert(lines, "All or nothing: if a file changed since the run, nothing is written.")
    if options.confirm ~= false and not M.confirm(table.concat(lines, "\n")) then
      ui.notify(("outcome %s was not applied"):format(id))
      return
    end
    local argument = { id = id }
    if format.text(options.workspace) then
      argument.workspace = options.workspace
    end
    send_apply(argument, ("outcome %s"):format(id), function(applied)
      ui.notify(("applied outcome %s: %s"):format(id, tostring(applied.text)))
    end)
  end)
end

return M
