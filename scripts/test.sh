#!/usr/bin/env bash
# The whole test suite: installs what the tests need (Debian, as root), then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages the tests use. Installed only when missing, so repeated runs stay fast.
packages=()
if [ ${#packages[@]} -gt 0 ]; then
  missing=()
  for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi

cargo test --workspace --locked "$@"
