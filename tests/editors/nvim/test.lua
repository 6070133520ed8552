-- Drives headless Neovim (with editors/nvim on the runtimepath) against the real wb-lsp binary.
--
-- Environment: WB_LSP_BIN (the server), WB_TEST_REPO (a copy of fixtures/cases/unsupported-runner),
-- WB_TEST_LEGACY_REPO (a copy of fixtures/example-repo), WB_TEST_RUN_REPO (a valid package whose runner is the
-- fake `opencode` that run.sh puts on PATH), WB_TEST_TIMEOUT_MS (per wait, default 20000).
-- Exits 0 when every check passes; otherwise prints what failed and exits 1.

local TIMEOUT = tonumber(os.getenv("WB_TEST_TIMEOUT_MS") or "") or 20000

local function out(message)
  io.stdout:write(message .. "\n")
  io.stdout:flush()
end

local function fail(message)
  error({ workbench_test_failure = message }, 2)
end

local function check(condition, message)
  if not condition then
    fail(message)
  end
end

local function env(name)
  local value = os.getenv(name)
  check(value and value ~= "", "the environment variable " .. name .. " is not set")
  return value
end

--- Polls `condition` until it returns a truthy value; fails with `what` on timeout.
local function wait_for(what, condition)
  local value
  local ok = vim.wait(TIMEOUT, function()
    value = condition()
    return value ~= nil and value ~= false
  end, 20)
  check(ok, ("timed out after %d ms waiting for %s"):format(TIMEOUT, what))
  return value
end

local function read(path)
  local handle = io.open(path, "rb")
  if not handle then
    return nil
  end
  local text = handle:read("*a")
  handle:close()
  return text
end

local function request(bufnr, method, params)
  local responses, err = vim.lsp.buf_request_sync(bufnr, method, params, TIMEOUT)
  check(responses ~= nil, ("%s: no response (%s)"):format(method, tostring(err)))
  for _, response in pairs(responses) do
    check(response.err == nil, ("%s failed: %s"):format(method, vim.inspect(response.err)))
    return response.result
  end
  fail(method .. ": no client answered")
end

local function position_params(bufnr, line, character)
  return { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = { line = line, character = character } }
end

local function labels(result)
  local items = result and (result.items or result) or {}
  local names = {}
  for _, item in ipairs(items) do
    table.insert(names, item.label)
  end
  return names
end

local function contains(list, wanted)
  for _, value in ipairs(list) do
    if value == wanted then
      return true
    end
  end
  return false
end

local function hover_text(result)
  if not result or not result.contents then
    return ""
  end
  local contents = result.contents
  if type(contents) == "string" then
    return contents
  end
  if contents.value then
    return contents.value
  end
  local parts = {}
  for _, part in ipairs(contents) do
    table.insert(parts, type(part) == "string" and part or part.value or "")
  end
  return table.concat(parts, "\n")
end

local function ends_with(text, suffix)
  return text:sub(-#suffix) == suffix
end

local function termcodes(keys)
  return vim.api.nvim_replace_termcodes(keys, true, false, true)
end

--- Types what a person would: `A` (append at the end of the cursor's line), <C-x><C-o> (the buffer's
--- omnifunc), then, once the completion menu has items, <C-y> (accept) and <Esc>. Returns the menu's items.
local function omni_complete(what)
  local items
  local started = vim.loop.now()
  local timer = vim.loop.new_timer()
  timer:start(20, 20, vim.schedule_wrap(function()
    if items then
      return
    end
    local shown = vim.fn.complete_info({ "items" }).items
    if #shown > 0 or vim.loop.now() - started > TIMEOUT then
      items = shown
      timer:stop()
      timer:close()
      vim.api.nvim_feedkeys(termcodes("<C-y><Esc>"), "n", false)
    end
  end))
  -- "x!": the keys run as typed and insert mode is not left when they end, so the completion request is
  -- answered while Neovim waits for the next key (the timer's).
  vim.api.nvim_feedkeys(termcodes("A<C-x><C-o>"), "tx!", false)
  check(items and #items > 0, "<C-x><C-o> offered no completion for " .. what)
  return items
end

-- Messages sent through vim.notify (the plugin's command feedback) are recorded.
local notifications = {}
vim.notify = function(message, level)
  table.insert(notifications, { message = message, level = level })
  out("notify: " .. tostring(message))
end

local function notified(pattern)
  for _, entry in ipairs(notifications) do
    if tostring(entry.message):find(pattern) then
      return entry.message
    end
  end
  return nil
end

local function buffer_text(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
end

--- The loaded buffers whose name matches a Lua pattern.
local function buffers_named(pattern)
  local found = {}
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.api.nvim_buf_get_name(bufnr):find(pattern) then
      table.insert(found, bufnr)
    end
  end
  return found
end

--- :WorkbenchDryRun, :WorkbenchSmoke, :WorkbenchRun and :WorkbenchCancel on a package whose runner is a fake.
local function execution(workbench)
  local run_repo = env("WB_TEST_RUN_REPO")
  local manifest = run_repo .. "/.workbenches/demo/workbench.yml"
  vim.cmd("edit " .. vim.fn.fnameescape(manifest))
  local manifest_buf = vim.api.nvim_get_current_buf()
  local manifest_win = vim.api.nvim_get_current_win()
  wait_for("a workbench client for " .. run_repo, function()
    local c = workbench.client(manifest_buf)
    return c and c.initialized and c or nil
  end)

  -- :WorkbenchDryRun shows the translation as JSON in a scratch buffer.
  vim.cmd("WorkbenchDryRun say done")
  local dry = wait_for("the dry-run buffer", function()
    return buffers_named("^workbench://dry%-run/")[1]
  end)
  local translation = vim.json.decode(buffer_text(dry))
  check(translation.runner == "opencode", "dry run: runner " .. vim.inspect(translation.runner))
  check(translation.runtime == "local", "dry run: runtime " .. vim.inspect(translation.runtime))
  check(translation.command[#translation.command] == "say done", "dry run: command " .. vim.inspect(translation.command))
  check(vim.bo[dry].filetype == "json", "the dry-run buffer's filetype is " .. vim.bo[dry].filetype)
  check(vim.bo[dry].buftype == "nofile", "the dry-run buffer is not a scratch buffer")
  check(not buffer_text(dry):find("sk-test", 1, true), "the dry run shows a credential's value")
  out("ok: :WorkbenchDryRun shows the translation (" .. #vim.api.nvim_buf_get_lines(dry, 0, -1, false) .. " lines of JSON)")
  vim.cmd("close")
  check(vim.api.nvim_get_current_buf() == manifest_buf, "closing the dry run did not return to the manifest")

  -- :WorkbenchSmoke reports through vim.notify.
  vim.cmd("WorkbenchSmoke")
  local smoke = wait_for(":WorkbenchSmoke to report", function()
    return notified("demo is ready")
  end)
  -- The server's text for the report, as `wb-lsp smoke` prints it on a terminal.
  check(smoke:find("^%[workbench%] demo is ready\n"), "unexpected smoke report: " .. smoke)
  check(smoke:find("\ndemo: runner /[^\n]*/bin/opencode\n"), "the smoke report lacks the fake runner: " .. smoke)
  out("ok: :WorkbenchSmoke reports ready")

  -- :WorkbenchRun streams the events into a scratch buffer through the workbench/runEvent handler.
  vim.cmd("WorkbenchRun say done")
  check(vim.api.nvim_get_current_win() == manifest_win, "the run buffer took the focus")
  local run_buf = wait_for("the run buffer", function()
    return buffers_named("^workbench://run/")[1]
  end)
  wait_for("the run to complete in its buffer", function()
    return buffer_text(run_buf):find("■ Run completed", 1, true)
  end)
  wait_for("the run's completion to be notified", function()
    return notified("run completed")
  end)
  local lines = vim.api.nvim_buf_get_lines(run_buf, 0, -1, false)
  check(lines[1] == "── " .. manifest .. ": say done", "run buffer line 1: " .. vim.inspect(lines[1]))
  check(lines[2]:match("^▶ Run wb_%x+ started: demo 0%.1%.0 on local %(opencode%)$"), "run buffer line 2: " .. vim.inspect(lines[2]))
  check(lines[3] == "  the runner is ready", "run buffer line 3: " .. vim.inspect(lines[3]))
  check(lines[4] == "done", "run buffer line 4 (the runner's text): " .. vim.inspect(lines[4]))
  check(lines[5] == "  usage: 3 input, 1 output tokens", "run buffer line 5: " .. vim.inspect(lines[5]))
  check(lines[6]:match("^  outcome wbo_%w+ %(0 changesets, 0 artifacts, 0 links%)$"), "run buffer line 6: " .. vim.inspect(lines[6]))
  check(lines[7]:match("^■ Run completed in %d"), "run buffer line 7: " .. vim.inspect(lines[7]))
  check(#lines == 7, "the run buffer has more lines than expected:\n" .. table.concat(lines, "\n"))
  check(workbench.active_run == nil, "the run is still marked active")
  out("ok: :WorkbenchRun streamed " .. #lines .. " lines and completed")

  -- :WorkbenchCancel cancels a run in progress: it ends with run.cancelled.
  vim.cmd("WorkbenchRun slow task")
  local slow_buf = wait_for("a second run buffer", function()
    for _, bufnr in ipairs(buffers_named("^workbench://run/")) do
      if bufnr ~= run_buf then
        return bufnr
      end
    end
    return nil
  end)
  wait_for("the slow run to start writing", function()
    return buffer_text(slow_buf):find("\nworking", 1, true)
  end)
  vim.cmd("WorkbenchCancel")
  wait_for("the run to end cancelled", function()
    return buffer_text(slow_buf):find("■ Run cancelled", 1, true)
  end)
  wait_for("the cancellation to be notified", function()
    return notified("run cancelled")
  end)
  check(workbench.active_run == nil, "the cancelled run is still marked active")
  out("ok: :WorkbenchCancel cancelled the run")

  -- Messages of several lines (a failed tool's, a failed run's): each of their lines is a line of the buffer,
  -- indented after the first so that they cannot pass for lines of their own; control characters are escaped.
  vim.cmd("WorkbenchRun this fails")
  local failed_buf = wait_for("a third run buffer", function()
    for _, bufnr in ipairs(buffers_named("^workbench://run/")) do
      if bufnr ~= run_buf and bufnr ~= slow_buf then
        return bufnr
      end
    end
    return nil
  end)
  wait_for("the run's failure to be notified", function()
    return notified("run failed: The model request failed")
  end)
  local failed = buffer_text(failed_buf)
  check(
    failed:find("\n✗ bash (ls missing) failed: exit status 2\n  ls: missing: No such file or directory\\u{1b}[0m\n", 1, true),
    "the failed tool's message is not in the run buffer:\n" .. failed
  )
  -- The runner's escape sequence arrives escaped, as `wb-lsp run` prints it: it cannot drive a terminal UI.
  check(not failed:find("\27", 1, true), "a raw escape character reached the run buffer:\n" .. failed)
  check(
    failed:match("\n■ Run failed in [%d.]+ m?s: The model request failed\n  rate limited %(429%)$"),
    "the failed run's message is not at the end of the run buffer:\n" .. failed
  )
  check(workbench.active_run == nil, "the failed run is still marked active")
  out("ok: :WorkbenchRun shows messages of several lines line by line")

  -- The failed run's outcome has a summary of two lines: :WorkbenchOutcome shows it as `wb-lsp outcome` prints it.
  local outcome_id = workbench.last_outcome_id
  check(workbench.is_outcome_id(outcome_id), "the failed run left no outcome: " .. tostring(outcome_id))
  vim.cmd("WorkbenchOutcome")
  local outcome_buf = wait_for("the failed run's outcome buffer", function()
    return buffers_named("^workbench://outcome/")[1]
  end)
  local shown = vim.api.nvim_buf_get_lines(outcome_buf, 0, -1, false)
  check(
    shown[2] == "Summary: Stopped early." and shown[3] == "  The model request failed.",
    "the outcome buffer:\n" .. table.concat(shown, "\n")
  )
  local cli = vim.fn.system({ env("WB_LSP_BIN"), "outcome", outcome_id })
  check(vim.v.shell_error == 0, "wb-lsp outcome failed: " .. cli)
  local cli_lines = vim.split(cli, "\n", { plain = true })
  table.remove(cli_lines)
  check(
    vim.deep_equal({ unpack(shown, 1, #cli_lines) }, cli_lines),
    "the outcome buffer differs from `wb-lsp outcome`:\n" .. cli .. "\n---\n" .. table.concat(shown, "\n")
  )
  out("ok: :WorkbenchOutcome shows a summary of several lines as `wb-lsp outcome` does")
end

local function run()
  local bin = env("WB_LSP_BIN")
  local repo = env("WB_TEST_REPO")
  local legacy_repo = env("WB_TEST_LEGACY_REPO")

  -- A stand-in for nvim-lspconfig's `lspconfig.configs` registry (the real one is not installed here), to
  -- check what the plugin registers with it.
  local lspconfig_configs = {}
  package.loaded["lspconfig.configs"] = lspconfig_configs

  local workbench = require("workbench")

  local manifest = repo .. "/.workbenches/typo/workbench.yml"
  -- The manifest is opened before setup() runs, as when a plugin manager loads the plugin lazily on the
  -- filetype: setup() attaches buffers already open. (The second repository below goes through the autocmd.)
  vim.cmd("edit " .. vim.fn.fnameescape(manifest))
  -- The settings section given bare (not under `workbench`): the plugin wraps it.
  workbench.setup({ cmd = { bin, "serve" }, settings = { severity = { ["unsupported-runner"] = "error" } } })

  local registered = lspconfig_configs.workbench
  check(registered and registered.default_config, "no `workbench` config was registered with nvim-lspconfig")
  check(registered.default_config.cmd[1] == bin, "the lspconfig cmd is " .. vim.inspect(registered.default_config.cmd))
  check(registered.default_config.root_dir(manifest) == repo, "the lspconfig root_dir of the manifest is wrong")
  check(registered.default_config.root_dir(repo .. "/README.md") == nil, "lspconfig would attach outside manifests")
  check(
    vim.deep_equal(registered.default_config.filetypes, { "yaml.workbench" }),
    "the lspconfig filetypes are " .. vim.inspect(registered.default_config.filetypes)
  )
  out("ok: a `workbench` config is registered with nvim-lspconfig")
  local bufnr = vim.api.nvim_get_current_buf()
  check(vim.bo[bufnr].filetype == "yaml.workbench", "filetype is " .. vim.bo[bufnr].filetype .. ", not yaml.workbench")
  out("ok: the manifest has filetype yaml.workbench")

  local client = wait_for("the workbench client to attach and initialize", function()
    local c = workbench.client(bufnr)
    return c and c.initialized and c or nil
  end)
  check(client.config.root_dir == repo, ("root_dir is %s, expected %s"):format(tostring(client.config.root_dir), repo))
  out("ok: wb-lsp attached with root " .. repo)

  -- Diagnostics: `runner: open-code` on line 4 (0-based 3) is an unsupported runner.
  local diagnostic = wait_for("a diagnostic on line 4 of " .. manifest, function()
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.lnum == 3 then
        return d
      end
    end
    return nil
  end)
  check(
    diagnostic.message == "Unsupported runner: open-code",
    "diagnostic message is " .. vim.inspect(diagnostic.message)
  )
  check(diagnostic.col == 8 and diagnostic.end_col == 17, ("diagnostic columns %d-%d, expected 8-17"):format(
    diagnostic.col,
    diagnostic.end_col
  ))
  check(diagnostic.code == "unsupported-runner", "diagnostic code " .. vim.inspect(diagnostic.code))
  out("ok: diagnostic 4:9 " .. diagnostic.message)

  -- Completion of the runner value.
  local runners = labels(request(bufnr, "textDocument/completion", position_params(bufnr, 3, 8)))
  check(contains(runners, "opencode"), "completion after `runner: ` lacks opencode: " .. vim.inspect(runners))
  out("ok: completion after `runner: ` offers " .. table.concat(runners, ", "))

  -- Hover on the `runner` key.
  local hover = hover_text(request(bufnr, "textDocument/hover", position_params(bufnr, 3, 2)))
  check(hover:find("**runner**", 1, true), "hover on `runner` lacks **runner**: " .. vim.inspect(hover))
  check(hover:find("runner: opencode", 1, true), "hover on `runner` lacks the example: " .. vim.inspect(hover))
  out("ok: hover on `runner` documents the field")

  -- The plugin's on_attach: omnifunc and buffer-local mappings.
  check(vim.bo[bufnr].omnifunc == "v:lua.vim.lsp.omnifunc", "omnifunc is " .. vim.inspect(vim.bo[bufnr].omnifunc))
  for lhs, desc in pairs({
    K = "Workbench: hover documentation",
    gd = "Workbench: go to definition",
    gr = "Workbench: references",
    ["<leader>ca"] = "Workbench: code actions (quick fixes, migrate)",
  }) do
    local map = vim.fn.maparg(lhs, "n", false, true)
    check(map.buffer == 1 and map.desc == desc, ("the %s mapping is %s"):format(lhs, vim.inspect(map)))
  end
  -- K opens the hover in a floating window.
  vim.api.nvim_win_set_cursor(0, { 4, 2 })
  vim.api.nvim_feedkeys("K", "x", false)
  local float = wait_for("K to show the hover in a floating window", function()
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_config(win).relative ~= "" then
        local text = buffer_text(vim.api.nvim_win_get_buf(win))
        if text:find("runner: opencode", 1, true) then
          return win
        end
      end
    end
    return nil
  end)
  vim.api.nvim_win_close(float, true)
  out("ok: on attach, omnifunc is vim.lsp.omnifunc and K, gd, gr, <leader>ca are mapped; K shows the hover")

  -- Go to definition on the `instructions:` value, through the real UI command.
  vim.api.nvim_win_set_cursor(0, { 7, 18 })
  vim.lsp.buf.definition()
  local instructions = repo .. "/.workbenches/typo/instructions.md"
  wait_for("go-to-definition to open " .. instructions, function()
    return vim.api.nvim_buf_get_name(0) == instructions
  end)
  out("ok: go-to-definition on `instructions:` opened instructions.md")

  -- Completion of a missing top-level key on a new, empty line (an incremental didChange first).
  vim.api.nvim_set_current_buf(bufnr)
  local last = vim.api.nvim_buf_line_count(bufnr)
  vim.api.nvim_buf_set_lines(bufnr, last, last, false, { "" })
  local keys = labels(request(bufnr, "textDocument/completion", position_params(bufnr, last, 0)))
  check(contains(keys, "description"), "top-level completion lacks description: " .. vim.inspect(keys))
  check(not contains(keys, "runner"), "top-level completion offers runner, which is already present")
  out("ok: completion on an empty top-level line offers description")

  -- <C-x><C-o> inserts a key block as plain text of several lines (Neovim 0.7 takes no snippets).
  vim.api.nvim_buf_set_lines(bufnr, last, last + 1, false, { "wor" })
  vim.api.nvim_win_set_cursor(0, { last + 1, 0 })
  omni_complete("`wor`")
  local block = vim.api.nvim_buf_get_lines(bufnr, last, -1, false)
  check(
    vim.deep_equal(block, { "workspaces:", "  name:", "    access: read-only" }),
    "completing `wor` inserted " .. vim.inspect(block)
  )
  check(vim.api.nvim_get_mode().mode == "n", "completion left Neovim in mode " .. vim.api.nvim_get_mode().mode)
  vim.api.nvim_buf_set_lines(bufnr, last, -1, false, { "" })
  out("ok: <C-x><C-o> on `wor` inserts the workspaces block, line by line")

  -- And a value after `runner: `.
  vim.api.nvim_buf_set_lines(bufnr, 3, 4, false, { "runner: o" })
  vim.api.nvim_win_set_cursor(0, { 4, 0 })
  omni_complete("`runner: o`")
  local runner_line = vim.api.nvim_buf_get_lines(bufnr, 3, 4, false)[1]
  check(runner_line == "runner: opencode", "completing `runner: o` gave " .. vim.inspect(runner_line))
  out("ok: <C-x><C-o> after `runner: o` inserts opencode")

  -- Fixing the runner clears the diagnostic.
  vim.api.nvim_buf_set_lines(bufnr, 3, 4, false, { "runner: opencode" })
  wait_for("the diagnostic on line 4 to clear after the fix", function()
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.lnum == 3 then
        return nil
      end
    end
    return true
  end)
  out("ok: fixing the runner clears the diagnostic")

  -- Breaking it again brings it back, checked with the final settings: the severity setting makes
  -- unsupported-runner an error.
  vim.api.nvim_buf_set_lines(bufnr, 3, 4, false, { "runner: open-code" })
  local again = wait_for("the diagnostic on line 4 to return", function()
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.lnum == 3 then
        return d
      end
    end
    return nil
  end)
  check(
    again.severity == vim.diagnostic.severity.ERROR,
    "the severity setting (unsupported-runner: error) is not applied: severity " .. tostring(again.severity)
  )
  out("ok: the severity setting applies (unsupported-runner is an error)")

  -- :WorkbenchCheck re-checks the workspace (two packages in this repository).
  vim.cmd("WorkbenchCheck")
  local checked = wait_for(":WorkbenchCheck to report", function()
    return notified("checking %d+ package")
  end)
  check(checked:find("checking 2 package", 1, true), "unexpected :WorkbenchCheck report: " .. checked)
  out("ok: :WorkbenchCheck checked 2 packages")

  -- :WorkbenchMigrate on a spec 0 manifest in another repository (a second client) rewrites the buffer.
  local legacy = legacy_repo .. "/.workbenches/legacy-release/workbench.yml"
  vim.cmd("edit " .. vim.fn.fnameescape(legacy))
  local legacy_buf = vim.api.nvim_get_current_buf()
  check(vim.bo[legacy_buf].filetype == "yaml.workbench", "the second manifest's filetype is " .. vim.bo[legacy_buf].filetype)
  local legacy_client = wait_for("a workbench client for " .. legacy_repo, function()
    local c = workbench.client(legacy_buf)
    return c and c.initialized and c or nil
  end)
  check(legacy_client.id ~= client.id, "the second repository reused the first repository's client")
  check(legacy_client.config.root_dir == legacy_repo, "second root_dir is " .. tostring(legacy_client.config.root_dir))
  wait_for("the spec-0-manifest diagnostic", function()
    for _, d in ipairs(vim.diagnostic.get(legacy_buf)) do
      if d.lnum == 1 and d.code == "spec-0-manifest" then
        return true
      end
    end
    return nil
  end)
  vim.cmd("WorkbenchMigrate")
  wait_for("the migrated buffer to declare spec 1 and runtimes", function()
    local text = table.concat(vim.api.nvim_buf_get_lines(legacy_buf, 0, -1, false), "\n")
    return text:find("\nspec: 1", 1, true) and text:find("\nruntimes:", 1, true)
  end)
  wait_for(":WorkbenchMigrate to report", function()
    return notified("migrated to spec 1")
  end)
  wait_for("the spec-0-manifest diagnostic to clear after migrating", function()
    for _, d in ipairs(vim.diagnostic.get(legacy_buf)) do
      if d.code == "spec-0-manifest" then
        return nil
      end
    end
    return true
  end)
  out("ok: :WorkbenchMigrate migrated legacy-release to spec 1")

  -- Formatting (vim.lsp.buf.formatting_sync in 0.7): the server's edits reach the buffer, not the file.
  local function line_index(bufnr, prefix)
    for index, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
      if line:sub(1, #prefix) == prefix then
        return index - 1
      end
    end
  end
  local tools_at = line_index(legacy_buf, "tools:")
  check(tools_at ~= nil, "no tools: line in the migrated manifest")
  vim.api.nvim_buf_set_lines(legacy_buf, tools_at, tools_at + 2, false, { "tools  :", "  -      'git'" })
  local on_disk = read(legacy)
  vim.api.nvim_set_current_buf(legacy_buf)
  vim.lsp.buf.formatting_sync(nil, TIMEOUT)
  local formatted = vim.api.nvim_buf_get_lines(legacy_buf, tools_at, tools_at + 2, false)
  check(
    formatted[1] == "tools:" and formatted[2] == "  - git",
    "formatting gave " .. vim.inspect(formatted)
  )
  check(read(legacy) == on_disk, "formatting wrote the file")
  check(vim.bo[legacy_buf].modified, "formatting did not edit the buffer")
  out("ok: vim.lsp.buf.formatting_sync formats the buffer (tools: / - git)")

  -- Document highlight (vim.lsp.buf.document_highlight): on a ${VAR} use, its declaration under env is marked
  -- written and the use read, as extmarks of Neovim's reference highlights.
  local migrations = legacy_repo .. "/.workbenches/migrations/workbench.yml"
  vim.cmd("edit " .. vim.fn.fnameescape(migrations))
  local migrations_buf = vim.api.nvim_get_current_buf()
  wait_for("the client attached to the migrations manifest", function()
    return vim.lsp.buf_is_attached(migrations_buf, legacy_client.id)
  end)
  local use_at = line_index(migrations_buf, "      Authorization: Bearer ${DATABASE_API_TOKEN}")
  local declared_at = line_index(migrations_buf, "  DATABASE_API_TOKEN:")
  check(use_at ~= nil and declared_at ~= nil, "the migrations manifest lacks the use or the declaration")
  vim.api.nvim_win_set_cursor(0, { use_at + 1, 36 })
  local references = vim.api.nvim_create_namespace("vim_lsp_references")
  vim.lsp.buf.document_highlight()
  local marks = wait_for("the reference highlights", function()
    local found = vim.api.nvim_buf_get_extmarks(migrations_buf, references, 0, -1, { details = true })
    return #found >= 2 and found or nil
  end)
  local seen = {}
  for _, mark in ipairs(marks) do
    local row, col, details = mark[2], mark[3], mark[4]
    local text = vim.api.nvim_buf_get_text(migrations_buf, row, col, details.end_row, details.end_col, {})[1]
    table.insert(seen, string.format("%d:%s %s", row, text, details.hl_group))
  end
  table.sort(seen)
  local expected = {
    string.format("%d:DATABASE_API_TOKEN LspReferenceRead", use_at),
    string.format("%d:DATABASE_API_TOKEN LspReferenceWrite", declared_at),
  }
  table.sort(expected)
  check(vim.deep_equal(seen, expected), "the reference highlights: " .. vim.inspect(seen))
  vim.lsp.buf.clear_references()
  out("ok: vim.lsp.buf.document_highlight marks DATABASE_API_TOKEN's declaration (write) and its use (read)")

  execution(workbench)
end

local ok, err = xpcall(run, function(e)
  if type(e) == "table" and e.workbench_test_failure then
    return e.workbench_test_failure
  end
  return debug.traceback(tostring(e), 2)
end)
if ok then
  out("nvim: all checks passed")
  vim.cmd("qall!")
else
  io.stderr:write("FAIL (nvim): " .. tostring(err) .. "\n")
  io.stderr:flush()
  vim.cmd("cquit 1")
end
