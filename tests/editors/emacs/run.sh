#!/usr/bin/env bash
# Byte-compiles every file of editors/emacs (workbench-mode.el and the parts it loads) with warnings as errors, then runs tests/editors/emacs/test.el
# in `emacs --batch` (without -Q, so Debian's site-start loads elpa-eglot) against the wb-lsp binary named by
# WB_LSP_BIN. Exits non-zero with a message on failure.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../lib.sh
source "$HERE/../lib.sh"

EMACS="${EMACS:-emacs}"
if ! command -v "$EMACS" >/dev/null 2>&1; then
  echo "FAIL: $EMACS is not installed (Debian/Ubuntu: apt-get install -y emacs-nox elpa-eglot)" >&2
  exit 3
fi
"$EMACS" --version | head -n 1

# Compiled in a copy, so no .elc lands in the source tree.
mkdir -p "$WORK/elisp"
cp "$REPO_ROOT"/editors/emacs/*.el "$WORK/elisp/"
if ! timeout --kill-after=10 "$WB_TEST_DEADLINE" "$EMACS" --batch -L "$WORK/elisp" \
  --eval '(setq byte-compile-error-on-warn t)' \
  -f batch-byte-compile "$WORK"/elisp/*.el </dev/null; then
  echo "FAIL (emacs): the package does not byte-compile cleanly" >&2
  exit 1
fi
echo "ok: workbench-mode.el and its parts byte-compile with byte-compile-error-on-warn"

# With yaml-mode installed (here a stand-in), workbench-mode derives from it.
mkdir -p "$WORK/yaml-mode"
cat >"$WORK/yaml-mode/yaml-mode.el" <<'ELISP'
;;; yaml-mode.el --- a stand-in for the yaml-mode package  -*- lexical-binding: t; -*-
(define-derived-mode yaml-mode text-mode "YAML")
(provide 'yaml-mode)
ELISP
if ! timeout --kill-after=10 "$WB_TEST_DEADLINE" "$EMACS" --batch -L "$WORK/yaml-mode" -L "$WORK/elisp" \
  --eval "(progn (require 'workbench-mode)
                 (find-file \"$WB_TEST_REPO/.workbenches/typo/workbench.yml\")
                 (kill-emacs (if (and (eq major-mode 'workbench-mode) (derived-mode-p 'yaml-mode)) 0 1)))" \
  </dev/null; then
  echo "FAIL (emacs): with yaml-mode installed, manifests do not open in a workbench-mode derived from it" >&2
  exit 1
fi
echo "ok: with yaml-mode installed, workbench-mode derives from it"

status=0
timeout --kill-after=10 "$WB_TEST_DEADLINE" \
  "$EMACS" --batch -L "$WORK/elisp" -l "$HERE/test.el" </dev/null || status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "FAIL (emacs): no result within ${WB_TEST_DEADLINE}s" >&2
fi
exit "$status"
