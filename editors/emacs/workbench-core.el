;;; workbench-core.el --- What every part of the Workbench package shares  -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The wb-lsp authors
;; SPDX-License-Identifier: Apache-2.0

;;; Commentary:

;; Part of the Workbench package (`workbench-mode.el' loads every part):
;; the customization group and the server's settings, and the one way a
;; Workbench command reaches the wb-lsp server, from a manifest's buffer
;; (Eglot or lsp-mode) or from any buffer through the last server used.

;;; Code:

(require 'url-util)
(require 'subr-x)
(require 'cl-lib)
(require 'tabulated-list)

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
  "The LSP client started in manifests and a package's Markdown.
nil starts none (add `eglot-ensure' or `lsp-deferred' to `workbench-mode-hook'
yourself), `eglot' calls `eglot-ensure' and `lsp-mode' calls `lsp-deferred'."
  :type '(choice (const :tag "None" nil)
                 (const :tag "Eglot" eglot)
                 (const :tag "lsp-mode" lsp-mode)))

;;;; The server's commands

(declare-function eglot-current-server "eglot" ())
(declare-function jsonrpc-request "jsonrpc"
                  (connection method params &rest args))
(declare-function lsp-request "lsp-mode" (method params &rest args))
(declare-function lsp-workspaces "lsp-mode" ())

(defun workbench--list-keymap (&rest bindings)
  "A keymap over `tabulated-list-mode-map' binding BINDINGS (KEY COMMAND ...)."
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (while bindings
      (define-key map (kbd (pop bindings)) (pop bindings)))
    map))

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

(defvar workbench--server-buffer nil
  "The last buffer whose language server answered a Workbench command.
Runs belong to the user, not to a repository: the runs buffer and the
run buffers send their requests through it.")

(defun workbench--has-server-p ()
  "Non-nil when the current buffer has a wb-lsp server (Eglot or lsp-mode)."
  (or (and (fboundp 'eglot-current-server) (eglot-current-server))
      (and (bound-and-true-p lsp-mode) (fboundp 'lsp-workspaces) (lsp-workspaces))))

(defun workbench--server-buffer ()
  "A buffer with a wb-lsp server: this one, the last one used, or any manifest's.
Signal a `user-error' when there is none."
  (cond
   ((workbench--has-server-p) (setq workbench--server-buffer (current-buffer)))
   ((and (buffer-live-p workbench--server-buffer)
         (with-current-buffer workbench--server-buffer (workbench--has-server-p)))
    workbench--server-buffer)
   (t
    (or (cl-find-if (lambda (buffer)
                      (with-current-buffer buffer
                        (and (derived-mode-p 'workbench-mode) (workbench--has-server-p))))
                    (buffer-list))
        (user-error "No wb-lsp server is running: open a manifest first")))))

(defun workbench--execute-anywhere (command arguments)
  "Run the server COMMAND with ARGUMENTS from any buffer; return the result."
  (with-current-buffer (workbench--server-buffer)
    (workbench--execute command arguments)))

(provide 'workbench-core)

;;; workbench-core.el ends here
