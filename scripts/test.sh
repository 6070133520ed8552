#!/usr/bin/env bash
# The whole test suite: installs what the tests need (Debian, as root), then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages the tests use. Installed only when missing, so repeated runs stay fast.
packages=(neovim emacs-nox elpa-eglot)
if [ ${#packages[@]} -gt 0 ]; then
  missing=()
  for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi

# Python tools the integration tests use (tests/integrations): pre-commit and PyYAML, from PyPI, when missing.
if ! python3 -c 'import pre_commit, yaml' >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore pre-commit pyyaml
fi

cargo test --workspace --locked "$@"
