#!/usr/bin/env bash
# Installs the peers the performance bench measures beside wb-lsp, pinned, outside the repository:
# yaml-language-server (npm) and check-jsonschema (PyPI). Prints the two variables the bench reads.
#
#   eval "$(scripts/install-peers.sh)"   # then: cargo bench -p wb-lsp --bench perf
set -euo pipefail

YAML_LS_VERSION=2.0.0
CHECK_JSONSCHEMA_VERSION=0.39.0
cache="${WB_PEERS_CACHE:-$HOME/.cache/wb-lsp/peers}"
stamp="$cache/stamp-$YAML_LS_VERSION-$CHECK_JSONSCHEMA_VERSION"

if [[ ! -f "$stamp" ]]; then
  mkdir -p "$cache"
  echo "installing yaml-language-server@$YAML_LS_VERSION and check-jsonschema==$CHECK_JSONSCHEMA_VERSION into $cache" >&2
  npm install --prefix "$cache/npm" --no-audit --no-fund --loglevel=error "yaml-language-server@$YAML_LS_VERSION" >&2
  python3 -m venv "$cache/venv" >&2
  "$cache/venv/bin/pip" install --quiet --disable-pip-version-check "check-jsonschema==$CHECK_JSONSCHEMA_VERSION" >&2
  touch "$stamp"
fi
echo "export WB_PEER_YAML_LS='$cache/npm/node_modules/.bin/yaml-language-server'"
echo "export WB_PEER_CHECK_JSONSCHEMA='$cache/venv/bin/check-jsonschema'"
