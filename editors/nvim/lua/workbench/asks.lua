-- What a run asks the person (docs/runs.md#answering, docs/lsp-extensions.md): `workbench/inputRequested` for a
-- run this editor follows is asked with vim.ui.select (a permission's options; each question's options, plus the
-- person's own words through vim.ui.input where the question allows them, or vim.ui.input alone where several
-- may be chosen) and answered with `workbench.answer`; `workbench/inputResolved` withdraws it (answered in
-- another window or a terminal, or refused after the input timeout): a choice made after that is not sent.

local format = require("workbench.ui.format")
local lsp = require("workbench.client")
local ui = require("workbench.ui")

local M = {}

M.INPUT_REQUESTED = "workbench/inputRequested"
M.INPUT_RESOLVED = "workbench/inputResolved"

-- The requests asked and not yet resolved, by id: { run_id, text }.
M.pending = {}

-- How a choice is asked and how text is read; replaceable (the tests answer them).
function M.choose(items, options, on_choice)
  vim.ui.select(items, options, on_choice)
end

function M.read_text(options, on_confirm)
  vim.ui.input(options, on_confirm)
end

local OWN_WORDS = "(your own words)"

-- Sends the answer (a string; nil: refuse) unless the request was resolved meanwhile.
local function send(client, run_id, id, answer)
  if not M.pending[id] then
    ui.notify(("request %s was already answered"):format(id))
    return
  end
  local argument = { runId = run_id, requestId = id }
  if answer == nil then
    argument.reject = true
  else
    argument.answer = answer
  end
  client.request("workspace/executeCommand", { command = "workbench.answer", arguments = { argument } }, function(err)
    if err then
      ui.notify(("cannot answer %s: %s"):format(id, format.error_message(err)), vim.log.levels.ERROR)
    end
  end)
end

-- Asks question `index` of `questions` and the ones after it, gathering the answers; `done` gets them all (nil:
-- the person dismissed one, which refuses the request).
local function ask_questions(questions, index, answers, done)
  local question = questions[index]
  if not question then
    return done(answers)
  end
  local labels = {}
  for _, option in ipairs(format.list(question.options)) do
    table.insert(labels, tostring(option.label))
  end
  local prompt = tostring(question.question)
  local next_one = function(chosen)
    if chosen == nil or chosen == "" then
      return done(nil)
    end
    answers[index] = chosen
    ask_questions(questions, index + 1, answers, done)
  end
  if question.multiple then
    M.read_text({ prompt = ("%s (%s; several, comma-separated): "):format(prompt, table.concat(labels, ", ")) }, function(text)
      if text == nil or vim.trim(text) == "" then
        return done(nil)
      end
      next_one(vim.tbl_map(vim.trim, vim.split(text, ",", { plain = true })))
    end)
    return
  end
  local items = vim.deepcopy(labels)
  if question.custom or #labels == 0 then
    table.insert(items, OWN_WORDS)
  end
  M.choose(items, { prompt = prompt }, function(choice)
    if choice == OWN_WORDS then
      M.read_text({ prompt = prompt .. " " }, function(text)
        next_one(text and { text } or nil)
      end)
    else
      next_one(choice and { choice } or nil)
    end
  end)
end

-- `workbench/inputRequested`: says it, then asks it.
function M.on_input_requested(_, params, ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  local request = params and params.request
  if not client or type(request) ~= "table" or type(request.id) ~= "string" then
    return
  end
  local run_id = params.runId
  M.pending[request.id] = { run_id = run_id, text = params.text }
  ui.notify(tostring(params.text))
  if request.kind == "permission" then
    M.choose(format.list(request.options), { prompt = tostring(request.message) }, function(choice)
      send(client, run_id, request.id, choice)
    end)
  elseif request.kind == "question" then
    ask_questions(format.list(request.questions), 1, {}, function(answers)
      if answers == nil then
        return send(client, run_id, request.id, nil)
      end
      local single = #answers == 1 and #answers[1] == 1
      send(client, run_id, request.id, single and answers[1][1] or vim.json.encode(answers))
    end)
  end
end

-- `workbench/inputResolved`: the request is no longer asked.
function M.on_input_resolved(_, params)
  local id = params and params.id
  if type(id) ~= "string" or not M.pending[id] then
    return
  end
  M.pending[id] = nil
  local how = "answered"
  if params.how == "refused" then
    how = "refused: " .. tostring(params.reason)
  elseif params.answer then
    how = "answered: " .. tostring(params.answer)
  end
  ui.notify(("%s %s"):format(id, how))
end

-- Every client the plugin configures gets both handlers; they look the functions up when called, so replacing
-- on_input_requested (require("workbench")) replaces the handler too.
lsp.handlers[M.INPUT_REQUESTED] = function(...)
  return M.on_input_requested(...)
end
lsp.handlers[M.INPUT_RESOLVED] = function(...)
  return M.on_input_resolved(...)
end

-- Gives a client this plugin did not configure (nvim-lspconfig) the handlers.
function M.handle(client)
  if client.handlers then
    client.handlers[M.INPUT_REQUESTED] = client.handlers[M.INPUT_REQUESTED] or M.on_input_requested
    client.handlers[M.INPUT_RESOLVED] = client.handlers[M.INPUT_RESOLVED] or M.on_input_resolved
  end
end

return M
