#!/usr/bin/env bash
# Runs tests/editors/nvim/test.lua in headless Neovim (`nvim --headless -u NONE`) with editors/nvim on the
# runtimepath, against the wb-lsp binary named by WB_LSP_BIN. Exits non-zero with a message on failure.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../lib.sh
source "$HERE/../lib.sh"

NVIM="${NVIM:-nvim}"
if ! command -v "$NVIM" >/dev/null 2>&1; then
  echo "FAIL: $NVIM is not installed (Debian/Ubuntu: apt-get install -y neovim)" >&2
  exit 3
fi
"$NVIM" --version | head -n 1

# For :WorkbenchDryRun, :WorkbenchSmoke and :WorkbenchRun: a valid package whose runner is a fake `opencode`
# on PATH (it prints one text part and its usage; a task containing "slow" waits to be cancelled; one containing
# "fails" reports a failed tool (its message ends in an escape sequence) and a failed run, each with a message of
# two lines, and declares an outcome whose summary has two lines), and a credential for the model's provider in
# the editor's environment, which the server inherits.
RUN_REPO="$WORK/run-repo"
mkdir -p "$RUN_REPO/.workbenches/demo" "$WORK/bin"
cat >"$RUN_REPO/.workbenches/demo/workbench.yml" <<'YAML'
spec: 1
version: 0.1.0
name: demo
runner: opencode
model:
  id: openai/gpt-5.6-terra
instructions: ./instructions.md
runtimes:
  local: {}
YAML
printf '# Demo\n' >"$RUN_REPO/.workbenches/demo/instructions.md"
cat >"$WORK/bin/opencode" <<'SH'
#!/bin/sh
for last; do :; done
case "$last" in
  *slow*)
    echo '{"type":"text","part":{"id":"w","text":"working"}}'
    exec sleep 60
    ;;
  *fails*)
    printf '%s\n' '{"type":"tool_use","part":{"callID":"c1","tool":"bash","state":{"status":"error","title":"ls missing","error":"exit status 2\nls: missing: No such file or directory\u001b[0m"}}}'
    printf '%s\n' '{"type":"error","error":{"message":"The model request failed\nrate limited (429)"}}'
    mkdir -p "$WORKBENCH_OUTPUT_DIR"
    printf '%s\n' '{"version": 1, "summary": "Stopped early.\nThe model request failed."}' >"$WORKBENCH_OUTPUT_DIR/outcome.json"
    exit 1
    ;;
esac
echo '{"type":"text","part":{"id":"t","text":"done"}}'
echo '{"type":"step_finish","part":{"tokens":{"input":3,"output":1}}}'
SH
chmod +x "$WORK/bin/opencode"
export WB_TEST_RUN_REPO="$RUN_REPO"
export PATH="$WORK/bin:$PATH"
export OPENAI_API_KEY=sk-test

status=0
timeout --kill-after=10 "$WB_TEST_DEADLINE" \
  "$NVIM" --headless -u NONE -i NONE -n \
  --cmd "set runtimepath^=$REPO_ROOT/editors/nvim" \
  -c "luafile $HERE/test.lua" </dev/null || status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "FAIL (nvim): no result within ${WB_TEST_DEADLINE}s" >&2
fi
if [ "$status" -ne 0 ] && [ -f "$XDG_STATE_HOME/nvim/lsp.log" ]; then
  echo "--- the Neovim LSP log (last 40 lines):" >&2
  tail -n 40 "$XDG_STATE_HOME/nvim/lsp.log" >&2
fi
if [ "$status" -ne 0 ] && [ -f "$XDG_CACHE_HOME/nvim/lsp.log" ]; then
  echo "--- the Neovim LSP log (last 40 lines):" >&2
  tail -n 40 "$XDG_CACHE_HOME/nvim/lsp.log" >&2
fi
exit "$status"
