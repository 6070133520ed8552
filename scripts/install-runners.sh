#!/bin/sh
# Installs the runner versions wb-lsp's adapters are verified against (the real OpenCode, Claude Code and Pi
# CLIs from npm) into a cache outside the repository, for the end-to-end tests in
# crates/wb-lsp/tests/real_runners.rs. Prints the cache's bin directory.
#
#   WB_RUNNERS_DIR   where to install (default: ~/.cache/wb-lsp/runners)
#
# The pins here must equal each adapter's `verified_versions()` (a test compares them).
set -eu

OPENCODE=opencode-ai@1.18.33
CLAUDE_CODE=@anthropic-ai/claude-code@2.1.332
PI=@mariozechner/pi-coding-agent@0.73.1

dir="${WB_RUNNERS_DIR:-$HOME/.cache/wb-lsp/runners}"
pins="$OPENCODE $CLAUDE_CODE $PI"
stamp="$dir/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ] && [ -x "$dir/node_modules/.bin/opencode" ] \
    && [ -x "$dir/node_modules/.bin/claude" ] && [ -x "$dir/node_modules/.bin/pi" ]; then
    echo "$dir/node_modules/.bin"
    exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "install-runners: npm is required" >&2; exit 1; }
mkdir -p "$dir"
rm -f "$stamp"
printf '{ "name": "wb-lsp-runners", "private": true }\n' > "$dir/package.json"
# The runners' own install scripts fetch nothing: they link the platform binary from an npm package.
npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error $pins >&2
for exe in opencode claude pi; do
    [ -x "$dir/node_modules/.bin/$exe" ] || { echo "install-runners: $exe is missing after npm install" >&2; exit 1; }
done
printf '%s' "$pins" > "$stamp"
echo "$dir/node_modules/.bin"
