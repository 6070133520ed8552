#!/usr/bin/env bash
# Unpacks Debian's lsp-mode and the Emacs packages it needs into a cache outside the repository, for the Emacs
# test that drives wb-lsp through lsp-mode (crates/wb-lsp/tests/editors.rs). They are unpacked, not installed:
# installed, lsp-mode's markdown-mode would be on every Emacs's load path and change what the Eglot tests see.
# Prints the directory of the packages' sources (one subdirectory per package, each for `emacs -L`).
set -euo pipefail
dir="${WB_LSP_MODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/wb-lsp/lsp-mode}"
packages=(elpa-lsp-mode elpa-dash elpa-f elpa-s elpa-ht elpa-spinner elpa-markdown-mode elpa-lv)
sources="$dir/root/usr/share/emacs/site-lisp/elpa-src"
stamp="$dir/.unpacked-$(printf '%s\n' "${packages[@]}" | tr '\n' '-')"
if [[ ! -f "$stamp" ]]; then
  rm -rf "$dir"
  mkdir -p "$dir/debs"
  # apt-get download writes to the current directory; as root it warns that the _apt user cannot write there.
  if ! (cd "$dir/debs" && apt-get download -qq "${packages[@]}" 2>/dev/null); then
    apt-get update -qq
    (cd "$dir/debs" && apt-get download -qq "${packages[@]}" 2>/dev/null)
  fi
  for deb in "$dir"/debs/*.deb; do
    dpkg-deb -x "$deb" "$dir/root"
  done
  if ! ls "$sources"/lsp-mode-*/lsp-mode.el >/dev/null 2>&1; then
    echo "install-lsp-mode: no lsp-mode.el under $sources after unpacking ${packages[*]}" >&2
    exit 1
  fi
  touch "$stamp"
fi
echo "$sources"
