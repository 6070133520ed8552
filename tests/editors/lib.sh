# Shared by the editor test scripts: checks the server binary and copies the fixture repositories.
# Sourced with WB_LSP_BIN set; defines REPO_ROOT, WORK, WB_TEST_REPO and WB_TEST_LEGACY_REPO, and removes WORK
# on exit unless WB_KEEP_TEMP=1.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

if [ -z "${WB_LSP_BIN:-}" ]; then
  echo "FAIL: set WB_LSP_BIN to the wb-lsp binary (cargo test -p wb-lsp --test editors does)" >&2
  exit 2
fi
if [ ! -x "$WB_LSP_BIN" ]; then
  echo "FAIL: WB_LSP_BIN=$WB_LSP_BIN is not an executable file" >&2
  exit 2
fi

# Resolved (no symlinks) so paths compare equal to what the editor and the server report.
WORK="$(cd "$(mktemp -d "${TMPDIR:-/tmp}/wb-lsp-editor-test.XXXXXX")" && pwd -P)"
if [ "${WB_KEEP_TEMP:-0}" = 1 ]; then
  echo "keeping $WORK" >&2
else
  trap 'rm -rf "$WORK"' EXIT
fi

# The repository with a known problem: .workbenches/typo has `runner: open-code` (line 4, unsupported runner).
cp -R "$REPO_ROOT/fixtures/cases/unsupported-runner" "$WORK/repo"
rm -f "$WORK/repo/expected.txt"
# A second repository whose legacy-release package is on spec 0, for the migrate command.
cp -R "$REPO_ROOT/fixtures/example-repo" "$WORK/example"
export WB_TEST_REPO="$WORK/repo"
export WB_TEST_LEGACY_REPO="$WORK/example"
# Editors and the server must not read the user's configuration or state.
export HOME="$WORK/home"
export XDG_CONFIG_HOME="$WORK/home/.config" XDG_DATA_HOME="$WORK/home/.local/share"
export XDG_STATE_HOME="$WORK/home/.local/state" XDG_CACHE_HOME="$WORK/home/.cache"
mkdir -p "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$XDG_CACHE_HOME"
# A whole editor run never takes this long; a hang is killed and reported.
WB_TEST_DEADLINE="${WB_TEST_DEADLINE:-180}"
