//! The editor integrations (editors/) driven by the real editors, headless, against the real server binary:
//! tests/editors/nvim/run.sh (Neovim) and tests/editors/emacs/run.sh (Emacs with Eglot). Cargo builds the
//! binary; its path reaches the scripts as `WB_LSP_BIN`. A missing editor fails the test with an install hint
//! unless `WB_LSP_SKIP_EDITOR_TESTS=1`. The Helix snippet (editors/helix/languages.toml) is checked as TOML.
//! The Neovim outcome commands (`:WorkbenchOutcome`, `:WorkbenchOutcomeDiff`, `:WorkbenchOutcomeArtifact`,
//! `:WorkbenchApplyOutcome`) are driven on a real run by `neovim_shows_opens_and_applies_a_run_outcome`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SKIP_VARIABLE: &str = "WB_LSP_SKIP_EDITOR_TESTS";

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

fn skipping() -> bool {
    std::env::var(SKIP_VARIABLE).is_ok_and(|value| value == "1")
}

/// True when `program` runs with `args` and exits successfully.
fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program).args(args).output().is_ok_and(|output| output.status.success())
}

/// Runs an editor test script unless the editor is missing (a failure, or a skip under WB_LSP_SKIP_EDITOR_TESTS=1).
fn run_editor_script(editor: &str, available: bool, install: &str, script: &str) {
    if skipping() {
        eprintln!("skipping the {editor} test: {SKIP_VARIABLE}=1");
        return;
    }
    assert!(
        available,
        "{editor} is not installed, so the editor integration cannot be tested.\n\
         Install it (Debian/Ubuntu: `{install}`; scripts/test.sh does this) or set {SKIP_VARIABLE}=1 to skip \
         the editor tests."
    );
    let root = repository_root();
    let output = wb_testsupport::isolate(&mut Command::new("bash"))
        .arg(root.join(script))
        .env("WB_LSP_BIN", env!("CARGO_BIN_EXE_wb-lsp"))
        .current_dir(&root)
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stdout}");
    assert!(
        output.status.success(),
        "the {editor} integration test ({script}) failed with {}.\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}",
        output.status
    );
}

#[test]
fn neovim_drives_the_server() {
    run_editor_script("Neovim", runs("nvim", &["--version"]), "apt-get install -y neovim", "tests/editors/nvim/run.sh");
}

/// The fake `opencode` of the outcome test: in its working directory (the repository) it edits README.md, adds
/// notes/hello.txt and deletes obsolete.txt; in the outbox it writes a report and the declaration (a summary,
/// the report's metadata, a pull request link); then it prints its answer.
const OUTCOME_RUNNER: &str = r#"#!/bin/sh
set -e
printf '# New title\n\nThe ledger service.\n' > README.md
mkdir -p notes
printf 'hello from the fake runner\n' > notes/hello.txt
rm -f obsolete.txt
mkdir -p "$WORKBENCH_OUTPUT_DIR/reports"
printf '<h1>Findings</h1>\n' > "$WORKBENCH_OUTPUT_DIR/reports/findings.html"
cat > "$WORKBENCH_OUTPUT_DIR/outcome.json" <<'JSON'
{"version": 1, "summary": "Prepared a findings report",
 "artifacts": [{"path": "reports/findings.html", "name": "Findings.html", "description": "The collected findings", "media_type": "text/html"}],
 "links": [{"label": "Implementation PR", "uri": "https://github.com/example/project/pull/42", "kind": "pull_request"}]}
JSON
echo '{"type":"text","part":{"id":"t","text":"done"}}'
"#;

/// The helpers of the Neovim test scripts (checks, waits, notifications, buffers); a script defines `run()` after
/// them and [`NVIM_TEST_EPILOGUE`] runs it.
const NVIM_TEST_PRELUDE: &str = r##"
local TIMEOUT = 20000

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

local function write(path, text)
  local handle = assert(io.open(path, "wb"))
  handle:write(text)
  handle:close()
end

-- Every vim.notify message; expect() waits for the next one (after those already expected) and checks it.
local notifications = {}
vim.notify = function(message, level)
  table.insert(notifications, { message = tostring(message), level = level })
  out("notify: " .. tostring(message))
end
local seen = 0
local function expect(what, prefix, level)
  local entry = wait_for(what, function()
    for index = seen + 1, #notifications do
      if notifications[index].message:sub(1, #prefix) == prefix then
        seen = index
        return notifications[index]
      end
    end
    return nil
  end)
  if level then
    check(entry.level == level, ("%s: level %s, not %s"):format(what, tostring(entry.level), tostring(level)))
  end
  return entry.message
end

local function lines_of(bufnr)
  return vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
end

local function buffer_named(pattern, except)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if bufnr ~= except and vim.api.nvim_buf_is_loaded(bufnr) and vim.api.nvim_buf_get_name(bufnr):find(pattern) then
      return bufnr
    end
  end
  return nil
end

local function index_of(list, wanted)
  for index, value in ipairs(list) do
    if value == wanted then
      return index
    end
  end
  return nil
end

local function check_read_only(bufnr, what)
  check(vim.bo[bufnr].buftype == "nofile", what .. " is not a scratch buffer")
  check(not vim.bo[bufnr].modifiable, what .. " is modifiable")
  check(vim.bo[bufnr].readonly, what .. " is not read-only")
end

"##;

/// Runs the script's `run()`: exits 0 after printing `nvim: all checks passed`, or prints what failed and exits 1.
const NVIM_TEST_EPILOGUE: &str = r##"
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
"##;

/// Headless Neovim with editors/nvim: `:WorkbenchRun`, then the outcome commands on the run's outcome.
const OUTCOME_TEST_LUA: &str = r##"
local function run()
  local bin = env("WB_LSP_BIN")
  local repo = env("WB_TEST_REPO")
  local home = env("WORKBENCH_HOME")
  local workbench = require("workbench")
  -- The buffer settings of on_attach, changed and turned off per key.
  workbench.setup({ cmd = { bin, "serve" }, omnifunc = false, mappings = { references = false, code_action = "<leader>a" } })
  local manifest = repo .. "/.workbenches/demo/workbench.yml"
  vim.cmd("edit " .. vim.fn.fnameescape(manifest))
  local manifest_buf = vim.api.nvim_get_current_buf()
  wait_for("the workbench client", function()
    local client = workbench.client(manifest_buf)
    return client and client.initialized and client or nil
  end)
  wait_for("the K mapping of on_attach", function()
    return vim.fn.maparg("K", "n", false, true).buffer == 1
  end)
  check(vim.bo[manifest_buf].omnifunc == "", "omnifunc = false still set " .. vim.bo[manifest_buf].omnifunc)
  check(vim.fn.maparg("gd", "n", false, true).buffer == 1, "gd is not mapped")
  check(vim.fn.maparg("gr", "n") == "", "references = false still mapped gr")
  check(vim.fn.maparg("<leader>ca", "n") == "", "<leader>ca is mapped though code_action is <leader>a")
  check(
    vim.fn.maparg("<leader>a", "n", false, true).desc == "Workbench: code actions (quick fixes, migrate)",
    "code_action = <leader>a is not mapped"
  )
  out("ok: setup() options turn off omnifunc and gr, and move the code action mapping")

  -- Selection ranges through Neovim's client: from the model id out to the whole manifest.
  local selected = vim.lsp.buf_request_sync(manifest_buf, "textDocument/selectionRange", {
    textDocument = { uri = vim.uri_from_bufnr(manifest_buf) },
    positions = { { line = 5, character = 8 } },
  }, TIMEOUT)
  local chain, node = {}, nil
  for _, reply in pairs(selected or {}) do
    node = reply.result and reply.result[1]
  end
  while node do
    local range = node.range
    local last = vim.api.nvim_buf_line_count(manifest_buf) - 1
    local end_line, end_character = range["end"].line, range["end"].character
    if end_line > last then
      -- The end of the document (the line after the last): Neovim's API wants the last line's end.
      end_line, end_character = last, #vim.api.nvim_buf_get_lines(manifest_buf, last, last + 1, false)[1]
    end
    table.insert(chain, table.concat(vim.api.nvim_buf_get_text(manifest_buf, range.start.line, range.start.character, end_line, end_character, {}), "\n"))
    node = node.parent
  end
  check(chain[1] == "openai/gpt-5.6-terra" and chain[2] == "id: openai/gpt-5.6-terra", "the selection ranges: " .. vim.inspect(chain))
  check(chain[#chain]:sub(1, 8) == "spec: 1\n" and #chain >= 5, "the outermost range is not the manifest: " .. vim.inspect(chain))
  out("ok: textDocument/selectionRange grows from the model id to the manifest (" .. #chain .. " ranges)")

  vim.cmd("WorkbenchOutcome")
  expect("no outcome before a run", "[workbench] no outcome yet", vim.log.levels.WARN)

  -- A run that commits an outcome announces it.
  vim.cmd("WorkbenchRun write the findings")
  expect("the run to complete", "[workbench] run completed")
  local announced = expect("the outcome announcement", "[workbench] outcome wbo_")
  local id = announced:match("^%[workbench%] outcome (wbo_[a-z0-9]+) ")
  check(id, "no outcome id in " .. announced)
  check(
    announced == ("[workbench] outcome %s (present): 1 added, 1 modified, 1 deleted; 1 artifact; 1 link. "
      .. ":WorkbenchOutcome shows it"):format(id),
    "the announcement is " .. announced
  )
  check(workbench.last_outcome_id == id, "the last outcome is " .. tostring(workbench.last_outcome_id))
  local run_buf = buffer_named("^workbench://run/")
  check(
    index_of(lines_of(run_buf), ("  outcome %s (1 changeset, 1 artifact, 1 link)"):format(id)),
    "the run buffer lacks the outcome line:\n" .. table.concat(lines_of(run_buf), "\n")
  )
  check(read(repo .. "/README.md") == "# New title\n\nThe ledger service.\n", "the local run did not edit README.md")
  out("ok: the run committed outcome " .. id)

  -- :WorkbenchOutcome: the summary (the text of `wb-lsp outcome ID`) in a scratch buffer.
  vim.cmd("WorkbenchOutcome")
  local summary_buf = wait_for("the outcome buffer", function()
    return buffer_named("^workbench://outcome/")
  end)
  local summary = lines_of(summary_buf)
  check(
    summary[1]:match("^Outcome " .. id .. " %(run wb_%x+, complete, present%)$"),
    "summary line 1: " .. vim.inspect(summary[1])
  )
  local expected = {
    "Summary: Prepared a findings report",
    "Changeset primary (primary workspace): 1 added, 1 modified, 1 deleted",
    "  M README.md",
    "  A notes/hello.txt",
    "  D obsolete.txt",
    "Artifacts: 1",
    "  Findings.html (reports/findings.html): text/html, 18 bytes",
    "Links: 1",
    "  Implementation PR [pull_request]: https://github.com/example/project/pull/42",
    "",
    "<CR> on a change opens the review diff (:WorkbenchOutcomeDiff), on an artifact the artifact",
    "(:WorkbenchOutcomeArtifact [name]).",
  }
  check(
    vim.deep_equal({ unpack(summary, 2) }, expected),
    "the outcome buffer:\n" .. table.concat(summary, "\n")
  )
  local cli = vim.fn.system({ bin, "outcome", id })
  check(vim.v.shell_error == 0, "wb-lsp outcome failed: " .. cli)
  local cli_lines = vim.split(cli, "\n", { plain = true })
  table.remove(cli_lines)
  check(
    vim.deep_equal({ unpack(summary, 1, #cli_lines) }, cli_lines),
    "the summary differs from `wb-lsp outcome`:\n" .. cli
  )
  check(vim.bo[summary_buf].filetype == "workbench-outcome", "summary filetype " .. vim.bo[summary_buf].filetype)
  check(not vim.bo[summary_buf].modifiable, "the outcome buffer is modifiable")
  out("ok: :WorkbenchOutcome shows the summary of `wb-lsp outcome`")

  -- :WorkbenchOutcomeDiff: the stored review diff, byte for byte, read-only, filetype diff.
  local answer = vim.lsp.buf_request_sync(manifest_buf, "workspace/executeCommand", {
    command = "workbench.outcome",
    arguments = { id },
  }, TIMEOUT)
  local files
  for _, response in pairs(answer or {}) do
    files = response.result and response.result.files
  end
  check(files and files.reviews[1] and files.artifacts[1], "workbench.outcome names no stored files")
  local stored_diff = read(files.reviews[1].file)
  vim.cmd("WorkbenchOutcomeDiff")
  local diff_buf = wait_for("the diff buffer", function()
    return buffer_named("^workbench://diff/%d+/primary%.diff$")
  end)
  local diff = lines_of(diff_buf)
  check(table.concat(diff, "\n") .. "\n" == stored_diff, "the diff buffer is not the stored review diff")
  for _, wanted in ipairs({ "-# Old title", "+# New title", "+hello from the fake runner", "-remove me" }) do
    check(index_of(diff, wanted), ("the review diff lacks %q:\n%s"):format(wanted, table.concat(diff, "\n")))
  end
  check(vim.bo[diff_buf].filetype == "diff", "the diff buffer's filetype is " .. vim.bo[diff_buf].filetype)
  check_read_only(diff_buf, "the diff buffer")
  out("ok: :WorkbenchOutcomeDiff opens the review diff (" .. #diff .. " lines, filetype diff, read-only)")

  -- :WorkbenchOutcomeArtifact: the only artifact, named after it (its filetype from the name).
  vim.cmd("WorkbenchOutcomeArtifact")
  local artifact_buf = wait_for("the artifact buffer", function()
    return buffer_named("^workbench://artifact/%d+/Findings%.html$")
  end)
  check(vim.deep_equal(lines_of(artifact_buf), { "<h1>Findings</h1>" }), "artifact: " .. vim.inspect(lines_of(artifact_buf)))
  check(read(files.artifacts[1].file) == "<h1>Findings</h1>\n", "the stored artifact differs")
  check(vim.bo[artifact_buf].filetype == "html", "the artifact's filetype is " .. vim.bo[artifact_buf].filetype)
  check_read_only(artifact_buf, "the artifact buffer")
  vim.cmd("WorkbenchOutcomeArtifact " .. id .. " nothing.txt")
  expect("no such artifact", ("[workbench] outcome %s has no artifact named nothing.txt"):format(id))
  out("ok: :WorkbenchOutcomeArtifact opens Findings.html (filetype html, read-only)")

  -- <CR> in the outcome buffer opens what the line names.
  vim.api.nvim_set_current_win(vim.fn.bufwinid(summary_buf))
  vim.api.nvim_win_set_cursor(0, { index_of(summary, "  Findings.html (reports/findings.html): text/html, 18 bytes"), 0 })
  vim.cmd([[exe "normal \<CR>"]])
  wait_for("<CR> to open the artifact", function()
    return buffer_named("^workbench://artifact/%d+/Findings%.html$", artifact_buf)
  end)
  vim.api.nvim_set_current_win(vim.fn.bufwinid(summary_buf))
  vim.api.nvim_win_set_cursor(0, { index_of(summary, "  A notes/hello.txt"), 0 })
  vim.cmd([[exe "normal \<CR>"]])
  wait_for("<CR> to open the review diff", function()
    return buffer_named("^workbench://diff/%d+/primary%.diff$", diff_buf)
  end)
  out("ok: <CR> on the outcome buffer opens the artifact and the review diff")

  -- A local run's outcome is present: nothing to apply.
  vim.cmd("WorkbenchApplyOutcome")
  expect(
    "the refusal of a present outcome",
    ("[workbench] outcome %s is present: the run already made its changes in the workspace; nothing to apply"):format(id)
  )

  -- Make it pending (the receipt an isolated runtime records) and the workspace as before the run, except a
  -- README edited since.
  local receipt_path = home .. "/outcomes/" .. id .. "/application.json"
  check(vim.json.decode(read(receipt_path)).state == "present", "the receipt is not present")
  write(receipt_path, vim.json.encode({ version = 1, outcome_id = id, state = "pending", updated_at = "2026-01-01T00:00:00Z" }))
  write(repo .. "/README.md", "# Someone else's title\n")
  vim.fn.delete(repo .. "/notes", "rf")
  write(repo .. "/obsolete.txt", "remove me\n")
  local function workspace_before()
    return read(repo .. "/README.md") == "# Someone else's title\n"
      and read(repo .. "/notes/hello.txt") == nil
      and read(repo .. "/obsolete.txt") == "remove me\n"
  end

  -- Declining the confirmation sends nothing.
  local asked = {}
  workbench.confirm = function(message)
    table.insert(asked, message)
    return false
  end
  vim.cmd("WorkbenchApplyOutcome")
  local declined = expect("the declined application", ("[workbench] outcome %s was not applied"):format(id))
  check(declined == ("[workbench] outcome %s was not applied"):format(id), "declining: " .. declined)
  check(
    asked[1] == ("Apply outcome %s to its workspace?\nprimary workspace: 1 added, 1 modified, 1 deleted\n"
      .. "All or nothing: if a file changed since the run, nothing is written."):format(id),
    "the confirmation: " .. vim.inspect(asked[1])
  )
  check(workspace_before(), "declining changed the workspace")

  -- A conflict: the engine refuses, nothing is written.
  workbench.confirm = function()
    return true
  end
  vim.cmd("WorkbenchApplyOutcome")
  expect(
    "the conflict",
    ("[workbench] outcome %s was not applied: Outcome conflicts with current workspace content: README.md"):format(id),
    vim.log.levels.ERROR
  )
  check(workspace_before(), "a refused application changed the workspace")
  check(vim.json.decode(read(receipt_path)).state == "pending", "the refused application changed the receipt")
  out("ok: :WorkbenchApplyOutcome asks first, and a conflict writes nothing")

  -- The original README. File by file: the changed files listed, README.md's diff in a tab, then README.md
  -- applied alone (the receipt stays pending).
  write(repo .. "/README.md", "# Old title\n\nThe ledger service.\n")
  vim.cmd("WorkbenchOutcomeFiles")
  local files_buf = wait_for("the files buffer", function()
    return buffer_named("^workbench://outcome%-files/")
  end)
  local file_lines = wait_for("the changed files", function()
    local shown = lines_of(files_buf)
    return #shown >= 6 and shown or nil
  end)
  check(file_lines[1] == ("Outcome %s (pending) — <CR> diff · a apply this file · r refresh"):format(id), "the files header: " .. file_lines[1])
  check(
    vim.deep_equal({ file_lines[2], file_lines[3], file_lines[4], file_lines[5], file_lines[6] }, {
      "M  README.md  +1 −1",
      "A  notes/hello.txt  +1",
      "D  obsolete.txt  −1",
      "artifact  Findings.html  text/html, 18 bytes",
      "link  Implementation PR  https://github.com/example/project/pull/42",
    }),
    "the changed files:\n" .. table.concat(file_lines, "\n")
  )
  vim.api.nvim_set_current_win(vim.fn.bufwinid(files_buf))
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.cmd([[exe "normal \<CR>"]])
  local sides = wait_for("README.md's diff tab", function()
    return workbench.last_file_diff
  end)
  local before_win, after_win = vim.fn.bufwinid(sides.before), vim.fn.bufwinid(sides.after)
  check(vim.wo[before_win].diff and vim.wo[after_win].diff, "the two sides are not in diff mode")
  check(vim.api.nvim_win_get_tabpage(before_win) == vim.api.nvim_win_get_tabpage(after_win), "the sides are in two tabs")
  check(vim.deep_equal(lines_of(sides.before), { "# Old title", "", "The ledger service." }), "before: " .. vim.inspect(lines_of(sides.before)))
  check(vim.deep_equal(lines_of(sides.after), { "# New title", "", "The ledger service." }), "after: " .. vim.inspect(lines_of(sides.after)))
  check(vim.api.nvim_buf_get_name(sides.after):match("README%.md$") and vim.bo[sides.after].filetype == "markdown", "the after side is not named or typed like the file")
  check(not vim.bo[sides.before].modifiable and not vim.bo[sides.after].modifiable, "a side is modifiable")
  out("ok: :WorkbenchOutcomeFiles lists the changed files; <CR> opens README.md's two sides with :diffthis")
  vim.cmd("tabclose")
  vim.api.nvim_set_current_win(vim.fn.bufwinid(files_buf))
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  local artifact_before = workbench.last_artifact_buffer
  vim.cmd([[exe "normal \<CR>"]])
  wait_for("<CR> on the artifact line to open it", function()
    return workbench.last_artifact_buffer ~= artifact_before and vim.api.nvim_buf_get_name(workbench.last_artifact_buffer):match("Findings%.html$")
  end)
  out("ok: <CR> on the artifact line of the files list opens Findings.html")
  vim.api.nvim_set_current_win(vim.fn.bufwinid(files_buf))
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.cmd("normal a")
  expect("the file's application", ("[workbench] applied README.md of outcome %s: 1 applied, 0 unchanged (pending)"):format(id))
  check(read(repo .. "/README.md") == "# New title\n\nThe ledger service.\n", "README.md was not applied")
  check(read(repo .. "/obsolete.txt") == "remove me\n", "a file not selected was applied")
  check(vim.json.decode(read(receipt_path)).state == "pending", "the receipt is not pending after one file")
  wait_for("README.md shown taken", function()
    return lines_of(files_buf)[2] == "M  README.md  +1 −1  (taken)"
  end)
  out("ok: a applies README.md alone; the receipt stays pending and the list says taken")

  -- Then the rest.
  vim.cmd("WorkbenchApplyOutcome " .. id)
  expect("the application", ("[workbench] applied outcome %s: 2 applied, 1 unchanged"):format(id))
  check(read(repo .. "/README.md") == "# New title\n\nThe ledger service.\n", "README.md was not applied")
  check(read(repo .. "/notes/hello.txt") == "hello from the fake runner\n", "notes/hello.txt was not applied")
  check(read(repo .. "/obsolete.txt") == nil, "obsolete.txt was not deleted")
  check(vim.json.decode(read(receipt_path)).state == "applied", "the receipt is not applied")
  vim.cmd("WorkbenchApplyOutcome!")
  expect(
    "the refusal of an applied outcome",
    ("[workbench] outcome %s is applied: it was already applied; nothing to apply"):format(id)
  )
  vim.cmd("WorkbenchOutcome")
  local applied_buf = wait_for("a second outcome buffer", function()
    return buffer_named("^workbench://outcome/", summary_buf)
  end)
  check(lines_of(applied_buf)[1]:find(", complete, applied)", 1, true), "the outcome is not shown applied")
  out("ok: :WorkbenchApplyOutcome applied the rest of the pending outcome (2 applied, 1 unchanged)")

  -- Ids: a malformed one is refused here, an unknown one by the server.
  vim.cmd("WorkbenchOutcome nonsense")
  expect("a malformed id", "[workbench] not an outcome id: nonsense (wbo_…)", vim.log.levels.WARN)
  local unknown = "wbo_00000000000000000000000000000000"
  vim.cmd("WorkbenchOutcome " .. unknown)
  expect("an unknown id", ("[workbench] cannot read outcome %s: "):format(unknown), vim.log.levels.ERROR)
  out("ok: malformed and unknown outcome ids are reported")
end

"##;

/// A scratch world for an editor: a repository with the package `demo` (runner `opencode`), a fake `opencode`
/// (`runner`) first on `PATH`, and a home for the editor and the Workbench.
struct World {
    _temp: tempfile::TempDir,
    root: PathBuf,
    repo: PathBuf,
    home: PathBuf,
    path: std::ffi::OsString,
}

impl World {
    fn new(runner: &str) -> World {
        let temp = tempfile::tempdir().expect("a temporary directory");
        // Resolved, so paths compare equal to what the editor and the server report.
        let root = temp.path().canonicalize().expect("the temporary directory");
        let repo = root.join("repo");
        let package = repo.join(".workbenches/demo");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(
            package.join("workbench.yml"),
            "spec: 1\nversion: 0.1.0\nname: demo\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\n\
             instructions: ./instructions.md\nruntimes:\n  local: {}\n",
        )
        .unwrap();
        std::fs::write(package.join("instructions.md"), "# Demo\n").unwrap();
        std::fs::write(repo.join("README.md"), "# Old title\n\nThe ledger service.\n").unwrap();
        std::fs::write(repo.join("obsolete.txt"), "remove me\n").unwrap();
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("opencode"), runner).unwrap();
        std::fs::set_permissions(bin.join("opencode"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let home = root.join("home");
        for dir in [".config", ".local/share", ".local/state", ".cache", ".emacs.d"] {
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
        let path = std::env::join_paths(
            std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
        )
        .unwrap();
        World { _temp: temp, root, repo, home, path }
    }

    /// A command in this world: the repository as working directory, its home, `PATH` and Workbench home.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        wb_testsupport::isolate(&mut command)
            .current_dir(&self.repo)
            .env("WB_LSP_BIN", env!("CARGO_BIN_EXE_wb-lsp"))
            .env("WB_TEST_REPO", &self.repo)
            .env("WORKBENCH_HOME", self.home.join(".workbench"))
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env("PATH", &self.path)
            .env("OPENAI_API_KEY", "sk-test")
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .stdin(Stdio::null());
        command
    }

    /// Kills the runs this world's Workbench home still has running (a failed test leaves no supervisor behind).
    fn kill_running_runs(&self) {
        let Ok(output) = self.command(env!("CARGO_BIN_EXE_wb-lsp")).args(["runs", "--json"]).output() else {
            return;
        };
        let records: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).unwrap_or_default();
        for record in records {
            if let Some(id) = record.get("run_id").and_then(serde_json::Value::as_str) {
                let _ = self.command(env!("CARGO_BIN_EXE_wb-lsp")).args(["kill", id]).output();
            }
        }
    }
}

fn require_neovim() -> bool {
    if skipping() {
        eprintln!("skipping the Neovim test: {SKIP_VARIABLE}=1");
        return false;
    }
    assert!(
        runs("nvim", &["--version"]),
        "Neovim is not installed, so the editor integration cannot be tested.\n\
         Install it (Debian/Ubuntu: `apt-get install -y neovim`; scripts/test.sh does this) or set \
         {SKIP_VARIABLE}=1 to skip the editor tests."
    );
    true
}

/// Runs headless Neovim (editors/nvim on the runtimepath) on the script `body` (a `run()` after the prelude) in
/// the world, and asserts that every check passed.
fn run_neovim_script(world: &World, what: &str, body: &str, extra_env: &[(&str, &Path)]) {
    let script = world.root.join("test.lua");
    std::fs::write(&script, format!("{NVIM_TEST_PRELUDE}{body}{NVIM_TEST_EPILOGUE}")).unwrap();
    let mut command = world.command("timeout");
    command
        .args(["--kill-after=10", "180", "nvim", "--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd"])
        .arg(format!("set runtimepath^={}", repository_root().join("editors/nvim").display()))
        .arg("-c")
        .arg(format!("luafile {}", script.display()));
    for (name, value) in extra_env {
        command.env(name, value);
    }
    let output = command.output().expect("timeout and nvim run");
    world.kill_running_runs();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stdout}");
    let log = std::fs::read_to_string(world.home.join(".local/state/nvim/lsp.log"))
        .or_else(|_| std::fs::read_to_string(world.home.join(".cache/nvim/lsp.log")))
        .unwrap_or_default();
    let log_tail: Vec<&str> = log.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect();
    assert!(
        output.status.success(),
        "the Neovim {what} test failed with {} (124/137: no result within 180 s).\n--- stdout:\n{stdout}\n\
         --- stderr:\n{stderr}\n--- the Neovim LSP log (last 40 lines):\n{}",
        output.status,
        log_tail.join("\n")
    );
    assert!(stdout.contains("nvim: all checks passed"), "{stdout}");
}

/// `:WorkbenchRun` on a package whose fake runner edits the workspace and fills the outbox, then the outcome
/// commands on its outcome: the summary (compared with `wb-lsp outcome ID`), the review diff and the artifact
/// in read-only buffers, and `:WorkbenchApplyOutcome` (refused while present; declined; a conflict; applied
/// once the receipt is pending and the workspace as before the run).
#[test]
fn neovim_shows_opens_and_applies_a_run_outcome() {
    if !require_neovim() {
        return;
    }
    let world = World::new(OUTCOME_RUNNER);
    run_neovim_script(&world, "outcome", OUTCOME_TEST_LUA, &[]);
}

/// The fake `opencode` of the runs tests: a text and a usage with a cost, then, for a task saying "until
/// released", it waits for the file `$WB_TEST_RELEASE` and answers `done`; for "until killed" it waits to be
/// killed.
const RUNS_RUNNER: &str = r#"#!/bin/sh
for last; do :; done
echo '{"type":"text","part":{"id":"t1","text":"working on it"}}'
echo '{"type":"step_finish","part":{"tokens":{"input":10,"output":5},"cost":0.125}}'
case "$last" in
*"until released"*)
  while [ ! -e "$WB_TEST_RELEASE" ]; do sleep 0.1; done
  echo '{"type":"text","part":{"id":"t2","text":"done"}}'
  ;;
*"until killed"*)
  exec sleep 600
  ;;
esac
"#;

/// Headless Neovim with editors/nvim: `:WorkbenchRuns`, attach, kill and open outcome on runs started with
/// `wb-lsp run --detach`.
const RUNS_HELPERS_LUA: &str = r##"
local function detach(task)
  local bin = env("WB_LSP_BIN")
  local output = vim.fn.system({ bin, "run", "--detach", "--task", task, env("WB_TEST_REPO") .. "/.workbenches/demo" })
  check(vim.v.shell_error == 0, "wb-lsp run --detach failed: " .. output)
  local id = output:match("(wb_%x+)")
  check(id, "no run id in " .. output)
  return id
end

-- The CLI's record of a run (`wb-lsp runs --all --json`).
local function record_of(id)
  local output = vim.fn.system({ env("WB_LSP_BIN"), "runs", "--all", "--json" })
  check(vim.v.shell_error == 0, "wb-lsp runs failed: " .. output)
  for _, record in ipairs(vim.json.decode(output)) do
    if record.run_id == id then
      return record
    end
  end
  return nil
end

local function line_of(bufnr, pattern)
  for index, line in ipairs(lines_of(bufnr)) do
    if line:find(pattern) then
      return index, line
    end
  end
  return nil
end

local function count_lines(bufnr, wanted)
  local count = 0
  for _, line in ipairs(lines_of(bufnr)) do
    if line == wanted then
      count = count + 1
    end
  end
  return count
end

-- Presses keys in the runs buffer with the cursor on the line of run `id`.
local function press_on(runs_buf, id, keys)
  vim.api.nvim_set_current_win(vim.fn.bufwinid(runs_buf))
  local index = line_of(runs_buf, "^" .. id)
  check(index, "no line for " .. id .. " in the runs buffer:\n" .. table.concat(lines_of(runs_buf), "\n"))
  vim.api.nvim_win_set_cursor(0, { index, 0 })
  vim.cmd("normal " .. keys)
end
"##;

const RUNS_TEST_LUA: &str = r##"
local function run()
  local bin = env("WB_LSP_BIN")
  local repo = env("WB_TEST_REPO")
  local release = env("WB_TEST_RELEASE")
  local workbench = require("workbench")
  workbench.setup({ cmd = { bin, "serve" } })
  vim.cmd("edit " .. vim.fn.fnameescape(repo .. "/.workbenches/demo/workbench.yml"))
  local manifest_buf = vim.api.nvim_get_current_buf()
  wait_for("the workbench client", function()
    local client = workbench.client(manifest_buf)
    return client and client.initialized and client or nil
  end)

  -- Two runs started outside the editor, each owned by its supervisor.
  local released = detach("work until released")
  local killed = detach("work until killed")
  for _, id in ipairs({ released, killed }) do
    wait_for("the cost of " .. id, function()
      local record = record_of(id)
      return record and record.cost_usd == 0.125
    end)
  end
  out("ok: wb-lsp run --detach started " .. released .. " and " .. killed)

  -- :WorkbenchRuns lists them, running, with their cost.
  vim.cmd("WorkbenchRuns")
  local runs_buf = wait_for("the runs buffer", function()
    return buffer_named("^workbench://runs/")
  end)
  wait_for("both runs in the runs buffer", function()
    return line_of(runs_buf, "^" .. released) and line_of(runs_buf, "^" .. killed)
  end)
  check(vim.bo[runs_buf].filetype == "workbench-runs", "the runs buffer's filetype is " .. vim.bo[runs_buf].filetype)
  check(not vim.bo[runs_buf].modifiable, "the runs buffer is modifiable")
  check(
    lines_of(runs_buf)[1] == "Workbench runs — <CR>/a attach · s send a turn · X kill · o outcome · r refresh · q close",
    "the runs buffer's header: " .. tostring(lines_of(runs_buf)[1])
  )
  for _, id in ipairs({ released, killed }) do
    local _, line = line_of(runs_buf, "^" .. id)
    check(
      line:match("^" .. id .. "  demo  running    +%d+s  %$0%.1250"),
      "the line of a running run: " .. line
    )
  end
  out("ok: :WorkbenchRuns lists both runs, running, $0.1250 each")

  -- Attach (a): the run's events replayed once each into a run buffer, then followed to its end.
  press_on(runs_buf, released, "a")
  local run_buf = wait_for("the attached run's buffer", function()
    return buffer_named("^workbench://run/")
  end)
  wait_for("the replayed events", function()
    return line_of(run_buf, "^  usage: 10 input, 5 output tokens; %$0%.1250$")
  end)
  check(lines_of(run_buf)[1] == "── attached to " .. released .. ": demo", "the run buffer's header: " .. lines_of(run_buf)[1])
  local started = ("▶ Run %s started: demo 0.1.0 on local (opencode)"):format(released)
  check(count_lines(run_buf, started) == 1, "run.started replayed " .. count_lines(run_buf, started) .. " times")
  check(count_lines(run_buf, "working on it") == 1, "the text replayed " .. count_lines(run_buf, "working on it") .. " times")
  check(workbench.active_run and workbench.active_run.run_id == released, "the attach is not the active run")
  local handle = assert(io.open(release, "w"))
  handle:close()
  expect("the attached run to complete", "[workbench] run completed", vim.log.levels.INFO)
  wait_for("the end in the run buffer", function()
    return line_of(run_buf, "^■ Run completed in ")
  end)
  check(count_lines(run_buf, "done") == 1, "the live text is not in the run buffer:\n" .. table.concat(lines_of(run_buf), "\n"))
  out("ok: attach replayed every event once, then followed the run to its end")

  -- The runs buffer was read again when the attach ended.
  wait_for("the released run shown completed", function()
    local _, line = line_of(runs_buf, "^" .. released)
    return line and line:find("  completed  ", 1, true)
  end)

  -- Kill (X): asks first; declining sends nothing.
  local asked = {}
  workbench.confirm_kill = function(message)
    table.insert(asked, message)
    return false
  end
  press_on(runs_buf, killed, "X")
  expect("the declined kill", ("[workbench] run %s goes on"):format(killed))
  check(
    asked[1] == ("Kill run demo (%s)?\nThe runner stops; the partial outcome is collected."):format(killed),
    "the confirmation: " .. vim.inspect(asked[1])
  )
  check(record_of(killed).state == "running", "declining killed the run")
  workbench.confirm_kill = function()
    return true
  end
  press_on(runs_buf, killed, "X")
  expect("the kill", ("[workbench] asked run demo (%s) to stop"):format(killed))
  wait_for("the CLI to see the run cancelled", function()
    return record_of(killed).state == "cancelled"
  end)
  wait_for("the runs buffer to show the run cancelled", function()
    local _, line = line_of(runs_buf, "^" .. killed)
    return line and line:find("  cancelled  ", 1, true) and line:find("outcome wbo_", 1, true)
  end)
  out("ok: X asked, then killed the run; the CLI and the runs buffer show it cancelled")

  -- o: the killed run's partial outcome.
  local outcome_id = record_of(killed).outcome_id
  check(outcome_id, "the killed run has no outcome")
  press_on(runs_buf, killed, "o")
  local outcome_buf = wait_for("the outcome buffer", function()
    return buffer_named("^workbench://outcome/")
  end)
  check(
    lines_of(outcome_buf)[1] == ("Outcome %s (run %s, partial, present)"):format(outcome_id, killed),
    "the outcome buffer: " .. lines_of(outcome_buf)[1]
  )
  out("ok: o opened the partial outcome " .. outcome_id)

  -- :WorkbenchAttach on a finished run replays it to its end; :WorkbenchKill on it is refused by the server.
  vim.cmd("WorkbenchAttach " .. killed)
  expect("the replayed run's ending", "[workbench] run cancelled", vim.log.levels.WARN)
  local replay_buf = buffer_named("^workbench://run/", run_buf)
  check(replay_buf, "no second run buffer")
  check(
    line_of(replay_buf, "^■ Run cancelled") and count_lines(replay_buf, "working on it") == 1,
    "the replay of the killed run:\n" .. table.concat(lines_of(replay_buf), "\n")
  )
  vim.cmd("WorkbenchKill! " .. killed)
  expect(
    "the refused kill",
    ("[workbench] cannot kill run %s: Run %s is not running (cancelled)"):format(killed, killed),
    vim.log.levels.ERROR
  )
  vim.cmd("WorkbenchAttach nonsense")
  expect("a malformed id", "[workbench] not a run id: nonsense (wb_…; :WorkbenchRuns lists them)", vim.log.levels.WARN)
  out("ok: :WorkbenchAttach replays a finished run, :WorkbenchKill! and a malformed id are reported")
end

"##;

/// `:WorkbenchRuns` on two runs started with `wb-lsp run --detach`: both listed running with their cost; `a`
/// attaches to one (every event replayed once, then followed to its end, the list read again), `X` kills the
/// other after the confirmation (declined first), `o` opens its partial outcome; `:WorkbenchAttach` replays a
/// finished run, `:WorkbenchKill!` on it is refused.
#[test]
fn neovim_lists_attaches_and_kills_runs() {
    if !require_neovim() {
        return;
    }
    let world = World::new(RUNS_RUNNER);
    let release = world.root.join("release");
    run_neovim_script(&world, "runs", &format!("{RUNS_HELPERS_LUA}{RUNS_TEST_LUA}"), &[("WB_TEST_RELEASE", &release)]);
}

/// A fake OpenCode that answers each turn with the task it was given, in one conversation (`ses_nv`).
const SESSION_RUNNER: &str = r#"#!/bin/sh
for last; do :; done
printf '{"type":"text","sessionID":"ses_nv","part":{"id":"t1","text":"did: %s"}}\n' "$last"
"#;

/// A session from Neovim: `:WorkbenchSession` runs the first turn, `:WorkbenchSend` the next in the same
/// buffer, the runs buffer shows the session idle with its turns and `s` sends it a turn, and a kill ends it.
const SESSION_TEST_LUA: &str = r##"
local function run()
  local repo = env("WB_TEST_REPO")
  local workbench = require("workbench")
  workbench.setup({ cmd = { env("WB_LSP_BIN"), "serve" } })
  vim.cmd("edit " .. vim.fn.fnameescape(repo .. "/.workbenches/demo/workbench.yml"))
  local manifest_buf = vim.api.nvim_get_current_buf()
  wait_for("the workbench client", function()
    local client = workbench.client(manifest_buf)
    return client and client.initialized and client or nil
  end)

  vim.cmd("WorkbenchSession write the first part")
  expect("the first turn", "[workbench] turn 1 completed", vim.log.levels.INFO)
  local id = workbench.last_session
  check(workbench.is_run_id(id), "no session id: " .. tostring(id))
  local session_buf = wait_for("the session's buffer", function()
    return buffer_named("^workbench://run/")
  end)
  check(line_of(session_buf, "did: write the first part"), "the first turn's text:\n" .. table.concat(lines_of(session_buf), "\n"))
  check(record_of(id).state == "idle", "the session is " .. tostring(record_of(id).state))
  out("ok: :WorkbenchSession ran the first turn; the session is idle")

  vim.cmd("WorkbenchSend write the second part")
  expect("the second turn", "[workbench] turn 2 completed", vim.log.levels.INFO)
  check(line_of(session_buf, "did: write the second part"), "the second turn's text is not in the session's buffer:\n" .. table.concat(lines_of(session_buf), "\n"))
  out("ok: :WorkbenchSend ran the second turn in the session's buffer")

  vim.cmd("WorkbenchRuns")
  local runs_buf = wait_for("the runs buffer", function()
    return buffer_named("^workbench://runs/")
  end)
  local _, line = wait_for("the session in the runs buffer", function()
    local index, found = line_of(runs_buf, "^" .. id)
    return index and found and found:find("session, 2 turns") and index or nil, found
  end)
  local _, line = line_of(runs_buf, "^" .. id)
  check(line:find("  idle  ") and line:find("session, 2 turns"), "the session's line: " .. tostring(line))
  vim.fn.input = function()
    return "write the third part"
  end
  press_on(runs_buf, id, "s")
  expect("the third turn", "[workbench] turn 3 completed", vim.log.levels.INFO)
  check(line_of(session_buf, "did: write the third part"), "the third turn's text")
  out("ok: s in the runs buffer sent the idle session its third turn")

  workbench.kill({ id = id, confirm = false })
  wait_for("the session to end", function()
    return record_of(id).state == "completed"
  end)
  vim.cmd("WorkbenchSend too late")
  expect("the refusal", "[workbench] cannot send session " .. id .. " its turn: Session " .. id .. " has ended", vim.log.levels.ERROR)
  out("ok: the killed session completed; sending it a turn is refused")
end
"##;

#[test]
fn neovim_runs_a_session_turn_by_turn() {
    if !require_neovim() {
        return;
    }
    let world = World::new(SESSION_RUNNER);
    run_neovim_script(&world, "session", &format!("{RUNS_HELPERS_LUA}{SESSION_TEST_LUA}"), &[]);
}

/// The Emacs runs test: `workbench-runs', attach, kill, outcome and refresh in batch Emacs with Eglot against the
/// real server, on runs started with `wb-lsp run --detach`. Exits 0 after printing `emacs: all checks passed`.
/// These are its helpers; the script ends with [`EMACS_RUN_EPILOGUE_EL`].
const EMACS_RUNS_HELPERS_EL: &str = r##";;; test.el --- workbench-runs in batch Emacs with Eglot  -*- lexical-binding: t; -*-
(require 'cl-lib)
(require 'subr-x)
(define-error 'wbt-failure "Editor test failure")
(defun wbt-out (format-string &rest args)
  (princ (concat (apply #'format format-string args) "\n")))
(defun wbt-fail (format-string &rest args)
  (signal 'wbt-failure (list (apply #'format format-string args))))
(defun wbt-check (condition format-string &rest args)
  (unless condition (apply #'wbt-fail format-string args)))
(defun wbt-env (name)
  (let ((value (getenv name)))
    (wbt-check (and value (not (string-empty-p value))) "the environment variable %s is not set" name)
    value))
(defun wbt-command (&optional command)
  "Run COMMAND as the command loop would: batch Emacs runs `post-command-hook' only when called."
  (let ((this-command command))
    (run-hooks 'pre-command-hook)
    (when command (call-interactively command))
    (run-hooks 'post-command-hook)))
(defun wbt-idle ()
  "Run the idle timers, as a command loop left idle would (Eglot sends a buffer's
  changes from one, lsp-mode's `lsp-deferred' starts from one)."
  (dolist (timer (copy-sequence timer-idle-list))
    (when (memq timer timer-idle-list)
      (timer-event-handler timer))))
(defun wbt-wait (what predicate)
  "Poll PREDICATE, running process output and timers, until non-nil; fail after 20 s."
  (let ((deadline (+ (float-time) 20)) value)
    (while (and (not (setq value (funcall predicate))) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (or value (wbt-fail "timed out waiting for %s" what))))
(defvar wbt-messages nil)
(advice-add 'message :before (lambda (format-string &rest args)
                               (when format-string (push (apply #'format-message format-string args) wbt-messages))))
(defun wbt-messaged (regexp)
  (cl-find-if (lambda (m) (string-match-p regexp m)) wbt-messages))
(defun wbt-cli (&rest args)
  "The standard output of wb-lsp ARGS; fails when it fails."
  (with-temp-buffer
    (let ((status (apply #'call-process (wbt-env "WB_LSP_BIN") nil (list t nil) nil args)))
      (wbt-check (eq status 0) "wb-lsp %s failed (%s): %s" (string-join args " ") status (buffer-string))
      (buffer-string))))
(defun wbt-record (id)
  "The CLI's record of run ID (`wb-lsp runs --all --json'), an alist."
  (cl-find-if (lambda (record) (equal (alist-get 'run_id record) id))
              (json-parse-string (wbt-cli "runs" "--all" "--json") :object-type 'alist :array-type 'list
                                 :null-object nil)))
(defun wbt-detach (task)
  (let ((output (wbt-cli "run" "--detach" "--task" task
                         (expand-file-name ".workbenches/demo" (wbt-env "WB_TEST_REPO")))))
    (wbt-check (string-match "wb_[0-9a-f]\\{24\\}" output) "no run id in %s" output)
    (match-string 0 output)))
(defun wbt-runs-line (id)
  "The line of run ID in *Workbench Runs*, or nil."
  (with-current-buffer "*Workbench Runs*"
    (save-excursion
      (goto-char (point-min))
      (when (search-forward id nil t)
        (buffer-substring-no-properties (line-beginning-position) (line-end-position))))))
(defun wbt-press-on (id key)
  "Run the command KEY is bound to in *Workbench Runs*, on the line of run ID."
  (with-current-buffer "*Workbench Runs*"
    (goto-char (point-min))
    (wbt-check (search-forward id nil t) "no line for %s:\n%s" id (buffer-string))
    (beginning-of-line)
    (call-interactively (key-binding (kbd key)))))
(defun wbt-count (buffer line)
  "How many lines of BUFFER are LINE."
  (with-current-buffer buffer
    (cl-count line (split-string (buffer-string) "\n") :test #'equal)))
"##;

/// The Emacs runs test itself (after [`EMACS_RUNS_HELPERS_EL`]).
const EMACS_RUNS_TEST_EL: &str = r##"
(defun wbt-run ()
  (let* ((repo (file-name-as-directory (wbt-env "WB_TEST_REPO")))
         (release (wbt-env "WB_TEST_RELEASE")))
    (wbt-check (require 'eglot nil t) "eglot is not installed")
    (require 'workbench-mode)
    (setq workbench-lsp-server-command (list (wbt-env "WB_LSP_BIN") "serve"))
    (setq workbench-lsp-client 'eglot)
    (setq eglot-sync-connect t)
    (find-file (expand-file-name ".workbenches/demo/workbench.yml" repo))
    (wbt-command)
    (wbt-wait "Eglot to connect to wb-lsp" #'eglot-current-server)
    (let ((released (wbt-detach "work until released"))
          (killed (wbt-detach "work until killed")))
      (dolist (id (list released killed))
        (wbt-wait (format "the cost of %s" id)
                  (lambda () (equal (alist-get 'cost_usd (wbt-record id)) 0.125))))
      (wbt-out "ok: wb-lsp run --detach started %s and %s" released killed)
      ;; The list, from the manifest's buffer.
      (wbt-command #'workbench-runs)
      (with-current-buffer "*Workbench Runs*"
        (wbt-check (eq major-mode 'workbench-runs-mode) "*Workbench Runs* is in %s" major-mode)
        (wbt-check (derived-mode-p 'tabulated-list-mode) "workbench-runs-mode is not a tabulated-list-mode")
        (wbt-check (equal (mapcar #'car tabulated-list-format)
                          '("Run" "Package" "State" "Elapsed" "Cost" "Activity / outcome"))
                   "the columns: %S" tabulated-list-format))
      (dolist (id (list released killed))
        (let ((line (wbt-runs-line id)))
          (wbt-check (and line (string-match-p (concat (regexp-quote id) " +demo +running +[0-9]+s +\\$0\\.1250") line))
                     "the line of a running run: %S" line)))
      (wbt-out "ok: workbench-runs lists both runs, running, $0.1250 each")
      ;; a: attach; every event replayed once, then followed to its end.
      (wbt-press-on released "a")
      (let ((buffer (format "*Workbench Run %s*" released))
            (started (format "▶ Run %s started: demo 0.1.0 on local (opencode)" released)))
        (wbt-wait "the replayed events"
                  (lambda () (and (get-buffer buffer)
                                  (= 1 (wbt-count buffer "  usage: 10 input, 5 output tokens; $0.1250")))))
        (wbt-check (= 1 (wbt-count buffer started)) "run.started replayed %d times" (wbt-count buffer started))
        (wbt-check (= 1 (wbt-count buffer "working on it")) "the text replayed %d times" (wbt-count buffer "working on it"))
        (wbt-check (= 1 (wbt-count buffer (format "── attached to %s" released))) "no header")
        (with-temp-file release (insert ""))
        (wbt-wait "the attached run to complete" (lambda () (wbt-messaged (format "Workbench: run %s completed" released))))
        (wbt-check (= 1 (wbt-count buffer "done")) "the live text:\n%s" (with-current-buffer buffer (buffer-string)))
        (wbt-check (with-current-buffer buffer (string-match-p "^■ Run completed in " (buffer-string)))
                   "no end in the run buffer:\n%s" (with-current-buffer buffer (buffer-string))))
      (wbt-wait "the runs buffer to show the released run completed"
                (lambda () (string-match-p " completed " (or (wbt-runs-line released) ""))))
      (wbt-out "ok: attach replayed every event once, then followed the run to its end")
      ;; k: kill, asked first.
      (cl-letf (((symbol-function 'yes-or-no-p) (lambda (&rest _) nil)))
        (wbt-press-on killed "k"))
      (wbt-check (wbt-messaged (format "Workbench: run %s goes on" killed)) "declining said nothing")
      (wbt-check (equal (alist-get 'state (wbt-record killed)) "running") "declining killed the run")
      (let (asked)
        (cl-letf (((symbol-function 'yes-or-no-p) (lambda (prompt) (setq asked prompt) t)))
          (wbt-press-on killed "k"))
        (wbt-check (equal asked (format "Kill run %s? The runner stops; the partial outcome is collected. " killed))
                   "the question: %S" asked))
      (wbt-check (wbt-messaged (format "Workbench: asked run %s to stop" killed)) "no message after the kill")
      (wbt-wait "the CLI to see the run cancelled"
                (lambda () (equal (alist-get 'state (wbt-record killed)) "cancelled")))
      (wbt-wait "the runs buffer to show the run cancelled with its outcome"
                (lambda () (string-match-p " cancelled .*outcome wbo_" (or (wbt-runs-line killed) ""))))
      (wbt-out "ok: k asked, then killed the run; the CLI and the runs buffer show it cancelled")
      ;; o: the partial outcome.
      (let ((outcome (alist-get 'outcome_id (wbt-record killed))))
        (wbt-press-on killed "o")
        (let ((buffer (get-buffer (format "*Workbench Outcome %s*" outcome))))
          (wbt-check buffer "no outcome buffer for %s" outcome)
          (with-current-buffer buffer
            (goto-char (point-min))
            (wbt-check (equal (buffer-substring-no-properties (point) (line-end-position))
                              (format "Outcome %s (run %s, partial, present)" outcome killed))
                       "the outcome buffer:\n%s" (buffer-string))))
        (wbt-out "ok: o shows the partial outcome %s" outcome))
      ;; g: read again.
      (with-current-buffer "*Workbench Runs*"
        (setq tabulated-list-entries nil)
        (tabulated-list-print)
        (wbt-check (null (wbt-runs-line killed)) "the list was not emptied")
        (call-interactively (key-binding (kbd "g"))))
      (wbt-check (wbt-runs-line killed) "g did not read the runs again")
      (wbt-out "ok: g reads the runs again")
      ;; A finished run replays to its end; killing it is refused by the server.
      (workbench-attach killed)
      (wbt-wait "the replay of the killed run" (lambda () (wbt-messaged (format "Workbench: run %s cancelled" killed))))
      (wbt-check (= 1 (wbt-count (format "*Workbench Run %s*" killed) "working on it")) "the replay is not whole")
      (let ((workbench-confirm-kill nil))
        (let ((refusal (condition-case err (progn (workbench-kill killed) nil)
                         (error (error-message-string err)))))
          (wbt-check (and refusal (string-match-p (regexp-quote (format "Run %s is not running (cancelled)" killed)) refusal))
                     "killing a cancelled run: %S" refusal)))
      (wbt-out "ok: workbench-attach replays a finished run; workbench-kill on it is refused"))))
"##;

/// Runs `wbt-run`: exits 0 after printing `emacs: all checks passed`, or prints what failed and exits 1. What a
/// server still sends while Emacs exits is not answered (a reply to a closing process would fail the exit).
const EMACS_RUN_EPILOGUE_EL: &str = r##"
(defun wbt-quit (status)
  (dolist (process (process-list))
    (set-process-filter process #'ignore)
    (set-process-sentinel process #'ignore))
  (kill-emacs status))
(condition-case err
    (progn (wbt-run) (wbt-out "emacs: all checks passed") (wbt-quit 0))
  (error (princ (format "FAIL (emacs): %s\n" (error-message-string err))) (wbt-quit 1)))
"##;

/// An outcome file by file from Emacs: `workbench-outcome-files` lists a pending outcome's changed files; `d`
/// shows README.md's two sides (read-only, in the file's mode) and their diff in `diff-mode`; `a` applies it
/// alone (the receipt stays pending); `workbench-apply` of the rest through the server makes it applied.
const EMACS_FILES_TEST_EL: &str = r##"
(defun wbt-file (path)
  (with-temp-buffer (insert-file-contents path) (buffer-string)))
(defun wbt-write (path text)
  (make-directory (file-name-directory path) t)
  (with-temp-file path (insert text)))
(defun wbt-run ()
  (let* ((repo (file-name-as-directory (wbt-env "WB_TEST_REPO")))
         (home (file-name-as-directory (wbt-env "WORKBENCH_HOME"))))
    (wbt-check (require 'eglot nil t) "eglot is not installed")
    (require 'workbench-mode)
    (setq workbench-lsp-server-command (list (wbt-env "WB_LSP_BIN") "serve"))
    (setq workbench-lsp-client 'eglot)
    (setq eglot-sync-connect t)
    (find-file (expand-file-name ".workbenches/demo/workbench.yml" repo))
    (wbt-command)
    (wbt-wait "Eglot to connect to wb-lsp" #'eglot-current-server)
    (wbt-write (expand-file-name "README.md" repo) "# Old title\n\nThe ledger service.\n")
    (wbt-write (expand-file-name "obsolete.txt" repo) "remove me\n")
    (let* ((output (wbt-cli "run" "--json" "--dir" repo "--task" "write the findings" (expand-file-name ".workbenches/demo" repo)))
           (id (progn (string-match "wbo_[0-9a-z]+" output) (match-string 0 output)))
           (receipt (expand-file-name (format "outcomes/%s/application.json" id) home)))
      (wbt-check id "no outcome in %s" output)
      ;; As an isolated runtime leaves it: the receipt pending, the workspace as before the run.
      (wbt-write receipt (format "{\"version\":1,\"outcome_id\":\"%s\",\"state\":\"pending\",\"updated_at\":\"2026-01-01T00:00:00Z\"}" id))
      (wbt-write (expand-file-name "README.md" repo) "# Old title\n\nThe ledger service.\n")
      (delete-directory (expand-file-name "notes" repo) t)
      (wbt-write (expand-file-name "obsolete.txt" repo) "remove me\n")
      (let ((buffer (workbench-outcome-files id)))
        (with-current-buffer buffer
          (let ((lines (split-string (string-trim (buffer-string)) "\n")))
            (wbt-check (equal (mapcar (lambda (line) (replace-regexp-in-string "[ \t]+" " " (string-trim line))) lines)
                              '("M README.md +1 −1" "A notes/hello.txt +1" "D obsolete.txt −1"
                                "@ Findings.html artifact, text/html, 18 bytes"
                                "~ Implementation PR link, https://github.com/example/project/pull/42"))
                       "the changed files:\n%s" (buffer-string)))
          (wbt-check (string-match-p "(pending).*a apply this file" (format "%s" header-line-format))
                     "the header: %s" header-line-format)
          (wbt-out "ok: workbench-outcome-files lists the pending outcome's three files, its artifact and its link")
          (goto-char (point-min))
          (search-forward "Findings.html")
          (call-interactively (key-binding (kbd "RET")))
          (let ((artifact (get-buffer "*Workbench artifact Findings.html*")))
            (wbt-check artifact "RET on the artifact opened nothing")
            (wbt-check (with-current-buffer artifact (and buffer-read-only (equal (buffer-string) "<h1>Findings</h1>\n")))
                       "the artifact buffer: %S" (with-current-buffer artifact (buffer-string))))
          (set-buffer buffer)
          (wbt-out "ok: RET on the artifact opens it read-only")
          (goto-char (point-min))
          (search-forward "README.md")
          (call-interactively (key-binding (kbd "d")))
          (let ((before (get-buffer "*Workbench before README.md*"))
                (after (get-buffer "*Workbench after README.md*")))
            (wbt-check (equal (with-current-buffer before (buffer-string)) "# Old title\n\nThe ledger service.\n")
                       "the before side: %S" (with-current-buffer before (buffer-string)))
            (wbt-check (equal (with-current-buffer after (buffer-string)) "# New title\n\nThe ledger service.\n")
                       "the after side: %S" (with-current-buffer after (buffer-string)))
            (wbt-check (with-current-buffer after buffer-read-only) "the after side is writable")
            ;; The mode Emacs gives a file of that name (markdown-mode when installed, else fundamental-mode).
            (let ((expected (with-temp-buffer
                              (let ((buffer-file-name (expand-file-name "README.md" temporary-file-directory)))
                                (set-auto-mode))
                              major-mode)))
              (wbt-check (with-current-buffer after (eq major-mode expected))
                         "the after side is in %s, not %s" (with-current-buffer after major-mode) expected)))
          (let ((diff (wbt-wait "the diff buffer" (lambda () (let ((b (get-buffer "*Diff*")))
                                                                 (and b (with-current-buffer b (string-match-p "Diff finished" (buffer-string))) b))))))
            (with-current-buffer diff
              (wbt-check (eq major-mode 'diff-mode) "the diff is in %s" major-mode)
              (wbt-check (and (string-match-p "^-# Old title$" (buffer-string)) (string-match-p "^\\+# New title$" (buffer-string)))
                         "the diff:\n%s" (buffer-string))))
          (wbt-out "ok: d shows README.md's two sides, read-only, and their diff in diff-mode")
          (set-buffer buffer)
          (goto-char (point-min))
          (search-forward "README.md")
          (cl-letf (((symbol-function 'yes-or-no-p) (lambda (&rest _) t)))
            (call-interactively (key-binding (kbd "a"))))
          (wbt-check (wbt-messaged (format "Workbench: applied README.md of outcome %s: 1 applied, 0 unchanged (pending)" id))
                     "no message about the file: %S" (car wbt-messages))
          (wbt-check (equal (wbt-file (expand-file-name "README.md" repo)) "# New title\n\nThe ledger service.\n") "README.md was not applied")
          (wbt-check (file-exists-p (expand-file-name "obsolete.txt" repo)) "a file not selected was applied")
          (wbt-check (string-match-p "\"pending\"" (wbt-file receipt)) "the receipt is not pending")
          (goto-char (point-min))
          (wbt-check (search-forward "(taken)" nil t) "README.md is not shown taken:\n%s" (buffer-string))
          (wbt-out "ok: a applies README.md alone; the receipt stays pending")
          (let ((result (workbench--execute-anywhere "workbench.applyOutcome" (vector (list :id id)))))
            (wbt-check (equal (workbench--get result "applicationState") "applied") "the rest: %S" result))
          (wbt-check (string-match-p "\"applied\"" (wbt-file receipt)) "the receipt is not applied")
          (wbt-out "ok: the rest applied through the server: the receipt is applied"))))))
"##;

#[test]
fn emacs_reviews_an_outcome_file_by_file() {
    if skipping() {
        eprintln!("skipping the Emacs files test: {SKIP_VARIABLE}=1");
        return;
    }
    run_emacs_script(OUTCOME_RUNNER, "files", EMACS_FILES_TEST_EL);
}

/// A session from Emacs: started with `wb-lsp run --session`, listed idle with its turns by `workbench-runs`,
/// `s` sends it a turn, `workbench-send` another, each turn's text in the session's buffer; once killed, a turn
/// is refused.
const EMACS_SESSION_TEST_EL: &str = r##"
(defun wbt-run ()
  (let* ((repo (file-name-as-directory (wbt-env "WB_TEST_REPO"))))
    (wbt-check (require 'eglot nil t) "eglot is not installed")
    (require 'workbench-mode)
    (setq workbench-lsp-server-command (list (wbt-env "WB_LSP_BIN") "serve"))
    (setq workbench-lsp-client 'eglot)
    (setq eglot-sync-connect t)
    (find-file (expand-file-name ".workbenches/demo/workbench.yml" repo))
    (wbt-command)
    (wbt-wait "Eglot to connect to wb-lsp" #'eglot-current-server)
    (let* ((output (wbt-cli "run" "--session" "--json" "--task" "write the first part"
                            (expand-file-name ".workbenches/demo" repo)))
           (id (progn (string-match "wb_[0-9a-f]\\{24\\}" output) (match-string 0 output)))
           (buffer (format "*Workbench Run %s*" id)))
      (wbt-check id "no session id in %s" output)
      (wbt-check (equal (alist-get 'state (wbt-record id)) "idle") "the session is not idle")
      (wbt-command #'workbench-runs)
      (let ((line (wbt-runs-line id)))
        (wbt-check (and line (string-match-p " idle .*session, 1 turn$" line)) "the session's line: %S" line))
      (wbt-out "ok: workbench-runs lists the session idle after its first turn")
      (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "write the second part")))
        (wbt-press-on id "s"))
      (wbt-wait "the second turn" (lambda () (wbt-messaged (format "Workbench: session %s turn 2 completed" id))))
      (wbt-check (= 1 (wbt-count buffer "did: write the second part")) "the second turn's text:\n%s"
                 (with-current-buffer buffer (buffer-string)))
      (wbt-out "ok: s sent the session its second turn")
      (workbench-send id "write the third part")
      (wbt-wait "the third turn" (lambda () (wbt-messaged (format "Workbench: session %s turn 3 completed" id))))
      (wbt-check (= 1 (wbt-count buffer "did: write the third part")) "the third turn's text:\n%s"
                 (with-current-buffer buffer (buffer-string)))
      (wbt-wait "the runs buffer to show three turns" (lambda () (string-match-p "session, 3 turns" (or (wbt-runs-line id) ""))))
      (wbt-out "ok: workbench-send ran the third turn in the session's buffer")
      (wbt-cli "kill" id)
      (wbt-check (equal (alist-get 'state (wbt-record id)) "completed") "the killed session is not completed")
      (workbench-send id "too late")
      (wbt-wait "the refusal" (lambda () (wbt-messaged (format "Session %s has ended" id))))
      (wbt-out "ok: a turn sent to the ended session is refused"))))
"##;

/// `workbench-runs` in batch Emacs with Eglot (without -Q: Debian's site-start loads elpa-eglot), on two runs
/// started with `wb-lsp run --detach`: a tabulated list with both running and their cost; `a` attaches (every
/// event replayed once, then followed to the end, the list read again), `k` kills after `yes-or-no-p` (declined
/// first), `o` shows the partial outcome, `g` reads the list again; `workbench-attach` replays a finished run and
/// `workbench-kill` on it is refused.
#[test]
fn emacs_lists_attaches_and_kills_runs() {
    if skipping() {
        eprintln!("skipping the Emacs runs test: {SKIP_VARIABLE}=1");
        return;
    }
    let available = runs("emacs", &["--batch", "--eval", "(kill-emacs (if (locate-library \"eglot\") 0 1))"]);
    assert!(
        available,
        "Emacs with Eglot is not installed (Debian/Ubuntu: `apt-get install -y emacs-nox elpa-eglot`) or set \
         {SKIP_VARIABLE}=1 to skip the editor tests."
    );
    run_emacs_script(RUNS_RUNNER, "runs", EMACS_RUNS_TEST_EL);
}

/// Runs batch Emacs (with Eglot, editors/emacs on the load path) on the runs helpers, `body` and the epilogue, in
/// a world whose fake runner is `runner`, and asserts that every check passed.
fn run_emacs_script(runner: &str, what: &str, body: &str) {
    run_emacs_script_in(&World::new(runner), what, body);
}

/// [`run_emacs_script`] in a world made by the caller.
fn run_emacs_script_in(world: &World, what: &str, body: &str) {
    run_emacs_script_with(world, what, body, &[]);
}

/// [`run_emacs_script_in`] with more directories on Emacs's load path.
fn run_emacs_script_with(world: &World, what: &str, body: &str, load_path: &[PathBuf]) {
    let script = world.root.join("test.el");
    std::fs::write(&script, format!("{EMACS_RUNS_HELPERS_EL}{body}{EMACS_RUN_EPILOGUE_EL}")).unwrap();
    let mut command = world.command("timeout");
    command.args(["--kill-after=10", "180", "emacs", "--batch"]);
    for dir in load_path {
        command.arg("-L").arg(dir);
    }
    // What package.el's activation does for an installed package: load its autoloads.
    for dir in load_path {
        for entry in std::fs::read_dir(dir).unwrap() {
            let file = entry.unwrap().path();
            if file.to_string_lossy().ends_with("-autoloads.el") {
                command.arg("-l").arg(file);
            }
        }
    }
    let output = command
        .arg("-L")
        .arg(repository_root().join("editors/emacs"))
        .arg("-l")
        .arg(&script)
        .env("WB_TEST_RELEASE", world.root.join("release"))
        .output()
        .expect("timeout and emacs run");
    world.kill_running_runs();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stdout}");
    assert!(
        output.status.success() && stdout.contains("emacs: all checks passed"),
        "the Emacs {what} test failed with {} (124/137: no result within 180 s).\n--- stdout:\n{stdout}\n\
         --- stderr:\n{stderr}",
        output.status
    );
}

/// A session in batch Emacs with Eglot: `workbench-runs` lists it idle with its turns, `s` and `workbench-send`
/// run its next turns into its buffer, and a turn sent after `kill` is refused.
#[test]
fn emacs_runs_a_session_turn_by_turn() {
    if skipping() {
        eprintln!("skipping the Emacs session test: {SKIP_VARIABLE}=1");
        return;
    }
    run_emacs_script(SESSION_RUNNER, "session", EMACS_SESSION_TEST_EL);
}

#[test]
fn emacs_with_eglot_drives_the_server() {
    // Eglot comes with Emacs 29 and later; Debian 12's Emacs 28 needs elpa-eglot (found through site-start).
    let available = runs("emacs", &["--batch", "--eval", "(kill-emacs (if (locate-library \"eglot\") 0 1))"]);
    run_editor_script(
        "Emacs with Eglot",
        available,
        "apt-get install -y emacs-nox elpa-eglot",
        "tests/editors/emacs/run.sh",
    );
}

#[test]
fn helix_languages_toml_names_the_server_and_the_manifest_glob() {
    let path = repository_root().join("editors/helix/languages.toml");
    let text = std::fs::read_to_string(&path).expect("editors/helix/languages.toml");
    let document: toml::Table = toml::from_str(&text).expect("languages.toml is valid TOML");

    let languages = document.get("language").and_then(toml::Value::as_array).expect("[[language]] tables");
    let workbench = languages
        .iter()
        .find(|language| language.get("name").and_then(toml::Value::as_str) == Some("workbench"))
        .expect("a language named workbench");
    assert_eq!(workbench.get("scope").and_then(toml::Value::as_str), Some("source.yaml"));
    assert_eq!(workbench.get("grammar").and_then(toml::Value::as_str), Some("yaml"));

    let file_types = workbench.get("file-types").and_then(toml::Value::as_array).expect("file-types");
    let globs: Vec<&str> =
        file_types.iter().filter_map(|file_type| file_type.get("glob").and_then(toml::Value::as_str)).collect();
    assert_eq!(globs, [".workbenches/*/workbench.yml"], "file-types: {file_types:?}");
    assert!(
        file_types.iter().all(toml::Value::is_table),
        "a plain extension such as \"yml\" would claim every YAML file: {file_types:?}"
    );

    let servers = workbench.get("language-servers").and_then(toml::Value::as_array).expect("language-servers");
    assert_eq!(servers, &[toml::Value::from("wb-lsp")]);

    let server = document
        .get("language-server")
        .and_then(|servers| servers.get("wb-lsp"))
        .expect("a [language-server.wb-lsp] table");
    assert_eq!(server.get("command").and_then(toml::Value::as_str), Some("wb-lsp"));
    if let Some(args) = server.get("args") {
        let args = args.as_array().expect("args is an array");
        assert!(
            args.is_empty() || args == &[toml::Value::from("serve")] || args == &[toml::Value::from("--stdio")],
            "wb-lsp serves LSP with no arguments, `serve` or `--stdio`: {args:?}"
        );
    }
}

/// The prose checks in Neovim 0.7: the warning the server publishes for instructions.md (a command `tools`
/// lacks) reaches Neovim's diagnostics for that file while only the manifest is open; with instructions.md open
/// and the client attached to it, `vim.lsp.buf.code_action()` (its menu answered by `vim.ui.select`) applies
/// "Add `jq` to tools" to the open manifest's buffer, which clears the warning; typing another command into
/// instructions.md (unsaved) brings a new one.
const PROSE_TEST_LUA: &str = r##"
local function run()
  local repo = env("WB_TEST_REPO")
  local workbench = require("workbench")
  workbench.setup({ cmd = { env("WB_LSP_BIN"), "serve" } })
  local manifest = repo .. "/.workbenches/demo/workbench.yml"
  local instructions = repo .. "/.workbenches/demo/instructions.md"
  vim.cmd("edit " .. vim.fn.fnameescape(manifest))
  local manifest_buf = vim.api.nvim_get_current_buf()
  local client = wait_for("the workbench client", function()
    local c = workbench.client(manifest_buf)
    return c and c.initialized and c or nil
  end)
  local prose_buf = vim.uri_to_bufnr(vim.uri_from_fname(instructions))
  local function prose_warning(code, message)
    for _, d in ipairs(vim.diagnostic.get(prose_buf)) do
      if d.code == code and (message == nil or d.message == message) then
        return d
      end
    end
    return nil
  end
  local warning = wait_for("the prose warning in instructions.md", function()
    return prose_warning("prose-undeclared-tool")
  end)
  check(warning.message == "Command not declared in tools: jq", "the warning: " .. warning.message)
  check(warning.lnum == 2 and warning.col == 5 and warning.end_col == 7, "the warning's place: " .. vim.inspect(warning))
  check(warning.severity == vim.diagnostic.severity.WARN, "the warning's severity: " .. tostring(warning.severity))
  out("ok: the prose warning is published for instructions.md at `jq`")

  vim.cmd("edit " .. vim.fn.fnameescape(instructions))
  check(vim.api.nvim_get_current_buf() == prose_buf, "instructions.md opened in another buffer")
  -- The plugin attaches the repository's client to the package's Markdown too.
  wait_for("the client attached to instructions.md", function()
    return vim.lsp.buf_is_attached(prose_buf, client.id)
  end)
  check(vim.bo[prose_buf].filetype ~= "yaml.workbench", "the plugin gave instructions.md the manifests' filetype")
  vim.api.nvim_win_set_cursor(0, { 3, 6 })
  local offered = {}
  vim.ui.select = function(items, opts, on_choice)
    for index, item in ipairs(items) do
      local title = opts.format_item and opts.format_item(item) or tostring(item)
      table.insert(offered, title)
      if title == "Add `jq` to tools" then
        return on_choice(item, index)
      end
    end
    on_choice(nil, nil)
  end
  vim.lsp.buf.code_action()
  wait_for("the quick fix to edit the manifest's buffer", function()
    local text = table.concat(vim.api.nvim_buf_get_lines(manifest_buf, 0, -1, false), "\n")
    return text:find("tools:\n  - git\n  - jq\n", 1, true)
  end)
  check(vim.bo[manifest_buf].modified, "the fix went to the file, not the open buffer")
  check(#offered == 1, "the code actions offered: " .. vim.inspect(offered))
  wait_for("the warning to clear once jq is in tools", function()
    return prose_warning("prose-undeclared-tool") == nil or nil
  end)
  out("ok: vim.lsp.buf.code_action() in instructions.md added jq to the manifest's tools; the warning cleared")

  vim.api.nvim_buf_set_lines(prose_buf, 2, 3, false, { "Run `jq .` and then `yq .`." })
  local typed = wait_for("a warning for the command typed into instructions.md", function()
    return prose_warning("prose-undeclared-tool", "Command not declared in tools: yq")
  end)
  check(typed.lnum == 2 and typed.col == 21, "the new warning's place: " .. vim.inspect(typed))
  out("ok: typing `yq` into the open instructions.md rechecks the package")
end
"##;

/// The prose checks in batch Emacs with Eglot: instructions.md opens in `workbench-markdown-mode`, managed by the
/// manifest's server; Flymake shows the warning at `jq`; `eglot-code-actions` (its menu answered) adds `jq` to the
/// manifest's open buffer, which clears the warning; typing another command brings a new one.
const EMACS_PROSE_TEST_EL: &str = r##"
(defun wbt-prose-warning (message)
  "The Flymake diagnostic of the current buffer that says MESSAGE, or nil.
Eglot shows it as `SOURCE [CODE]: MESSAGE'."
  (cl-find-if (lambda (d) (equal (flymake-diagnostic-text d)
                                 (concat "wb-lsp [prose-undeclared-tool]: " message)))
              (flymake-diagnostics)))
(defun wbt-run ()
  (let* ((repo (file-name-as-directory (wbt-env "WB_TEST_REPO")))
         (package (expand-file-name ".workbenches/demo/" repo))
         (manifest (expand-file-name "workbench.yml" package))
         (instructions (expand-file-name "instructions.md" package)))
    (wbt-check (require 'eglot nil t) "eglot is not installed")
    (require 'workbench-mode)
    (setq workbench-lsp-server-command (list (wbt-env "WB_LSP_BIN") "serve"))
    (setq workbench-lsp-client 'eglot)
    (setq eglot-sync-connect t)
    (find-file manifest)
    (wbt-command)
    (let ((manifest-buffer (current-buffer))
          (server (wbt-wait "Eglot to connect to wb-lsp" #'eglot-current-server)))
      (find-file instructions)
      ;; Flymake waits for a new buffer to be shown; batch Emacs never redisplays, so run what redisplay runs.
      (run-window-configuration-change-hook)
      (wbt-check (eq major-mode 'workbench-markdown-mode) "instructions.md opened in %s" major-mode)
      (wbt-command)
      (wbt-check (eq (eglot-current-server) server) "instructions.md is not managed by the manifest's server")
      (wbt-out "ok: instructions.md opens in workbench-markdown-mode, managed by the manifest's server")
      (let ((warning (wbt-wait "the prose warning in Flymake"
                               (lambda () (wbt-prose-warning "Command not declared in tools: jq")))))
        (wbt-check (eq (flymake-diagnostic-type warning) 'eglot-warning)
                   "the diagnostic's type is %S" (flymake-diagnostic-type warning))
        (wbt-check (equal (buffer-substring (flymake-diagnostic-beg warning) (flymake-diagnostic-end warning)) "jq")
                   "the warning covers %S" (buffer-substring (flymake-diagnostic-beg warning)
                                                              (flymake-diagnostic-end warning)))
        (wbt-out "ok: Flymake shows the prose warning at `jq' in instructions.md")
        (goto-char (flymake-diagnostic-beg warning)))
      ;; M-x eglot-code-actions, its menu answered: one fix, and it edits the manifest's buffer.
      (let (offered)
        (cl-letf (((symbol-function 'completing-read)
                   (lambda (_prompt collection &rest _)
                     (setq offered (mapcar #'car collection))
                     "Add `jq` to tools")))
          (let ((last-nonmenu-event ?\r))
            (eglot-code-actions (point) (point) nil t)))
        (wbt-check (equal offered '("Add `jq` to tools")) "the code actions offered: %S" offered))
      (with-current-buffer manifest-buffer
        (wbt-check (string-match-p "tools:\n  - git\n  - jq\n" (buffer-string))
                   "the manifest's buffer after the fix:\n%s" (buffer-string))
        (wbt-check (buffer-modified-p) "the fix went to the file, not the open buffer")
        (wbt-command)
        (wbt-idle))
      (wbt-wait "the warning to clear once jq is in tools"
                (lambda () (not (wbt-prose-warning "Command not declared in tools: jq"))))
      (wbt-out "ok: eglot-code-actions in instructions.md added jq to the manifest's tools; the warning cleared")
      (goto-char (point-max))
      (insert "Then run `yq .` on it.\n")
      (wbt-command)
      (wbt-wait "a warning for the command typed into instructions.md"
                (lambda () (wbt-idle) (wbt-prose-warning "Command not declared in tools: yq")))
      (wbt-out "ok: typing `yq' into the open instructions.md rechecks the package"))))
"##;

/// wb-lsp through lsp-mode (Debian's elpa-lsp-mode, unpacked by scripts/install-lsp-mode.sh) in batch Emacs:
/// `workbench-lsp-client` set to `lsp-mode` starts the server for a manifest with the repository as its root; the
/// manifest's diagnostic, hover, instructions.md in `workbench-markdown-mode` on the same workspace with its prose
/// warning, and `workbench-check-workspace` through `lsp-request`.
const EMACS_LSP_MODE_TEST_EL: &str = r##"
(defun wbt-lsp-diagnostic (file message)
  "The diagnostic lsp-mode holds for FILE that says MESSAGE, or nil."
  (cl-find-if (lambda (d) (equal (gethash "message" d) message)) (gethash file (lsp-diagnostics t))))
(defun wbt-run ()
  (let* ((repo (file-name-as-directory (wbt-env "WB_TEST_REPO")))
         (package (expand-file-name ".workbenches/demo/" repo))
         (manifest (expand-file-name "workbench.yml" package))
         (instructions (expand-file-name "instructions.md" package)))
    (wbt-check (require 'lsp-mode nil t) "lsp-mode is not on the load path")
    (require 'workbench-mode)
    (setq lsp-session-file (expand-file-name "lsp-session" (wbt-env "HOME"))
          lsp-auto-guess-root t
          lsp-enable-file-watchers nil
          lsp-keep-workspace-alive nil
          lsp-restart 'ignore)
    (setq workbench-lsp-server-command (list (wbt-env "WB_LSP_BIN") "serve"))
    (setq workbench-lsp-client 'lsp-mode)
    (find-file manifest)
    (wbt-check (eq major-mode 'workbench-mode) "the manifest opened in %s" major-mode)
    ;; lsp-deferred waits for the buffer to be shown: batch Emacs never redisplays, so run what redisplay runs.
    (run-window-configuration-change-hook)
    (wbt-command)
    (let ((workspace (wbt-wait "lsp-mode to start wb-lsp" (lambda () (wbt-idle) (car (lsp-workspaces))))))
      (wbt-check (eq (lsp--client-server-id (lsp--workspace-client workspace)) 'wb-lsp)
                 "the workspace's client is %S" (lsp--client-server-id (lsp--workspace-client workspace)))
      (wbt-check (equal (file-name-as-directory (lsp--workspace-root workspace)) repo)
                 "the workspace root is %s, expected %s" (lsp--workspace-root workspace) repo)
      (wbt-out "ok: lsp-mode started wb-lsp for the manifest, the repository as its root")
      (let ((diagnostic (wbt-wait "the manifest's diagnostic"
                                  (lambda () (wbt-idle) (wbt-lsp-diagnostic manifest "Unsupported runner: open-code")))))
        (wbt-check (equal (gethash "code" diagnostic) "unsupported-runner") "the code is %S" (gethash "code" diagnostic))
        (wbt-check (equal (gethash "line" (gethash "start" (gethash "range" diagnostic))) 3)
                   "the diagnostic is not on line 4: %S" (gethash "range" diagnostic)))
      (wbt-out "ok: lsp-mode holds the diagnostic 4: Unsupported runner: open-code")
      (goto-char (point-min))
      (forward-line 3)
      (forward-char 2)
      (let* ((hover (lsp-request "textDocument/hover" (lsp--text-document-position-params)))
             (contents (and hover (gethash "contents" hover)))
             (text (if (hash-table-p contents) (gethash "value" contents) (format "%S" contents))))
        (wbt-check (string-match-p (regexp-quote "runner: opencode") text) "hover on `runner' is %S" text))
      (wbt-out "ok: hover on `runner' through lsp-request documents the field")
      (find-file instructions)
      (run-window-configuration-change-hook)
      (wbt-command)
      (wbt-check (eq major-mode 'workbench-markdown-mode) "instructions.md opened in %s" major-mode)
      (wbt-wait "lsp-mode to attach instructions.md to the same workspace"
                (lambda () (wbt-idle) (memq workspace (lsp-workspaces))))
      (wbt-wait "the prose warning in instructions.md"
                (lambda () (wbt-idle) (wbt-lsp-diagnostic instructions "Command not declared in tools: jq")))
      (wbt-out "ok: instructions.md is served by the same workspace, with its prose warning")
      (let ((result (workbench-check-workspace)))
        (wbt-check (equal (workbench--get result "packages") 1) "workbench.checkWorkspace answered %S" result))
      (wbt-out "ok: workbench-check-workspace through lsp-mode checks the 1 package"))))
"##;

#[test]
fn emacs_with_lsp_mode_drives_the_server() {
    if skipping() {
        eprintln!("skipping the Emacs lsp-mode test: {SKIP_VARIABLE}=1");
        return;
    }
    let sources = std::env::var_os("WB_LSP_MODE_SOURCES").map(PathBuf::from).filter(|dir| dir.is_dir());
    let sources = sources.unwrap_or_else(|| {
        panic!(
            "WB_LSP_MODE_SOURCES does not name lsp-mode's unpacked sources: run the suite with scripts/test.sh, or \
             set WB_LSP_MODE_SOURCES=\"$(scripts/install-lsp-mode.sh)\" (or {SKIP_VARIABLE}=1 to skip the editor tests)"
        )
    });
    let mut load_path: Vec<PathBuf> =
        std::fs::read_dir(&sources).unwrap().map(|entry| entry.unwrap().path()).filter(|p| p.is_dir()).collect();
    load_path.sort();
    let world = prose_world();
    let manifest = world.repo.join(".workbenches/demo/workbench.yml");
    let text = std::fs::read_to_string(&manifest).unwrap().replace("runner: opencode", "runner: open-code");
    std::fs::write(&manifest, text).unwrap();
    run_emacs_script_with(&world, "lsp-mode", EMACS_LSP_MODE_TEST_EL, &load_path);
}

#[test]
fn emacs_shows_and_fixes_a_prose_warning_in_the_instructions() {
    if skipping() {
        eprintln!("skipping the Emacs prose test: {SKIP_VARIABLE}=1");
        return;
    }
    run_emacs_script_in(&prose_world(), "prose", EMACS_PROSE_TEST_EL);
}

/// A repository whose `demo` package's instructions run `jq`, which its `tools` lacks.
fn prose_world() -> World {
    let world = World::new("#!/bin/sh\n");
    let package = world.repo.join(".workbenches/demo");
    std::fs::write(
        package.join("workbench.yml"),
        "spec: 1\nversion: 0.1.0\nname: demo\nrunner: opencode\nmodel:\n  id: openai/gpt-5.6-terra\n\
         instructions: ./instructions.md\ntools:\n  - git\nruntimes:\n  local: {}\n",
    )
    .unwrap();
    std::fs::write(package.join("instructions.md"), "# Demo\n\nRun `jq .` on the data, then `git status`.\n").unwrap();
    world
}

#[test]
fn neovim_shows_and_fixes_a_prose_warning_in_the_instructions() {
    if !require_neovim() {
        return;
    }
    run_neovim_script(&prose_world(), "prose", PROSE_TEST_LUA, &[]);
}

/// A repository whose `demo` package has a trial task with a gate that has no `run`.
fn trial_world() -> World {
    let world = prose_world();
    let task = world.repo.join(".workbenches/demo/trials/fix-bug");
    std::fs::create_dir_all(&task).unwrap();
    std::fs::write(task.join("prompt.md"), "Fix the bug.\n").unwrap();
    std::fs::write(
        task.join("task.json"),
        "{\"version\": 1, \"id\": \"fix-bug\", \"title\": \"Fix\", \"fixture\": {\"kind\": \"empty\"},\n \"gates\": [{\"id\": \"tests\"}]}\n",
    )
    .unwrap();
    world
}

/// A trial task in Neovim: the plugin attaches the client to `trials/<id>/task.json`, which shows the task's
/// problem where it is written.
const TRIAL_TEST_LUA: &str = r##"
local function run()
  local repo = env("WB_TEST_REPO")
  local workbench = require("workbench")
  workbench.setup({ cmd = { env("WB_LSP_BIN"), "serve" } })
  local task = repo .. "/.workbenches/demo/trials/fix-bug/task.json"
  vim.cmd("edit " .. vim.fn.fnameescape(task))
  local buf = vim.api.nvim_get_current_buf()
  wait_for("the workbench client on task.json", function()
    local c = workbench.client(buf)
    return c and c.initialized and c or nil
  end)
  local problem = wait_for("the task's diagnostic", function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.message == "Trial task gates[0].run is required" then
        return d
      end
    end
    return nil
  end)
  check(problem.lnum == 1 and problem.severity == vim.diagnostic.severity.ERROR, "the diagnostic: " .. vim.inspect(problem))
  out("ok: task.json gets the client and its missing gate command is shown")
end
"##;

#[test]
fn neovim_checks_an_open_trial_task() {
    if !require_neovim() {
        return;
    }
    run_neovim_script(&trial_world(), "trial", TRIAL_TEST_LUA, &[]);
}

/// A trial task in batch Emacs with Eglot: `task.json` opens in `workbench-task-mode`, managed by wb-lsp, and
/// Flymake shows the gate that has no `run`.
const EMACS_TRIAL_TEST_EL: &str = r##"
(defun wbt-run ()
  (let* ((repo (file-name-as-directory (wbt-env "WB_TEST_REPO")))
         (task (expand-file-name ".workbenches/demo/trials/fix-bug/task.json" repo)))
    (wbt-check (require 'eglot nil t) "eglot is not installed")
    (require 'workbench-mode)
    (setq workbench-lsp-server-command (list (wbt-env "WB_LSP_BIN") "serve"))
    (setq workbench-lsp-client 'eglot)
    (setq eglot-sync-connect t)
    (find-file task)
    (run-window-configuration-change-hook)
    (wbt-check (eq major-mode 'workbench-task-mode) "task.json opened in %s" major-mode)
    (wbt-command)
    (wbt-wait "Eglot to connect to wb-lsp" #'eglot-current-server)
    (wbt-out "ok: task.json opens in workbench-task-mode, managed by wb-lsp")
    (wbt-wait "the gate's problem in Flymake"
              (lambda ()
                (wbt-idle)
                (cl-find-if (lambda (d) (equal (flymake-diagnostic-text d)
                                               "wb-lsp [missing-field]: Trial task gates[0].run is required"))
                            (flymake-diagnostics))))
    (wbt-out "ok: Flymake shows the gate with no run")))
"##;

#[test]
fn emacs_checks_an_open_trial_task() {
    if skipping() {
        eprintln!("skipping the Emacs trial test: {SKIP_VARIABLE}=1");
        return;
    }
    run_emacs_script_in(&trial_world(), "trial", EMACS_TRIAL_TEST_EL);
}

/// A repository whose `demo` package has a trial task its fake agent passes in both arms.
fn trial_run_world() -> World {
    let world = World::new(
        "#!/bin/sh\necho hello > hello.txt\nprintf '{\"type\":\"text\",\"part\":{\"type\":\"text\",\"text\":\"done\"}}\\n'\n",
    );
    let task = world.repo.join(".workbenches/demo/trials/hello");
    std::fs::create_dir_all(&task).unwrap();
    std::fs::write(task.join("prompt.md"), "Say hello.\n").unwrap();
    std::fs::write(
        task.join("task.json"),
        "{\"version\": 1, \"id\": \"hello\", \"title\": \"Hello\", \"fixture\": {\"kind\": \"empty\"},\n \"gates\": [{\"id\": \"said\", \"run\": \"test -f hello.txt\"}]}\n",
    )
    .unwrap();
    // The "browser" records what it was asked to open.
    let opener = world.root.join("bin/record-open");
    std::fs::write(&opener, format!("#!/bin/sh\necho \"$1\" > {}\n", world.root.join("opened.txt").display())).unwrap();
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
    world
}

/// `:WorkbenchTrial` on the manifest runs the package's trial through the server, and `:WorkbenchTrialReport`
/// opens its report with the configured opener.
const NVIM_TRIAL_RUN_LUA: &str = r##"
local function run()
  local repo = env("WB_TEST_REPO")
  local workbench = require("workbench")
  workbench.setup({ cmd = { env("WB_LSP_BIN"), "serve" } })
  vim.g.workbench_open_command = env("WB_TEST_OPENER")
  vim.cmd("edit " .. vim.fn.fnameescape(repo .. "/.workbenches/demo/workbench.yml"))
  local buf = vim.api.nvim_get_current_buf()
  wait_for("the workbench client", function()
    local c = workbench.client(buf)
    return c and c.initialized and c or nil
  end)
  vim.cmd("WorkbenchTrial reps=1 parallel=2")
  local job = nil
  local ok = vim.wait(120000, function()
    job = workbench.last_trial
    return job ~= nil
  end, 50)
  check(ok, "the trial did not end within 120 s")
  check(job.done == 2 and job.works == 2, "the trial's job: " .. vim.inspect(job))
  check(job.summary:match("^trials 0%.1%.0: 1/1 works"), "its line: " .. tostring(job.summary))
  out("ok: :WorkbenchTrial ran the trial: " .. job.summary)
  vim.cmd("WorkbenchTrialReport")
  local opened = wait_for("the report opened", function()
    local text = read(env("WB_TEST_OPENED"))
    return text and text:match("report%.html") and text or nil
  end)
  check(opened:match("/trials/" .. job.jobId .. "/report%.html"), "opened: " .. opened)
  out("ok: :WorkbenchTrialReport opened " .. vim.trim(opened))
end
"##;

#[test]
fn neovim_runs_a_trial_and_opens_its_report() {
    if !require_neovim() {
        return;
    }
    let world = trial_run_world();
    let opener = world.root.join("bin/record-open");
    let opened = world.root.join("opened.txt");
    run_neovim_script(
        &world,
        "trial run",
        NVIM_TRIAL_RUN_LUA,
        &[("WB_TEST_OPENER", &opener), ("WB_TEST_OPENED", &opened)],
    );
}

/// A trial in batch Emacs with Eglot: `workbench-run-trials` runs it without blocking, and
/// `workbench-open-trial-report` opens its report with `workbench-open-report-function`.
const EMACS_TRIAL_RUN_EL: &str = r##"
(defun wbt-run ()
  (let* ((repo (file-name-as-directory (wbt-env "WB_TEST_REPO")))
         (manifest (expand-file-name ".workbenches/demo/workbench.yml" repo))
         (opened nil))
    (wbt-check (require 'eglot nil t) "eglot is not installed")
    (require 'workbench-mode)
    (setq workbench-lsp-server-command (list (wbt-env "WB_LSP_BIN") "serve"))
    (setq workbench-lsp-client 'eglot)
    (setq eglot-sync-connect t)
    (find-file manifest)
    (run-window-configuration-change-hook)
    (wbt-command)
    (wbt-wait "Eglot to connect to wb-lsp" #'eglot-current-server)
    (workbench-run-trials)
    (let ((deadline (+ (float-time) 120)))
      (while (and (not workbench-last-trial) (< (float-time) deadline))
        (accept-process-output nil 0.05)))
    (wbt-check workbench-last-trial "the trial did not end within 120 s")
    (wbt-check (equal (workbench--get workbench-last-trial "done") 2) "the job: %S" workbench-last-trial)
    (wbt-check (string-prefix-p "trials 0.1.0: 1/1 works" (workbench--get workbench-last-trial "summary"))
               "its line: %S" (workbench--get workbench-last-trial "summary"))
    (wbt-out "ok: workbench-run-trials ran the trial: %s" (workbench--get workbench-last-trial "summary"))
    (setq workbench-open-report-function (lambda (file) (setq opened file)))
    (workbench-open-trial-report)
    (wbt-check (and opened (string-suffix-p "/report.html" opened) (file-exists-p opened)) "opened: %S" opened)
    (wbt-out "ok: workbench-open-trial-report opened %s" opened)))
"##;

#[test]
fn emacs_runs_a_trial_and_opens_its_report() {
    if skipping() {
        eprintln!("skipping the Emacs trial test: {SKIP_VARIABLE}=1");
        return;
    }
    run_emacs_script_in(&trial_run_world(), "trial run", EMACS_TRIAL_RUN_EL);
}

/// A fake Claude Code that asks (its control protocol on stdin and stdout): permission for a Bash command, then
/// a question; it keeps each line it read in `LOG`, and its final text says it was answered.
const ASKING_CLAUDE: &str = r#"#!/bin/sh
log='LOG'

IFS= read -r line || exit 4
printf '%s\n' "$line" >> "$log"
printf '%s\n' '{"type":"control_request","request_id":"n1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"rm obsolete.txt"},"tool_use_id":"t1"}}'
IFS= read -r line || exit 5
printf '%s\n' "$line" >> "$log"
printf '%s\n' '{"type":"control_request","request_id":"n2","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","tool_use_id":"t2","input":{"questions":[{"question":"Which colour?","header":"Colour","multiSelect":false,"options":[{"label":"Red"},{"label":"Blue"}]}]}}}'
IFS= read -r line || exit 6
printf '%s\n' "$line" >> "$log"
printf '%s\n' '{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"asked and answered"}]}}'
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"asked and answered","usage":{"input_tokens":1,"output_tokens":1},"total_cost_usd":0}'
"#;

impl World {
    /// A Claude Code package (`.workbenches/asker`) whose runner is [`ASKING_CLAUDE`]; returns where it logs.
    fn with_asking_claude(&self) -> PathBuf {
        let package = self.repo.join(".workbenches/asker");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(
            package.join("workbench.yml"),
            "spec: 1\nversion: 0.1.0\nname: asker\nrunner: claude-code\nmodel:\n  id: anthropic/claude-sonnet-4.5\n\
             instructions: ./instructions.md\nruntimes:\n  local: {}\n",
        )
        .unwrap();
        std::fs::write(package.join("instructions.md"), "# Asker\n").unwrap();
        let log = self.root.join("claude-read.txt");
        let claude = self.root.join("bin/claude");
        std::fs::write(&claude, ASKING_CLAUDE.replace("'LOG'", &format!("'{}'", log.display()))).unwrap();
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
        log
    }
}

/// Neovim asks what the run asks (vim.ui.select, replaced by the test to pick as a person would) and answers it
/// with `workbench.answer`: the fake Claude Code reads `allow` and the question's label, and the run completes.
const ASKS_TEST_LUA: &str = r##"
local function run()
  local repo = env("WB_TEST_REPO")
  local workbench = require("workbench")
  workbench.setup({ cmd = { env("WB_LSP_BIN"), "serve" } })
  vim.cmd("edit " .. vim.fn.fnameescape(repo .. "/.workbenches/asker/workbench.yml"))
  local manifest_buf = vim.api.nvim_get_current_buf()
  wait_for("the workbench client", function()
    local client = workbench.client(manifest_buf)
    return client and client.initialized and client or nil
  end)
  local asked = {}
  workbench.choose = function(items, options, on_choice)
    table.insert(asked, { items = items, prompt = options.prompt })
    vim.schedule(function()
      on_choice(vim.tbl_contains(items, "allow") and "allow" or "Blue")
    end)
  end
  vim.cmd("WorkbenchRun tidy the repository")
  expect("the permission request", "[workbench] permission · in_")
  expect("the question", "[workbench] question · in_")
  expect("the run to complete", "[workbench] run completed")
  check(#asked == 2, "asked " .. #asked .. " times")
  check(table.concat(asked[1].items, ",") == "allow,deny", "the permission's options: " .. table.concat(asked[1].items, ","))
  check(asked[1].prompt == "Bash: rm obsolete.txt", "the permission's prompt: " .. tostring(asked[1].prompt))
  check(asked[2].prompt == "Which colour?", "the question: " .. tostring(asked[2].prompt))
  check(vim.tbl_contains(asked[2].items, "(your own words)"), "own words offered: " .. table.concat(asked[2].items, ","))
  check(next(workbench.pending) == nil, "nothing left pending")
  -- The fake Claude Code keeps what it read beside the repository.
  local read = table.concat(vim.fn.readfile(repo .. "/../claude-read.txt"), "\n")
  check(read:find('"behavior":"allow"', 1, true), "the runner read the permission: " .. read)
  check(read:find('"Which colour?":"Blue"', 1, true), "the runner read the answer: " .. read)
  out("ok: Neovim asked the permission and the question and the runner got both answers")
end
"##;

#[test]
fn neovim_answers_what_a_run_asks() {
    if !require_neovim() {
        return;
    }
    let world = World::new(RUNS_RUNNER);
    assert_eq!(world.with_asking_claude(), world.root.join("claude-read.txt"));
    run_neovim_script(&world, "asks", &format!("{RUNS_HELPERS_LUA}{ASKS_TEST_LUA}"), &[]);
}

/// Batch Emacs with Eglot follows a run that asks (`workbench-attach`): each request is read with
/// `completing-read` (replaced by the test to pick as a person would) and answered with `workbench.answer`.
const EMACS_ASKS_TEST_EL: &str = r##"
(defvar wbt-asked nil)
(defun wbt-run ()
  (let ((repo (file-name-as-directory (wbt-env "WB_TEST_REPO"))))
    (wbt-check (require 'eglot nil t) "eglot is not installed")
    (require 'workbench-mode)
    (setq workbench-lsp-server-command (list (wbt-env "WB_LSP_BIN") "serve"))
    (setq workbench-lsp-client 'eglot)
    (setq eglot-sync-connect t)
    (setq workbench-asks-read-function
          (lambda (prompt choices &rest _)
            (push (cons prompt choices) wbt-asked)
            (if (member "allow" choices) "allow" "Blue")))
    (find-file (expand-file-name ".workbenches/asker/workbench.yml" repo))
    (wbt-command)
    (wbt-wait "Eglot to connect to wb-lsp" #'eglot-current-server)
    (let* ((output (wbt-cli "run" "--detach" "--task" "tidy the repository"
                            (expand-file-name ".workbenches/asker" repo)))
           (id (progn (string-match "wb_[0-9a-f]\\{24\\}" output) (match-string 0 output))))
      (workbench-attach id)
      (wbt-wait "the run to complete" (lambda () (equal (alist-get 'state (wbt-record id)) "completed")))
      (wbt-check (= (length wbt-asked) 2) "asked %S" wbt-asked)
      (let ((permission (car (last wbt-asked))) (question (car wbt-asked)))
        (wbt-check (equal (car permission) "Bash: rm obsolete.txt: ") "the permission's prompt: %S" permission)
        (wbt-check (equal (cdr permission) '("allow" "deny")) "the permission's options: %S" permission)
        (wbt-check (equal (cdr question) '("Red" "Blue")) "the question's options: %S" question))
      (wbt-check (wbt-messaged "Workbench: permission · in_") "the request was said: %S" wbt-messages)
      ;; The fake Claude Code keeps what it read beside the repository.
      (let ((read (with-temp-buffer (insert-file-contents (expand-file-name "../claude-read.txt" repo))
                                    (buffer-string))))
        (wbt-check (string-match-p "\"behavior\":\"allow\"" read) "the runner read: %s" read)
        (wbt-check (string-match-p "\"Which colour\\?\":\"Blue\"" read) "the runner read: %s" read))
      (wbt-out "ok: Emacs asked the permission and the question; the runner got both answers"))))
"##;

#[test]
fn emacs_answers_what_a_run_asks() {
    if skipping() {
        eprintln!("skipping the Emacs asks test: {SKIP_VARIABLE}=1");
        return;
    }
    let world = World::new(RUNS_RUNNER);
    // The script finds the log the fake Claude Code writes beside the repository.
    assert_eq!(world.with_asking_claude(), world.root.join("claude-read.txt"));
    run_emacs_script_in(&world, "asks", EMACS_ASKS_TEST_EL);
}
