#!/usr/bin/env bash
# The whole test suite: installs what the tests need (Debian, as root), then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

# HOME may be unset (e.g. under some service managers); the runner cache, cargo and npm live under it.
if [ -z "${HOME:-}" ]; then
  HOME=$(getent passwd "$(id -u)" | cut -d: -f6 || true)
  export HOME="${HOME:-/root}"
fi

# System packages the tests use. Installed only when missing, so repeated runs stay fast.
# ripgrep: OpenCode's skill, grep and glob tools run `rg` (without it OpenCode downloads one from GitHub);
# bubblewrap and socat: Claude Code isolates its tools' subprocesses with them (crates/wb-lsp/tests/real_runners.rs).
# python3: the fake runners and the integration scripts (Debian's minbase root has none).
packages=(neovim emacs-nox elpa-eglot docker.io busybox-static ripgrep bubblewrap socat python3)
# npm installs the real runners (scripts/install-runners.sh). Debian's nodejs and npm are added only when no npm
# is on PATH at all: a Node from elsewhere (NodeSource's nodejs package, which bundles npm, or one in
# /usr/local) is left alone, as Debian's npm package conflicts with NodeSource's nodejs. Debian 12's Node is 18,
# too old for Pi; install-runners.sh then adds a Node 20 from the npm registry to the runner cache.
if [ "${WB_LSP_SKIP_REAL_RUNNERS:-}" != 1 ] && ! command -v npm >/dev/null 2>&1; then
  if dpkg -L nodejs 2>/dev/null | grep '/node_modules/npm/' >/dev/null; then
    echo "error: the installed nodejs package ($(dpkg-query -W -f='${Version}' nodejs)) bundles npm, but npm is" \
      "not on PATH ($PATH): put its directory on PATH or reinstall nodejs (WB_LSP_SKIP_REAL_RUNNERS=1 skips" \
      "the real runners)" >&2
    exit 1
  fi
  packages+=(nodejs npm)
fi
if [ ${#packages[@]} -gt 0 ]; then
  missing=()
  for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi

# Python tools the integration tests use (tests/integrations): pre-commit and PyYAML for the python3 on PATH,
# when missing. A Python whose pip may install (a pyenv or venv Python) gets them from PyPI; Debian's own
# Python (no pip, and PEP 668 marks it externally managed) gets Debian's pre-commit and python3-yaml.
python_tools() { python3 -c 'import pre_commit, yaml' >/dev/null 2>&1; }
pip_may_install() {
  python3 -m pip --version >/dev/null 2>&1 && python3 -c 'import os, sys, sysconfig
sys.exit(os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'
}
if ! python_tools; then
  if pip_may_install; then
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore pre-commit pyyaml
  else
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pre-commit python3-yaml
  fi
  if ! python_tools; then
    echo "error: python3 ($(command -v python3)) cannot import pre_commit and yaml: install pre-commit and PyYAML" \
      "for it (pip, or Debian's pre-commit and python3-yaml for /usr/bin/python3)" >&2
    exit 1
  fi
fi

# A real Docker engine for crates/wb-engine/tests/docker.rs (its images are built locally: no registry needed).
# Started in the background when none answers; WB_LSP_SKIP_DOCKER_TESTS=1 skips those tests instead.
if [ "${WB_LSP_SKIP_DOCKER_TESTS:-}" != 1 ] && ! docker info >/dev/null 2>&1; then
  if command -v dockerd >/dev/null 2>&1; then
    # A pid file left by an engine that is gone (a reboot, a killed daemon) stops dockerd from starting once
    # its number belongs to another process: it is removed unless that process is the daemon it names.
    for pair in /var/run/docker.pid:dockerd /var/run/docker/containerd/containerd.pid:containerd; do
      file=${pair%%:*} name=${pair##*:}
      pid=$(cat "$file" 2>/dev/null || true)
      if [ -f "$file" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" != "$name" ]; then
        rm -f "$file"
      fi
    done
    nohup dockerd >/tmp/wb-lsp-dockerd.log 2>&1 &
    for _ in $(seq 30); do
      [ -S /var/run/docker.sock ] && docker info >/dev/null 2>&1 && break
      sleep 1
    done
  fi
  if ! docker info >/dev/null 2>&1; then
    echo "warning: the Docker engine did not start (see /tmp/wb-lsp-dockerd.log); the docker tests will fail" >&2
    tail -n 20 /tmp/wb-lsp-dockerd.log >&2 2>/dev/null || true
  fi
fi

# The real runner CLIs (pinned, from npm) for crates/wb-lsp/tests/real_runners.rs, in a cache outside the
# repository. WB_LSP_SKIP_REAL_RUNNERS=1 skips them; otherwise a missing runner fails those tests.
if [ "${WB_LSP_SKIP_REAL_RUNNERS:-}" != 1 ]; then
  export WB_RUNNERS_DIR="${WB_RUNNERS_DIR:-$HOME/.cache/wb-lsp/runners}"
  if ! ./scripts/install-runners.sh >/dev/null; then
    echo "error: scripts/install-runners.sh failed to install the real runners into $WB_RUNNERS_DIR" \
      "(WB_LSP_SKIP_REAL_RUNNERS=1 skips them)" >&2
    exit 1
  fi
fi

# The official E2B and Daytona SDKs (pinned, from npm) for crates/wb-sandbox-fakes/tests/official_sdks.rs, in a
# cache outside the repository: they are run against our fakes so the fakes are faithful by construction.
export WB_SDKS_DIR="${WB_SDKS_DIR:-$HOME/.cache/wb-lsp/sdks}"
if ! WB_SDK_MODULES="$(./scripts/install-sdks.sh)"; then
  echo "error: scripts/install-sdks.sh failed to install the official sandbox SDKs into $WB_SDKS_DIR" >&2
  exit 1
fi
export WB_SDK_MODULES

# A real VS Code for crates/wb-lsp/tests/vscode_e2e.rs: code-server and Node 24 (pinned, from npm) and the driver's
# playwright-core in a cache outside the repository, Debian's Chromium when missing. WB_LSP_SKIP_EDITOR_TESTS=1
# skips the editor tests; otherwise a failed install fails here and a missing setup fails that test.
if [ "${WB_LSP_SKIP_EDITOR_TESTS:-}" != 1 ]; then
  export WB_VSCODE_E2E_DIR="${WB_VSCODE_E2E_DIR:-$HOME/.cache/wb-lsp/vscode-e2e}"
  if ! ./scripts/install-vscode-e2e.sh >/dev/null; then
    echo "error: scripts/install-vscode-e2e.sh failed to install code-server, Node 24 and playwright-core into" \
      "$WB_VSCODE_E2E_DIR (WB_LSP_SKIP_EDITOR_TESTS=1 skips the editor tests)" >&2
    exit 1
  fi
fi

# lsp-mode for the Emacs test that drives the server through it: Debian's elpa-lsp-mode and what it needs, unpacked
# into a cache (not installed: its markdown-mode would change what the Eglot tests see).
if [ "${WB_LSP_SKIP_EDITOR_TESTS:-}" != 1 ]; then
  if ! WB_LSP_MODE_SOURCES="$(./scripts/install-lsp-mode.sh)"; then
    echo "error: scripts/install-lsp-mode.sh failed to unpack Debian's lsp-mode (WB_LSP_SKIP_EDITOR_TESTS=1 skips" \
      "the editor tests)" >&2
    exit 1
  fi
  export WB_LSP_MODE_SOURCES
fi

cargo test --workspace --locked "$@"
