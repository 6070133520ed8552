#!/usr/bin/env bash
# The pre-commit hook (.pre-commit-hooks.yaml, id wb-lsp-check) run by the real pre-commit, on a copy of
# fixtures/example-repo: passes as it is, fails with the diagnostic once a manifest has an error, is skipped when
# no package file is given, and blocks a real `git commit` once installed.
# Needs WB_LSP_BIN (the wb-lsp binary, put on PATH as `wb-lsp`: the hook is `language: system`) and pre-commit
# for python3 (pip install pre-commit).
set -euo pipefail
# shellcheck source=tests/integrations/lib.sh
source "$(dirname "$0")/lib.sh"

# Through python3, so that a pip install without a `pre-commit` script on PATH (pyenv before a rehash) works.
pre-commit() { python3 -m pre_commit "$@"; }
pre-commit --version >/dev/null 2>&1 || fail "pre-commit is not installed for python3 (pip install pre-commit)"
export PRE_COMMIT_HOME="$WORK/pre-commit-cache"
echo "pre-commit $(pre-commit --version | awk '{print $2}'), wb-lsp $("$WB_LSP_BIN" --version | awk '{print $2}')"

# The hook repository: this repository when its .pre-commit-hooks.yaml is committed as it is; otherwise (work in
# progress, or no git checkout) a one-commit repository holding the working copy of the file. pre-commit
# try-repo copies uncommitted changes of tracked files only, so a new or changed hooks file needs the copy.
if git -C "$REPO_ROOT" rev-parse --git-dir >/dev/null 2>&1 \
  && git -C "$REPO_ROOT" cat-file -e HEAD:.pre-commit-hooks.yaml 2>/dev/null \
  && git -C "$REPO_ROOT" diff --quiet HEAD -- .pre-commit-hooks.yaml; then
  HOOK_REPO="$REPO_ROOT"
else
  HOOK_REPO="$WORK/hook-repo"
  mkdir -p "$HOOK_REPO"
  cp "$REPO_ROOT/.pre-commit-hooks.yaml" "$HOOK_REPO/"
  git -C "$HOOK_REPO" init --quiet
  git -C "$HOOK_REPO" add .pre-commit-hooks.yaml
  git -C "$HOOK_REPO" commit --quiet -m "hooks"
  echo "note: .pre-commit-hooks.yaml is not committed as it is; testing a copy in $HOOK_REPO"
fi
HOOK_REV="$(git -C "$HOOK_REPO" rev-parse HEAD)"

SAMPLE="$WORK/sample"
copy_fixture example-repo "$SAMPLE"
cd "$SAMPLE"
OUT="$WORK/out.txt"

# 1. The clean repository passes.
if ! pre-commit try-repo "$HOOK_REPO" wb-lsp-check --all-files >"$OUT" 2>&1; then
  cat "$OUT" >&2
  fail "wb-lsp-check failed on the clean example repository"
fi
expect_contains "clean run" "$OUT" "wb-lsp check"
expect_contains "clean run" "$OUT" "Passed"
pass "try-repo --all-files passes on fixtures/example-repo"

# 2. A file outside the packages does not run the hook.
pre-commit try-repo "$HOOK_REPO" wb-lsp-check --files src/server.ts README.md >"$OUT" 2>&1 \
  || { cat "$OUT" >&2; fail "the hook failed on files outside .workbenches"; }
expect_contains "unrelated files" "$OUT" "(no files to check)"
expect_contains "unrelated files" "$OUT" "Skipped"
pass "files outside .workbenches/<name>/ skip the hook"

# 3. An error in a manifest fails the hook, with the diagnostic in the output.
MANIFEST=.workbenches/reviewer/workbench.yml
printf 'descripton: a typo\n' >>"$MANIFEST"
if pre-commit try-repo "$HOOK_REPO" wb-lsp-check --all-files >"$OUT" 2>&1; then
  cat "$OUT" >&2
  fail "wb-lsp-check passed on a manifest with an unknown field"
fi
expect_contains "broken manifest" "$OUT" "Failed"
expect_contains "broken manifest" "$OUT" "error[unknown-field]: Unknown manifest field: descripton"
expect_contains "broken manifest" "$OUT" "$MANIFEST"
expect_contains "broken manifest" "$OUT" "fix available: Remove \`descripton\`"
pass "an unknown field fails the hook with the diagnostic"

# 4. A change to any file of a package (here a skill) runs the hook too.
pre-commit try-repo "$HOOK_REPO" wb-lsp-check --files .workbenches/migrations/skills/sql-migrations/SKILL.md \
  >"$OUT" 2>&1 && { cat "$OUT" >&2; fail "the hook passed while a manifest is broken"; }
expect_contains "package file" "$OUT" "unknown-field"
pass "a changed SKILL.md runs the hook on the whole repository"

# 5. Installed as a git hook, it blocks the commit; fixed, the commit goes through.
cat >.pre-commit-config.yaml <<YAML
repos:
  - repo: $HOOK_REPO
    rev: $HOOK_REV
    hooks:
      - id: wb-lsp-check
YAML
git add .pre-commit-config.yaml
pre-commit install >"$OUT" 2>&1 || { cat "$OUT" >&2; fail "pre-commit install failed"; }
git add "$MANIFEST"
if git commit -m "a typo" >"$OUT" 2>&1; then
  cat "$OUT" >&2
  fail "git commit went through with a broken manifest"
fi
expect_contains "git commit" "$OUT" "unknown-field"
git checkout --quiet HEAD -- "$MANIFEST"
printf '# reviewed\n' >>"$MANIFEST"
git add "$MANIFEST"
git commit --quiet -m "add the pre-commit configuration" >"$OUT" 2>&1 || { cat "$OUT" >&2; fail "git commit of a clean repository failed"; }
expect_contains "git commit" "$OUT" "Passed"
pass "installed with pre-commit install, the hook blocks a commit with a broken manifest and lets a clean one through"

# 6. wb-lsp-fmt: passes on formatted manifests, fails (naming the file) on one that is not, only for manifests.
if ! pre-commit try-repo "$HOOK_REPO" wb-lsp-fmt --all-files >"$OUT" 2>&1; then
  cat "$OUT" >&2
  fail "wb-lsp-fmt failed on the formatted example repository"
fi
expect_contains "fmt, clean" "$OUT" "Passed"
sed -i 's/^name: \(.*\)$/name:    "\1"/' "$MANIFEST"
if pre-commit try-repo "$HOOK_REPO" wb-lsp-fmt --files "$MANIFEST" >"$OUT" 2>&1; then
  cat "$OUT" >&2
  fail "wb-lsp-fmt passed on a manifest that is not formatted"
fi
expect_contains "fmt, loose" "$OUT" "would reformat $MANIFEST"
pre-commit try-repo "$HOOK_REPO" wb-lsp-fmt --files .workbenches/migrations/skills/sql-migrations/SKILL.md >"$OUT" 2>&1 \
  || { cat "$OUT" >&2; fail "wb-lsp-fmt ran on a file that is not a manifest"; }
expect_contains "fmt, skill" "$OUT" "(no files to check)"
"$WB_LSP_BIN" fmt "$MANIFEST" >/dev/null 2>&1
pre-commit try-repo "$HOOK_REPO" wb-lsp-fmt --files "$MANIFEST" >"$OUT" 2>&1 \
  || { cat "$OUT" >&2; fail "wb-lsp-fmt failed after wb-lsp fmt"; }
pass "wb-lsp-fmt fails on a manifest that is not formatted and passes once wb-lsp fmt formatted it"

echo "$CHECKS passed, 0 failed"
