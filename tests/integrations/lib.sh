# shellcheck shell=bash
# Shared by the integration test scripts. Sourced with WB_LSP_BIN set to the wb-lsp binary (cargo test -p wb-lsp
# --test integrations does). Defines REPO_ROOT, WORK (a temporary directory, removed on exit unless
# WB_KEEP_TEMP=1) and BIN_DIR (on PATH first, holding `wb-lsp`), isolates HOME and git's configuration, and
# provides pass/fail helpers.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

if [ -z "${WB_LSP_BIN:-}" ]; then
  echo "FAIL: set WB_LSP_BIN to the wb-lsp binary (cargo test -p wb-lsp --test integrations does)" >&2
  exit 2
fi
if [ ! -x "$WB_LSP_BIN" ]; then
  echo "FAIL: WB_LSP_BIN=$WB_LSP_BIN is not an executable file" >&2
  exit 2
fi
WB_LSP_BIN="$(cd "$(dirname "$WB_LSP_BIN")" && pwd)/$(basename "$WB_LSP_BIN")"
export WB_LSP_BIN

WORK="$(cd "$(mktemp -d "${TMPDIR:-/tmp}/wb-lsp-integration.XXXXXX")" && pwd -P)"
if [ "${WB_KEEP_TEMP:-0}" = 1 ]; then
  echo "keeping $WORK" >&2
else
  trap 'rm -rf "$WORK"' EXIT
fi

# The binary under test, as `wb-lsp` first on PATH.
BIN_DIR="$WORK/bin"
mkdir -p "$BIN_DIR"
ln -s "$WB_LSP_BIN" "$BIN_DIR/wb-lsp"
export PATH="$BIN_DIR:$PATH"

# Neither the user's configuration nor their pre-commit cache.
export HOME="$WORK/home"
mkdir -p "$HOME"
export XDG_CONFIG_HOME="$HOME/.config" XDG_CACHE_HOME="$HOME/.cache"
export GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=wb-lsp-tests GIT_AUTHOR_EMAIL=tests@wb-lsp.invalid
export GIT_COMMITTER_NAME=wb-lsp-tests GIT_COMMITTER_EMAIL=tests@wb-lsp.invalid
git config --global init.defaultBranch main
git config --global advice.detachedHead false
export NO_COLOR=1

CHECKS=0
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
pass() {
  CHECKS=$((CHECKS + 1))
  echo "ok - $*"
}

# expect_contains LABEL FILE TEXT: FILE contains TEXT (fixed string).
expect_contains() {
  grep -qF -- "$3" "$2" || { echo "--- $2:" >&2; cat "$2" >&2; fail "$1: expected to find: $3"; }
}
# expect_absent LABEL FILE REGEX: no line of FILE matches REGEX.
expect_absent() {
  if grep -qE -- "$3" "$2"; then
    echo "--- $2:" >&2
    cat "$2" >&2
    fail "$1: expected no line matching: $3"
  fi
}

# copy_fixture NAME DEST: copies fixtures/NAME to DEST as a fresh git repository with one commit.
copy_fixture() {
  cp -R "$REPO_ROOT/fixtures/$1" "$2"
  git -C "$2" init --quiet
  git -C "$2" add -A
  git -C "$2" commit --quiet -m "fixture $1"
}
