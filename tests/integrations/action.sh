#!/usr/bin/env bash
# The GitHub Action (action.yml, composite) run locally by run_action.py, the way the runner runs it: inputs
# substituted into the steps, GITHUB_PATH honoured. Checks fixtures/example-repo (passes, no error or warning
# annotation, SARIF written), fixtures/cli (fails with `::error file=` annotations; SARIF still written),
# deny-warnings, paths, and the install step (with a stand-in `cargo` that records its arguments).
# Needs WB_LSP_BIN and python3 with PyYAML (pip install pyyaml).
set -euo pipefail
# shellcheck source=tests/integrations/lib.sh
source "$(dirname "$0")/lib.sh"

python3 -c 'import yaml' 2>/dev/null || fail "python3 cannot import yaml (pip install pyyaml)"
RUN_ACTION=("python3" "$REPO_ROOT/tests/integrations/run_action.py" "$REPO_ROOT")
OUT="$WORK/out.txt"
ERR="$WORK/err.txt"

# run_in WORKSPACE [--input NAME=VALUE]...: runs the action; its status in $STATUS, its output in $OUT/$ERR.
run_in() {
  local workspace="$1"
  shift
  STATUS=0
  (cd "$workspace" && "${RUN_ACTION[@]}" --workspace . "$@") >"$OUT" 2>"$ERR" || STATUS=$?
  if [ "$STATUS" = 125 ]; then
    cat "$ERR" >&2
    fail "run_action.py could not run action.yml"
  fi
}
expect_status() {
  if [ "$STATUS" != "$2" ]; then
    echo "--- stdout:" >&2
    cat "$OUT" >&2
    echo "--- stderr:" >&2
    cat "$ERR" >&2
    fail "$1: exit status $STATUS, expected $2"
  fi
}

# Every input is declared with a description and documented in docs/ci.md.
python3 - "$REPO_ROOT" <<'PY' || fail "action.yml inputs and docs/ci.md disagree"
import sys, yaml
root = sys.argv[1]
action = yaml.safe_load(open(f"{root}/action.yml"))
docs = open(f"{root}/docs/ci.md").read()
problems = []
for name, spec in action["inputs"].items():
    if not str(spec.get("description", "")).strip():
        problems.append(f"input {name} has no description")
    if f"`{name}`" not in docs:
        problems.append(f"input {name} is not documented in docs/ci.md")
for step in action["runs"]["steps"]:
    # Inputs go through env:, never into the script text (no shell injection).
    if "${{" in step.get("run", ""):
        problems.append(f"step {step.get('name')} pastes an expression into its script")
for problem in problems:
    print(problem, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
pass "every input has a description and is documented in docs/ci.md; no expression in a script"

EXAMPLE="$WORK/example"
cp -R "$REPO_ROOT/fixtures/example-repo" "$EXAMPLE"
CLI="$WORK/cli"
cp -R "$REPO_ROOT/fixtures/cli" "$CLI"

# 1. A clean repository: success, SARIF written, no error or warning annotation. (The spec 0 package's hint is
#    a ::notice.)
run_in "$EXAMPLE" --input sarif-file=results/wb-lsp.sarif
expect_status "example-repo" 0
expect_absent "example-repo" "$OUT" '^::(error|warning)'
expect_contains "example-repo" "$OUT" "::notice file=.workbenches/legacy-release/workbench.yml,line=2,col=7"
expect_contains "example-repo" "$OUT" "Using $BIN_DIR/wb-lsp (wb-lsp "
[ -s "$EXAMPLE/results/wb-lsp.sarif" ] || fail "example-repo: the SARIF file was not written"
python3 - "$EXAMPLE/results/wb-lsp.sarif" <<'PY' || fail "example-repo: unexpected SARIF"
import json, sys
sarif = json.load(open(sys.argv[1]))
assert sarif["version"] == "2.1.0", sarif["version"]
results = sarif["runs"][0]["results"]
assert [r["ruleId"] for r in results] == ["spec-0-manifest"], results
assert all(r["level"] == "note" for r in results), results
PY
pass "fixtures/example-repo passes without error or warning annotations, and the SARIF file is written"

# 2. Deny warnings on a repository without warnings still passes; a SARIF file is not written unless asked.
run_in "$EXAMPLE" --input deny-warnings=true
expect_status "example-repo, deny-warnings" 0
expect_contains "example-repo, deny-warnings" "$ERR" "[runner] skip: Write SARIF"
pass "deny-warnings passes on a repository without warnings; no SARIF unless sarif-file is set"

# 3. A repository with errors: failure, ::error annotations with file and position, SARIF written anyway.
run_in "$CLI" --input sarif-file=wb-lsp.sarif
expect_status "fixtures/cli" 1
expect_contains "fixtures/cli" "$OUT" "::error file=.workbenches/broken/workbench.yml,line=3,col=10,endLine=3,endColumn=13,title=wb-lsp invalid-type::version must be a non-empty string"
expect_contains "fixtures/cli" "$OUT" "::error file=.workbenches/broken/workbench.yml,line=12,col=1,endLine=12,endColumn=7,title=wb-lsp unknown-field::Unknown manifest field: colour"
expect_contains "fixtures/cli" "$OUT" "::warning file=.workbenches/skilled/workbench.yml,line=6,col=7"
python3 - "$CLI/wb-lsp.sarif" <<'PY' || fail "fixtures/cli: unexpected SARIF"
import json, sys
sarif = json.load(open(sys.argv[1]))
results = sarif["runs"][0]["results"]
levels = {r["level"] for r in results}
assert {"error", "warning"} <= levels, levels
uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
assert ".workbenches/broken/workbench.yml" in uris, uris
PY
pass "fixtures/cli fails with ::error file= annotations, and the SARIF file is still written"

# 4. paths: only the named packages; warnings pass unless deny-warnings.
run_in "$CLI" --input "paths=.workbenches/tidy
.workbenches/tidy/workbench.yml"
expect_status "paths=tidy" 0
expect_contains "paths=tidy" "$OUT" "::warning file=.workbenches/tidy/workbench.yml,line=8,col=1"
expect_absent "paths=tidy" "$OUT" 'broken|skilled'
run_in "$CLI" --input "paths=.workbenches/tidy" --input deny-warnings=true
expect_status "paths=tidy, deny-warnings" 1
pass "paths selects packages (newline-separated); deny-warnings fails on warnings"

# 5. A path that does not exist: failure with a diagnostic (not a crash of the action).
run_in "$EXAMPLE" --input "paths=no/such/dir"
expect_status "missing path" 1
expect_contains "missing path" "$OUT" "path-not-found"
pass "a missing path fails with path-not-found"

# 6. Bad input values are refused with a message.
run_in "$EXAMPLE" --input install=sometimes
expect_status "install=sometimes" 2
expect_contains "install=sometimes" "$OUT" "::error title=wb-lsp action::install must be auto, always or never"
run_in "$EXAMPLE" --input deny-warnings=maybe
expect_status "deny-warnings=maybe" 2
expect_contains "deny-warnings=maybe" "$OUT" "deny-warnings must be true or false"
pass "invalid install and deny-warnings values are refused"

# 7. format-check: a formatted repository passes; a manifest that is not formatted fails the step with an error
#    annotation on its file (after the check itself passed); a bad value is refused.
run_in "$EXAMPLE" --input format-check=true
expect_status "example-repo, format-check" 0
LOOSE=.workbenches/reviewer/workbench.yml
cp "$EXAMPLE/$LOOSE" "$WORK/reviewer.yml"
sed -i 's/^name: \(.*\)$/name:    "\1"/' "$EXAMPLE/$LOOSE"
run_in "$EXAMPLE"
expect_status "example-repo, loose manifest, no format-check" 0
run_in "$EXAMPLE" --input format-check=true
expect_status "example-repo, loose manifest, format-check" 1
expect_contains "format-check" "$OUT" "::error file=$LOOSE,title=wb-lsp fmt::not formatted: run wb-lsp fmt $LOOSE"
run_in "$EXAMPLE" --input format-check=sometimes
expect_status "format-check=sometimes" 2
expect_contains "format-check=sometimes" "$OUT" "format-check must be true or false"
cp "$WORK/reviewer.yml" "$EXAMPLE/$LOOSE"
pass "format-check fails on a manifest that is not formatted, with an annotation on it"

# 8. The install step, with wb-lsp absent from PATH and a stand-in cargo that records its arguments and
#    "installs" the binary under test into --root.
FAKE="$WORK/fake-cargo"
mkdir -p "$FAKE"
cat >"$FAKE/cargo" <<'SH'
#!/usr/bin/env bash
echo "cargo $*" >>"$CARGO_LOG"
root=""
while [ $# -gt 0 ]; do
  if [ "$1" = --root ]; then root="$2"; fi
  shift
done
mkdir -p "$root/bin"
ln -sf "$WB_LSP_BIN" "$root/bin/wb-lsp"
SH
chmod +x "$FAKE/cargo"
export CARGO_LOG="$WORK/cargo.log"
NO_WB_PATH="$(dirname "$(command -v python3)"):/usr/bin:/bin"
for dir in ${NO_WB_PATH//:/ }; do
  [ ! -e "$dir/wb-lsp" ] || fail "wb-lsp is installed in $dir: cannot test the install step"
done

run_install() {
  : >"$CARGO_LOG"
  STATUS=0
  (cd "$EXAMPLE" && PATH="$1" "${RUN_ACTION[@]}" --workspace . "${@:2}") >"$OUT" 2>"$ERR" || STATUS=$?
}

run_install "$NO_WB_PATH" --input install=never
expect_status "install=never without wb-lsp" 1
expect_contains "install=never" "$OUT" "::error title=wb-lsp action::wb-lsp is not on PATH and install is 'never'"
if PATH="$NO_WB_PATH" command -v cargo >/dev/null; then
  echo "note: cargo is in $NO_WB_PATH: not testing the message for a missing cargo"
else
  run_install "$NO_WB_PATH"
  expect_status "no wb-lsp, no cargo" 1
  expect_contains "no cargo" "$OUT" "cargo is not either"
fi
pass "without wb-lsp, install: never and a missing cargo fail with a clear message"

run_install "$FAKE:$NO_WB_PATH"
expect_status "install from the action's source" 0
expect_contains "install from source" "$CARGO_LOG" "cargo install --locked --root "
expect_contains "install from source" "$CARGO_LOG" "--path $REPO_ROOT/crates/wb-lsp"
expect_contains "install from source" "$OUT" "::notice file=.workbenches/legacy-release/workbench.yml"
pass "install: auto builds the action's own source with cargo install --locked --path, then checks"

for case in "v0.2.0|--tag v0.2.0" "0123456789abcdef0123456789abcdef01234567|--rev 0123456789abcdef0123456789abcdef01234567" "release-1|--branch release-1"; do
  version="${case%%|*}"
  expected="${case#*|}"
  run_install "$FAKE:$NO_WB_PATH" --input "version=$version"
  expect_status "version=$version" 0
  expect_contains "version=$version" "$CARGO_LOG" "--git https://github.com/wb-lsp/wb-lsp $expected wb-lsp"
  expect_contains "version=$version" "$CARGO_LOG" "cargo install --locked --root "
done
pass "version installs a tag, a commit or a branch with cargo install --locked --git"

run_install "$FAKE:$BIN_DIR:$NO_WB_PATH"
expect_status "wb-lsp on PATH" 0
[ ! -s "$CARGO_LOG" ] || fail "install: auto ran cargo although wb-lsp is on PATH"
run_install "$FAKE:$BIN_DIR:$NO_WB_PATH" --input install=always
expect_status "install=always" 0
expect_contains "install=always" "$CARGO_LOG" "cargo install"
pass "install: auto uses wb-lsp from PATH; install: always installs anyway"

echo "$CHECKS passed, 0 failed"
