#!/usr/bin/env bash
# Installs the official sandbox SDKs, pinned, into a cache outside the repository. The official-SDK tests run
# them against our fakes (crates/wb-sandbox-fakes/tests/official_sdks.rs), so the fakes speak what the real
# services are sent. Prints the node_modules directory.
set -euo pipefail
dir="${WB_SDKS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/wb-lsp/sdks}"
e2b=2.51.0
daytona=0.218.0
stamp="$dir/.installed-e2b-$e2b-daytona-$daytona"
if [[ ! -f "$stamp" ]]; then
  mkdir -p "$dir"
  cat > "$dir/package.json" <<JSON
{"name":"wb-lsp-sdk-oracle","private":true,"type":"module","dependencies":{"e2b":"$e2b","@daytonaio/sdk":"$daytona"}}
JSON
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error >&2)
  touch "$stamp"
fi
echo "$dir/node_modules"
