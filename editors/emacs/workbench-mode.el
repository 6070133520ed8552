;;; workbench-mode.el --- Workbench manifests with wb-lsp  -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The wb-lsp authors
;; SPDX-License-Identifier: Apache-2.0

;; Author: The wb-lsp authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "27.1"))
;; Keywords: languages, tools
;; URL: https://github.com/wb-lsp/wb-lsp

;;; Commentary:

;; `workbench-mode' edits Workbench manifests
;; (.workbenches/<name>/workbench.yml).  It derives from `yaml-mode' when
;; that package is installed, and otherwise from a minimal YAML mode
;; defined here.
;;
;; The mode registers the wb-lsp language server with Eglot
;; (`eglot-server-programs') and, when lsp-mode is installed, with
;; lsp-mode (`lsp-register-client').  The server provides diagnostics,
;; completion, hover, go to definition, references and rename of env
;; names, symbols, folding, links and quick fixes.
;;
;; Setup:
;;
;;   (add-to-list 'load-path "/path/to/wb-lsp/editors/emacs")
;;   (require 'workbench-mode)
;;   ;; Start a client in manifest buffers: 'eglot or 'lsp-mode (nil:
;;   ;; none, add `eglot-ensure' to `workbench-mode-hook' yourself).
;;   (setq workbench-lsp-client 'eglot)
;;
;; Commands: `workbench-migrate' (convert the manifest to spec 1),
;; `workbench-check-workspace' (re-check every package of the workspace),
;; `workbench-runs' (the running and recent runs: attach, kill, outcome),
;; `workbench-attach', `workbench-kill', `workbench-send', `workbench-outcome' and
;; `workbench-outcome-files' (an outcome's changed files: Ediff or `diff-mode', one applied alone).
;;
;; The package's files: `workbench-core.el' (settings, the server's
;; commands), this file (the modes and the clients' registration),
;; `workbench-runs.el' (runs, attach, sessions) and `workbench-files.el'
;; (an outcome file by file).  Requiring `workbench-mode' loads them all.

;;; Code:

(require 'workbench-core)

;; The parent mode is chosen when this file is loaded: `yaml-mode' if it
;; is installed.
(require 'yaml-mode nil t)

;;;; The minimal YAML mode (when yaml-mode is not installed)

(defvar workbench-yaml-base-mode-syntax-table
  (let ((table (make-syntax-table)))
    (modify-syntax-entry ?# "<" table)
    (modify-syntax-entry ?\n ">" table)
    (modify-syntax-entry ?\" "\"" table)
    ;; An apostrophe in a plain scalar ("don't") must not open a string.
    (modify-syntax-entry ?\' "." table)
    (modify-syntax-entry ?_ "_" table)
    (modify-syntax-entry ?- "_" table)
    (modify-syntax-entry ?. "_" table)
    (modify-syntax-entry ?/ "_" table)
    table)
  "Syntax table of `workbench-yaml-base-mode'.")

(defvar workbench-yaml-base-font-lock-keywords
  `(("^[ \t]*\\(?:-[ \t]+\\)?\\([^#\n\"':]+?\\)[ \t]*:\\(?:[ \t]\\|$\\)"
     1 font-lock-variable-name-face)
    ("^[ \t]*-[ \t]" . font-lock-builtin-face)
    ("\\${[A-Za-z_][A-Za-z0-9_]*}" . font-lock-constant-face)
    (,(concat ":[ \t]+\\(true\\|false\\|null\\|~\\|[0-9]+\\(?:\\.[0-9]+\\)*\\)"
              "[ \t]*\\(?:#.*\\)?$")
     1 font-lock-constant-face)
    ("[&*][^ \t\n,]+" . font-lock-type-face))
  "Highlighting of `workbench-yaml-base-mode'.
Keys, list dashes, variables and scalars.")

(define-derived-mode workbench-yaml-base-mode prog-mode "YAML"
  "A minimal YAML mode.
The parent of `workbench-mode' when `yaml-mode' is not installed."
  :syntax-table workbench-yaml-base-mode-syntax-table
  (setq-local comment-start "# ")
  (setq-local comment-start-skip "#+[ \t]*")
  (setq-local comment-end "")
  (setq-local indent-tabs-mode nil)
  (setq-local tab-width 2)
  (setq-local indent-line-function #'indent-relative)
  (setq-local font-lock-defaults
              '(workbench-yaml-base-font-lock-keywords nil nil)))

;; `provided-mode-derived-p' follows this alias, so `derived-mode-p' of
;; `yaml-mode' holds in `workbench-mode' buffers when it is the parent.
(defalias 'workbench--parent-mode
  (if (fboundp 'yaml-mode) 'yaml-mode 'workbench-yaml-base-mode)
  "The parent of `workbench-mode'.
That is `yaml-mode' when installed, else `workbench-yaml-base-mode'.")

;;;; The mode

(defvar workbench-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-w m") #'workbench-migrate)
    (define-key map (kbd "C-c C-w c") #'workbench-check-workspace)
    map)
  "Keymap of `workbench-mode'.")

(declare-function eglot-ensure "eglot" ())
(declare-function lsp-deferred "lsp-mode" ())

(defun workbench--start-client ()
  "Start the client `workbench-lsp-client' names in the current buffer."
  (pcase workbench-lsp-client
    ('eglot (when (require 'eglot nil t) (eglot-ensure)))
    ('lsp-mode (when (require 'lsp-mode nil t) (lsp-deferred)))))

;;;###autoload
(define-derived-mode workbench-mode workbench--parent-mode "Workbench"
  "Major mode for Workbench manifests (.workbenches/<name>/workbench.yml).

The wb-lsp language server is registered with Eglot and lsp-mode; see
`workbench-lsp-client' to start one automatically.

\\{workbench-mode-map}"
  (setq-local indent-tabs-mode nil)
  (workbench--start-client))

;;;###autoload
(add-to-list 'auto-mode-alist
             '("/\\.workbenches/[^/]+/workbench\\.yml\\'" . workbench-mode))

;;;; The package's Markdown: instructions and skills

;; `provided-mode-derived-p' follows this alias too: Markdown commands and
;; hooks that test for `markdown-mode' hold in these buffers.
(defalias 'workbench--markdown-parent-mode
  (if (fboundp 'markdown-mode) 'markdown-mode 'text-mode)
  "The parent of `workbench-markdown-mode'.
That is `markdown-mode' when installed, else `text-mode'.")

;;;###autoload
(define-derived-mode workbench-markdown-mode workbench--markdown-parent-mode
  "Workbench-MD"
  "Major mode for a Workbench package's Markdown (instructions, skills).

Markdown (or text), with wb-lsp attached as in `workbench-mode': the
prose checks warn of a command the text tells the agent to run that the
manifest's `tools' lacks, a skill it names that `skills' does not list,
and a ${VAR} that `env' does not declare; their fixes edit the manifest."
  (workbench--start-client))

;;;###autoload
(add-to-list 'auto-mode-alist
             '("/\\.workbenches/[^/]+/.*\\.md\\'" . workbench-markdown-mode))

;;;; The package's trial tasks

(defalias 'workbench--task-parent-mode
  (if (fboundp 'js-json-mode) 'js-json-mode 'js-mode)
  "The parent of `workbench-task-mode'.
That is `js-json-mode' where Emacs has it (29 and later), else `js-mode'.")

;;;###autoload
(define-derived-mode workbench-task-mode workbench--task-parent-mode
  "Workbench-Task"
  "Major mode for a Workbench package's trial task (trials/ID/task.json).

JSON, with wb-lsp attached as in `workbench-mode': the task's fields
are checked where they are written (an unknown field, a fixture that
does not exist, a gate with no `run'), completed and documented."
  (workbench--start-client))

;;;###autoload
(add-to-list 'auto-mode-alist
             '("/\\.workbenches/[^/]+/trials/[^/]+/task\\.json\\'" . workbench-task-mode))

;;;; The project: the directory containing .workbenches

(defun workbench-repository-root (&optional directory)
  "The directory containing `.workbenches' above DIRECTORY, or nil.
DIRECTORY defaults to `default-directory'.  Only directories inside
a package (under .workbenches/) have one."
  (let ((dir (file-name-as-directory
              (expand-file-name (or directory default-directory)))))
    (when (string-match "\\`\\(.*?\\)/\\.workbenches/" dir)
      (file-name-as-directory (match-string 1 dir)))))

(defun workbench--project-find (directory)
  "Find the transient project of DIRECTORY inside a Workbench package.
A member of `project-find-functions', tried after version control:
it only matters for repositories that are not under version control."
  (when-let ((root (workbench-repository-root directory)))
    (cons 'transient root)))

(with-eval-after-load 'project
  (add-hook 'project-find-functions #'workbench--project-find 90))

;;;; Eglot

(defvar eglot-server-programs)

(defun workbench--initialization-options (&optional _server)
  "The initialization options sent to wb-lsp: `workbench-lsp-settings'."
  (or workbench-lsp-settings (make-hash-table)))

(defun workbench--eglot-contact (&optional _interactive)
  "The Eglot contact of wb-lsp.
The command `workbench-lsp-server-command' and initialization options."
  (append workbench-lsp-server-command
          (list :initializationOptions #'workbench--initialization-options)))

(with-eval-after-load 'eglot
  ;; One server for a repository's manifests and its packages' Markdown.
  (add-to-list 'eglot-server-programs
               '((workbench-mode workbench-markdown-mode workbench-task-mode)
                 . workbench--eglot-contact)))

;;;; lsp-mode

(defvar lsp-language-id-configuration)
(declare-function lsp-register-client "lsp-mode" (client))
(declare-function make-lsp-client "lsp-mode" (&rest args))
(declare-function lsp-stdio-connection "lsp-mode"
                  (command &optional test-command))
(declare-function lsp-activate-on "lsp-mode" (&rest languages))

(with-eval-after-load 'lsp-mode
  (add-to-list 'lsp-language-id-configuration '(workbench-mode . "workbench"))
  (add-to-list 'lsp-language-id-configuration
               '(workbench-markdown-mode . "markdown"))
  (add-to-list 'lsp-language-id-configuration '(workbench-task-mode . "json"))
  (lsp-register-client
   (make-lsp-client
    :new-connection (lsp-stdio-connection
                     (lambda () workbench-lsp-server-command))
    ;; By mode, not language: other Markdown is not wb-lsp's.
    :activation-fn (lambda (_file mode)
                     (memq mode '(workbench-mode workbench-markdown-mode
                                          workbench-task-mode)))
    :major-modes '(workbench-mode workbench-markdown-mode workbench-task-mode)
    :initialization-options #'workbench--initialization-options
    :notification-handlers
    (let ((handlers (make-hash-table :test #'equal)))
      (puthash "workbench/runEvent" #'workbench--lsp-mode-run-event handlers)
      (puthash "workbench/inputRequested" #'workbench--lsp-mode-input-requested handlers)
      (puthash "workbench/inputResolved" #'workbench--lsp-mode-input-resolved handlers)
      handlers)
    :server-id 'wb-lsp)))

;;;; Commands

(defun workbench-migrate ()
  "Migrate the current manifest to spec 1.
This is the server's `workbench.migrate' command: the server sends
the change back as a workspace edit, applied to the buffer."
  (interactive)
  (unless buffer-file-name
    (user-error "This buffer visits no file"))
  (let ((result (workbench--execute
                 "workbench.migrate"
                 (vector (workbench--file-uri buffer-file-name)))))
    (cond
     ((let ((applied (workbench--get result "applied")))
        (and applied (not (workbench--true-p applied))))
      (message "Workbench: the migration was not applied: %s"
               (or (workbench--get result "failureReason") "the edit was refused")))
     ((workbench--true-p (workbench--get result "migrated"))
      (message "Workbench: migrated to spec 1"))
     (t (message "Workbench: nothing to migrate, already on spec 1")))
    result))

(defun workbench-check-workspace ()
  "Re-scan the workspace and re-check every package.
This is the server's `workbench.checkWorkspace' command."
  (interactive)
  (let* ((result (workbench--execute "workbench.checkWorkspace" []))
         (count (or (workbench--get result "packages") 0)))
    (message "Workbench: checking %s package(s)" count)
    result))

;; Runs, attach, sessions and an outcome's files.
(require 'workbench-runs)
(require 'workbench-asks)
;; Trials: running one, opening its report.
(require 'workbench-trials)

(provide 'workbench-mode)

;;; workbench-mode.el ends here
