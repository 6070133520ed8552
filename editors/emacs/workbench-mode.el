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
;; Commands: `workbench-migrate' (convert the manifest to spec 1) and
;; `workbench-check-workspace' (re-check every package of the workspace).

;;; Code:

(require 'url-util)
(require 'subr-x)

;; The parent mode is chosen when this file is loaded: `yaml-mode' if it
;; is installed.
(require 'yaml-mode nil t)

(defgroup workbench nil
  "Workbench manifests and the wb-lsp language server."
  :group 'languages
  :prefix "workbench-")

(defcustom workbench-lsp-server-command '("wb-lsp" "serve")
  "The command starting the wb-lsp language server over stdio.
A list: the program, then its arguments."
  :type '(repeat string))

(defcustom workbench-lsp-settings nil
  "Settings of the server's `workbench' section, as a plist.
Keys: `:modelCatalog' (a file path), `:severity' (a plist of diagnostic codes to
\"error\", \"warning\", \"information\", \"hint\" or \"off\") and
`:runTimeWarnings' (t or :json-false).  Sent as the LSP initialization
options; a `:workbench' section in `eglot-workspace-configuration' takes
precedence.  Example:

  (setq workbench-lsp-settings
        \\='(:runTimeWarnings :json-false
          :severity (:unknown-model \"off\")))"
  :type 'plist)

(defcustom workbench-lsp-client nil
  "The LSP client `workbench-mode' starts in manifest buffers.
nil starts none (add `eglot-ensure' or `lsp-deferred' to `workbench-mode-hook'
yourself), `eglot' calls `eglot-ensure' and `lsp-mode' calls `lsp-deferred'."
  :type '(choice (const :tag "None" nil)
                 (const :tag "Eglot" eglot)
                 (const :tag "lsp-mode" lsp-mode)))

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

;;;###autoload
(define-derived-mode workbench-mode workbench--parent-mode "Workbench"
  "Major mode for Workbench manifests (.workbenches/<name>/workbench.yml).

The wb-lsp language server is registered with Eglot and lsp-mode; see
`workbench-lsp-client' to start one automatically.

\\{workbench-mode-map}"
  (setq-local indent-tabs-mode nil)
  (pcase workbench-lsp-client
    ('eglot (when (require 'eglot nil t) (eglot-ensure)))
    ('lsp-mode (when (require 'lsp-mode nil t) (lsp-deferred)))))

;;;###autoload
(add-to-list 'auto-mode-alist
             '("/\\.workbenches/[^/]+/workbench\\.yml\\'" . workbench-mode))

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
(declare-function eglot-current-server "eglot" ())
(declare-function jsonrpc-request "jsonrpc"
                  (connection method params &rest args))

(defun workbench--initialization-options (&optional _server)
  "The initialization options sent to wb-lsp: `workbench-lsp-settings'."
  (or workbench-lsp-settings (make-hash-table)))

(defun workbench--eglot-contact (&optional _interactive)
  "The Eglot contact of wb-lsp.
The command `workbench-lsp-server-command' and initialization options."
  (append workbench-lsp-server-command
          (list :initializationOptions #'workbench--initialization-options)))

(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               '(workbench-mode . workbench--eglot-contact)))

;;;; lsp-mode

(defvar lsp-language-id-configuration)
(declare-function lsp-register-client "lsp-mode" (client))
(declare-function make-lsp-client "lsp-mode" (&rest args))
(declare-function lsp-stdio-connection "lsp-mode"
                  (command &optional test-command))
(declare-function lsp-activate-on "lsp-mode" (&rest languages))
(declare-function lsp-request "lsp-mode" (method params &rest args))
(declare-function lsp-workspaces "lsp-mode" ())

(with-eval-after-load 'lsp-mode
  (add-to-list 'lsp-language-id-configuration '(workbench-mode . "workbench"))
  (lsp-register-client
   (make-lsp-client
    :new-connection (lsp-stdio-connection
                     (lambda () workbench-lsp-server-command))
    :activation-fn (lsp-activate-on "workbench")
    :major-modes '(workbench-mode)
    :initialization-options #'workbench--initialization-options
    :server-id 'wb-lsp)))

;;;; Commands

(defun workbench--file-uri (file)
  "The file:// URI of FILE."
  (concat "file://"
          (url-hexify-string (file-truename file) url-path-allowed-chars)))

(defun workbench--get (object key)
  "The member KEY (a string) of a JSON OBJECT.
OBJECT may be decoded as a plist, a hash table or an alist."
  (cond ((hash-table-p object) (gethash key object))
        ((and (consp object) (keywordp (car object)))
         (plist-get object (intern (concat ":" key))))
        ((consp object) (cdr (assoc key object)))))

(defun workbench--true-p (value)
  "Non-nil when the JSON VALUE is true."
  (and value (not (eq value :json-false)) (not (eq value :false))))

(defun workbench--execute (command arguments)
  "Ask the buffer's wb-lsp server to run COMMAND with ARGUMENTS (a vector).
Return the result."
  (cond
   ((and (fboundp 'eglot-current-server) (eglot-current-server))
    (jsonrpc-request (eglot-current-server) :workspace/executeCommand
                     (list :command command :arguments arguments)))
   ((and (bound-and-true-p lsp-mode) (fboundp 'lsp-workspaces) (lsp-workspaces))
    (lsp-request "workspace/executeCommand"
                 (list :command command :arguments arguments)))
   (t (user-error "No language server manages this buffer; %s"
                  "start one with M-x eglot or M-x lsp"))))

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

(provide 'workbench-mode)

;;; workbench-mode.el ends here
