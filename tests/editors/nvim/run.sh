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
