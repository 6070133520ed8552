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

;;; Code:

(require 'url-util)
(require 'subr-x)
(require 'cl-lib)
(require 'seq)

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
  "The LSP client started in manifests and a package's Markdown.
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
  ;; One server for a repository's manifests and its packages' Markdown.
  (add-to-list 'eglot-server-programs
               '((workbench-mode workbench-markdown-mode)
                 . workbench--eglot-contact)))

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
  (add-to-list 'lsp-language-id-configuration
               '(workbench-markdown-mode . "markdown"))
  (lsp-register-client
   (make-lsp-client
    :new-connection (lsp-stdio-connection
                     (lambda () workbench-lsp-server-command))
    ;; By mode, not language: other Markdown is not wb-lsp's.
    :activation-fn (lambda (_file mode)
                     (memq mode '(workbench-mode workbench-markdown-mode)))
    :major-modes '(workbench-mode workbench-markdown-mode)
    :initialization-options #'workbench--initialization-options
    :notification-handlers
    (let ((handlers (make-hash-table :test #'equal)))
      (puthash "workbench/runEvent" #'workbench--lsp-mode-run-event handlers)
      handlers)
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

;;;; Runs: list, attach, kill, outcome

;; Every run is owned by a supervisor process and outlives the editor
;; (docs/runs.md).  `workbench-runs' lists the running and recent runs
;; of the Workbench home (`workbench.runs'); from there a run can be
;; followed (`workbench.attach': its events replayed, then live, as
;; `workbench/runEvent' notifications into a run buffer), killed
;; (`workbench.kill') and its outcome shown (`workbench.outcome').

(require 'tabulated-list)

(defcustom workbench-runs-recent 20
  "How many finished runs `workbench-runs' lists after the running ones."
  :type 'integer)

(defvar workbench--server-buffer nil
  "The last buffer whose language server answered a Workbench command.
Runs belong to the user, not to a repository: the runs buffer and the
run buffers send their requests through it.")

(defvar workbench--attached (make-hash-table :test #'equal)
  "The buffer following each attached run, by run id.")

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

(defun workbench--run-id-p (value)
  "Non-nil when VALUE is a run id (`wb_' and 24 lowercase hex digits)."
  (and (stringp value)
       (let ((case-fold-search nil))
         (string-match-p "\\`wb_[0-9a-f]\\{24\\}\\'" value))))

(defun workbench--epoch (timestamp)
  "Seconds since the epoch of the RFC 3339 UTC TIMESTAMP, or nil."
  (when (and (stringp timestamp)
             (string-match "\\`\\([0-9]+\\)-\\([0-9]+\\)-\\([0-9]+\\)T\\([0-9]+\\):\\([0-9]+\\):\\([0-9]+\\)\\(\\.[0-9]+\\)?Z\\'"
                           timestamp))
    (let ((field (lambda (n) (string-to-number (match-string n timestamp)))))
      (+ (float-time (encode-time (list (funcall field 6) (funcall field 5) (funcall field 4)
                                        (funcall field 3) (funcall field 2) (funcall field 1)
                                        nil nil t)))
         (if (match-string 7 timestamp) (string-to-number (match-string 7 timestamp)) 0)))))

(defun workbench--format-elapsed (seconds)
  "SECONDS as `12s', `3m 05s' or `1h 02m'."
  (let ((s (max 0 (floor seconds))))
    (cond ((< s 60) (format "%ds" s))
          ((< s 3600) (format "%dm %02ds" (/ s 60) (% s 60)))
          (t (format "%dh %02dm" (/ s 3600) (% (/ s 60) 60))))))

(defun workbench--format-cost (cost)
  "COST as `$0.2500', or `cost unknown' when the runner reported none."
  (if (numberp cost) (format "$%.4f" cost) "cost unknown"))

(defun workbench--run-elapsed (run)
  "How long RUN went on (until now while it runs), in seconds, or nil."
  (let ((start (workbench--epoch (workbench--get run "started_at"))))
    (when start
      (- (or (and (not (equal (workbench--get run "state") "running"))
                  (workbench--epoch (workbench--get run "ended_at")))
             (float-time))
         start))))

(defun workbench--string (value)
  "VALUE when it is a non-empty string, else nil."
  (and (stringp value) (not (string-empty-p value)) value))

(defun workbench--runs-entries (answer)
  "The `tabulated-list-entries' of the `workbench.runs' ANSWER.
The running runs first, then `workbench-runs-recent' finished ones."
  (let (running finished)
    (seq-doseq (run answer)
      (let ((id (workbench--get run "run_id"))
            (state (workbench--get run "state")))
        (when (and (workbench--run-id-p id) (stringp state))
          (if (member state '("running" "idle"))
              (push run running)
            (when (< (length finished) workbench-runs-recent)
              (push run finished))))))
    (mapcar (lambda (run)
              (let ((elapsed (workbench--run-elapsed run))
                    (state (workbench--get run "state")))
                (list (workbench--get run "run_id")
                      (vector (workbench--get run "run_id")
                              (format "%s" (workbench--get run "workbench"))
                              state
                              (if elapsed (workbench--format-elapsed elapsed) "?")
                              (workbench--format-cost (workbench--get run "cost_usd"))
                              (string-join
                               (delq nil (list (and (equal state "running")
                                                    (workbench--string (workbench--get run "activity")))
                                               (and (eq (workbench--get run "session") t)
                                                    (format "session, %s turn%s" (workbench--get run "turns")
                                                            (if (equal (workbench--get run "turns") 1) "" "s")))
                                               (let ((outcome (workbench--string (workbench--get run "outcome_id"))))
                                                 (and outcome (concat "outcome " outcome)))
                                               (workbench--string (workbench--get run "message"))))
                               "  ")))))
            (append (nreverse running) (nreverse finished)))))

(defvar-local workbench--runs-records nil
  "The records of the runs buffer, by run id.")

(defun workbench--runs-refresh ()
  "Read the runs again (`workbench.runs') into the current runs buffer."
  (let ((answer (workbench--execute-anywhere "workbench.runs" (vector (list :all t))))
        (records (make-hash-table :test #'equal)))
    (seq-doseq (run answer)
      (puthash (workbench--get run "run_id") run records))
    (setq workbench--runs-records records)
    (setq tabulated-list-entries (workbench--runs-entries answer))
    (tabulated-list-print t)))

(defun workbench--refresh-runs-buffers ()
  "Read the runs again in every live runs buffer."
  (dolist (buffer (buffer-list))
    (when (buffer-live-p buffer)
      (with-current-buffer buffer
        (when (derived-mode-p 'workbench-runs-mode)
          (condition-case err
              (workbench--runs-refresh)
            (error (message "Workbench: cannot list the runs: %s" (error-message-string err)))))))))

(defvar workbench-runs-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map (kbd "RET") #'workbench-runs-attach)
    (define-key map (kbd "a") #'workbench-runs-attach)
    (define-key map (kbd "k") #'workbench-runs-kill)
    (define-key map (kbd "s") #'workbench-runs-send)
    (define-key map (kbd "o") #'workbench-runs-outcome)
    (define-key map (kbd "f") #'workbench-runs-files)
    map)
  "Keymap of `workbench-runs-mode'.")

(define-derived-mode workbench-runs-mode tabulated-list-mode "Workbench Runs"
  "The running and recent Workbench runs.
\\<workbench-runs-mode-map>\\[workbench-runs-attach] attaches to the run at point,
\\[workbench-runs-kill] kills it, \\[workbench-runs-outcome] shows its outcome,
\\[workbench-runs-send] sends an idle session its next turn,
\\[revert-buffer] reads the runs again.

\\{workbench-runs-mode-map}"
  (setq tabulated-list-format
        [("Run" 27 t) ("Package" 14 t) ("State" 9 t) ("Elapsed" 8 nil :right-align t)
         ("Cost" 12 nil) ("Activity / outcome" 0 nil)])
  (setq tabulated-list-padding 1)
  (add-hook 'tabulated-list-revert-hook #'workbench--runs-refresh nil t)
  (tabulated-list-init-header))

;;;###autoload
(defun workbench-runs ()
  "List the running and recent Workbench runs in the buffer *Workbench Runs*.
Runs started here, in another editor or from the CLI (`wb-lsp run --detach'):
each is owned by its supervisor and outlives the editor.  Keys: RET or `a'
attach, `s' send an idle session a turn, `k' kill, `o' outcome, `g' refresh."
  (interactive)
  (let ((server-buffer (workbench--server-buffer))
        (buffer (get-buffer-create "*Workbench Runs*")))
    (setq workbench--server-buffer server-buffer)
    (with-current-buffer buffer
      (unless (derived-mode-p 'workbench-runs-mode)
        (workbench-runs-mode))
      (workbench--runs-refresh))
    (pop-to-buffer buffer)
    buffer))

(defun workbench--runs-id-at-point ()
  "The run id of the line at point, or a `user-error'."
  (or (tabulated-list-get-id) (user-error "No run on this line")))

(defun workbench-runs-attach ()
  "Attach to the run at point: `workbench-attach'."
  (interactive)
  (let* ((id (workbench--runs-id-at-point))
         (run (and workbench--runs-records (gethash id workbench--runs-records))))
    (when (equal (workbench--get run "state") "lost")
      (user-error "Run %s is lost: its supervisor ended before the run did" id))
    (workbench-attach id)))

(defun workbench-runs-kill ()
  "Kill the run at point: `workbench-kill'."
  (interactive)
  (workbench-kill (workbench--runs-id-at-point)))

(defun workbench-runs-outcome ()
  "Show the outcome of the run at point: `workbench-outcome'."
  (interactive)
  (let* ((id (workbench--runs-id-at-point))
         (run (and workbench--runs-records (gethash id workbench--runs-records)))
         (outcome (workbench--string (workbench--get run "outcome_id"))))
    (if outcome
        (workbench-outcome outcome)
      (message "Workbench: run %s has no outcome%s" id
               (if (equal (workbench--get run "state") "running") " yet" "")))))

(defun workbench-runs-files ()
  "List the changed files of the run at point's outcome: `workbench-outcome-files'."
  (interactive)
  (let* ((id (workbench--runs-id-at-point))
         (run (and workbench--runs-records (gethash id workbench--runs-records)))
         (outcome (workbench--string (workbench--get run "outcome_id"))))
    (if outcome
        (workbench-outcome-files outcome)
      (message "Workbench: run %s has no outcome" id))))

(defun workbench--read-run-id (prompt)
  "Read a run id with PROMPT, completing from the runs of the Workbench home."
  (let ((ids (ignore-errors
               (mapcar (lambda (run) (workbench--get run "run_id"))
                       (workbench--execute-anywhere "workbench.runs" (vector (list :all t)))))))
    (completing-read prompt ids nil nil)))

(defcustom workbench-confirm-kill t
  "Ask before `workbench-kill' cancels a run."
  :type 'boolean)

(defun workbench-kill (run-id)
  "Ask the supervisor of the run RUN-ID to cancel it (`workbench.kill').
The runner stops and the partial outcome is collected.  Asks first when
`workbench-confirm-kill' is non-nil."
  (interactive (list (workbench--read-run-id "Kill run: ")))
  (unless (workbench--run-id-p run-id)
    (user-error "Not a run id: %s (wb_...; M-x workbench-runs lists them)" run-id))
  (if (and workbench-confirm-kill
           (not (yes-or-no-p (format "Kill run %s? The runner stops; the partial outcome is collected. "
                                     run-id))))
      (message "Workbench: run %s goes on" run-id)
    (workbench--execute-anywhere "workbench.kill" (vector (list :runId run-id)))
    (message "Workbench: asked run %s to stop" run-id)
    (workbench--refresh-runs-buffers)
    ;; The state changes once the supervisor has cancelled the run.
    (run-with-timer 1 nil #'workbench--refresh-runs-buffers)
    run-id))

(defun workbench-outcome (outcome-id)
  "Show the outcome OUTCOME-ID (`workbench.outcome') in a read-only buffer.
The text is that of `wb-lsp outcome ID'.  A run id names the run's outcome."
  (interactive (list (read-string "Outcome (wbo_... or a run id): ")))
  (let* ((answer (workbench--execute-anywhere "workbench.outcome" (vector outcome-id)))
         (buffer (get-buffer-create (format "*Workbench Outcome %s*" outcome-id))))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (seq-doseq (line (workbench--get answer "lines"))
          (insert (format "%s" (workbench--get line "text")) "\n"))
        (goto-char (point-min)))
      (special-mode))
    (pop-to-buffer buffer)
    buffer))

;;;;; An outcome file by file: the changed files, each in a diff, one applied alone

(defvar-local workbench--files-outcome nil
  "The outcome id of a `workbench-files-mode' buffer.")

(defvar-local workbench--files-answer nil
  "What `workbench.outcome' last answered for a `workbench-files-mode' buffer.")

(defconst workbench--change-marks
  '(("added" . "A") ("modified" . "M") ("deleted" . "D") ("mode_changed" . "M") ("link" . "L"))
  "The mark of each change kind, as `wb-lsp outcome' prints it.")

(defun workbench--change-counts (entry)
  "The counts of ENTRY: `+3 −1', `binary', `mode' or `link'.
Then `(taken)' once the file was applied alone."
  (let ((kind (workbench--get entry "kind")))
    (concat
     (cond ((equal kind "mode_changed") "mode")
           ((equal kind "link") "link")
           ((workbench--true-p (workbench--get entry "binary")) "binary")
           (t (string-join
               (delq nil (list (let ((n (workbench--get entry "additions"))) (and (numberp n) (> n 0) (format "+%d" n)))
                               (let ((n (workbench--get entry "deletions"))) (and (numberp n) (> n 0) (format "−%d" n)))))
               " ")))
     (if (workbench--true-p (workbench--get entry "taken")) "  (taken)" ""))))

(defun workbench--files-refresh ()
  "Read the changed files of the buffer's outcome again (`workbench.outcome')."
  (let* ((answer (workbench--execute-anywhere "workbench.outcome" (vector workbench--files-outcome)))
         (state (workbench--get (workbench--get answer "receipt") "state")))
    (setq header-line-format
          (format " Outcome %s (%s): RET ediff, d diff%s, g refresh" workbench--files-outcome state
                  (if (equal state "pending") ", a apply this file" "")))
    (setq workbench--files-answer answer)
    (setq tabulated-list-entries
          (append
           (mapcar (lambda (entry)
                     (let ((label (workbench--get entry "label")))
                       (list label
                             (vector (or (cdr (assoc (workbench--get entry "kind") workbench--change-marks)) "?")
                                     label
                                     (workbench--change-counts entry)))))
                   (append (workbench--get answer "entries") nil))
           ;; What else the outcome returned: RET opens an artifact read-only, a link in the browser.
           (mapcar (lambda (artifact)
                     (let ((content (workbench--get artifact "content")))
                       (list (cons 'artifact (workbench--get artifact "id"))
                             (vector "@" (workbench--get artifact "name")
                                     (format "artifact, %s, %s bytes" (workbench--get content "media_type")
                                             (workbench--get content "size_bytes"))))))
                   (append (workbench--get (workbench--get answer "outcome") "artifacts") nil))
           (mapcar (lambda (link)
                     (list (cons 'link (workbench--get link "uri"))
                           (vector "~" (workbench--get link "label") (format "link, %s" (workbench--get link "uri")))))
                   (append (workbench--get (workbench--get answer "outcome") "links") nil))))
    (tabulated-list-print t)))

(defun workbench--open-artifact (answer artifact-id)
  "Open the stored bytes of ARTIFACT-ID of ANSWER read-only.
The bytes are checked against their digest first."
  (let* ((artifact (seq-find (lambda (a) (equal (workbench--get a "id") artifact-id))
                             (workbench--get (workbench--get answer "outcome") "artifacts")))
         (stored (seq-find (lambda (f) (equal (workbench--get f "id") artifact-id))
                           (workbench--get (workbench--get answer "files") "artifacts")))
         (file (and stored (workbench--get stored "file")))
         (digest (workbench--get (workbench--get artifact "content") "digest")))
    (unless (and file (file-readable-p file))
      (user-error "The artifact %s is not stored" artifact-id))
    (let ((bytes (with-temp-buffer
                   (set-buffer-multibyte nil)
                   (insert-file-contents-literally file)
                   (buffer-string))))
      (unless (equal (concat "sha256:" (secure-hash 'sha256 bytes)) digest)
        (user-error "The stored content of %s does not match its digest" artifact-id))
      (with-current-buffer (get-buffer-create (format "*Workbench artifact %s*" (workbench--get artifact "name")))
        (let ((inhibit-read-only t))
          (erase-buffer)
          (insert (decode-coding-string bytes 'utf-8))
          (let ((buffer-file-name (expand-file-name (file-name-nondirectory (workbench--get artifact "name"))
                                                    temporary-file-directory)))
            (ignore-errors (set-auto-mode)))
          (goto-char (point-min)))
        (setq buffer-read-only t)
        (pop-to-buffer (current-buffer))))))

(defvar workbench-files-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map (kbd "RET") #'workbench-files-ediff)
    (define-key map (kbd "d") #'workbench-files-diff)
    (define-key map (kbd "a") #'workbench-files-apply)
    map)
  "Keymap of `workbench-files-mode'.")

(define-derived-mode workbench-files-mode tabulated-list-mode "Workbench Files"
  "The changed files of a Workbench outcome.
\\<workbench-files-mode-map>\\[workbench-files-ediff] compares the file at point in Ediff,
\\[workbench-files-diff] shows it in a `diff-mode' buffer,
\\[workbench-files-apply] applies it alone (a pending outcome's),
\\[revert-buffer] reads the list again.

\\{workbench-files-mode-map}"
  (setq tabulated-list-format [("" 2 nil) ("Path" 40 t) ("Changes" 0 nil)])
  (setq tabulated-list-padding 1)
  (add-hook 'tabulated-list-revert-hook #'workbench--files-refresh nil t)
  (tabulated-list-init-header))

;;;###autoload
(defun workbench-outcome-files (outcome-id)
  "List the changed files of the outcome OUTCOME-ID.
A run id names the run's outcome.  Keys: RET Ediff, `d' diff, `a' apply
this file, `g' refresh."
  (interactive (list (read-string "Outcome (wbo_... or a run id): ")))
  (let ((server-buffer (workbench--server-buffer))
        (buffer (get-buffer-create (format "*Workbench Files %s*" outcome-id))))
    (with-current-buffer buffer
      (unless (derived-mode-p 'workbench-files-mode)
        (workbench-files-mode))
      (setq workbench--server-buffer server-buffer)
      (setq workbench--files-outcome outcome-id)
      (workbench--files-refresh))
    (pop-to-buffer buffer)
    buffer))

(defun workbench--side-buffer (outcome-id label side)
  "A read-only buffer with SIDE of LABEL in OUTCOME-ID (`workbench.outcomeFile').
SIDE is \"before\" or \"after\"; the buffer gets the major mode of the file's name."
  (let* ((content (workbench--execute-anywhere
                   "workbench.outcomeFile" (vector (list :id outcome-id :path label :side side))))
         (kind (workbench--get content "kind"))
         (name (replace-regexp-in-string ":" "/" label))
         (buffer (get-buffer-create (format "*Workbench %s %s*" side label))))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (pcase kind
                  ("text" (workbench--get content "text"))
                  ("binary" (format "(binary file, %s bytes)\n" (workbench--get content "size_bytes")))
                  ("link" (format "(symbolic link to %s)\n" (workbench--get content "target")))
                  ("not_kept" (format "(the earlier content, %s bytes, was not kept and the workspace no longer holds it)\n"
                                      (workbench--get content "size_bytes")))
                  (_ "")))
        (let ((buffer-file-name (expand-file-name name temporary-file-directory)))
          (ignore-errors (set-auto-mode)))
        (goto-char (point-min)))
      (setq buffer-read-only t)
      (set-buffer-modified-p nil))
    buffer))

(defun workbench--files-label-at-point ()
  "The label of the file at point, or a `user-error'."
  (let ((id (tabulated-list-get-id)))
    (if (stringp id) id (user-error "No changed file on this line"))))

(defun workbench-files-ediff ()
  "Compare the before and after sides of the file at point in Ediff.
On an artifact, open it read-only; on a link, `browse-url'."
  (interactive)
  (let ((id (tabulated-list-get-id)))
    (pcase id
      (`(artifact . ,artifact) (workbench--open-artifact workbench--files-answer artifact))
      (`(link . ,uri) (browse-url uri))
      (_ (let ((label (workbench--files-label-at-point)))
           (ediff-buffers (workbench--side-buffer workbench--files-outcome label "before")
                          (workbench--side-buffer workbench--files-outcome label "after")))))))

(defun workbench-files-diff ()
  "Show the changes of the file at point in a `diff-mode' buffer (`diff-buffers')."
  (interactive)
  (let* ((label (workbench--files-label-at-point))
         (before (workbench--side-buffer workbench--files-outcome label "before"))
         (after (workbench--side-buffer workbench--files-outcome label "after")))
    (diff-buffers before after nil t)))

(defcustom workbench-confirm-apply t
  "Ask before `workbench-files-apply' applies a file."
  :type 'boolean)

(defun workbench-files-apply ()
  "Apply the file at point alone (`workbench.applyOutcome' with `only').
Every check of a whole apply is made; the list is read again afterwards."
  (interactive)
  (let ((label (workbench--files-label-at-point))
        (outcome workbench--files-outcome))
    (if (and workbench-confirm-apply (not (yes-or-no-p (format "Apply %s of outcome %s? " label outcome))))
        (message "Workbench: %s was not applied" label)
      (let ((result (workbench--execute-anywhere
                     "workbench.applyOutcome" (vector (list :id outcome :only (vector label))))))
        (message "Workbench: applied %s of outcome %s: %s (%s)" label outcome
                 (workbench--get result "text") (workbench--get result "applicationState"))
        (workbench--files-refresh)))))

;;;;; Attach: a run's events in a buffer

(defun workbench--run-buffer-append (buffer lines)
  "Append LINES (a sequence of strings) to the run BUFFER."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (let ((inhibit-read-only t)
            (moving (= (point) (point-max))))
        (save-excursion
          (goto-char (point-max))
          (seq-doseq (line lines)
            (when (stringp line) (insert line "\n"))))
        (when moving (goto-char (point-max)))))))

(defun workbench--on-run-event (event text)
  "A `workbench/runEvent' notification: EVENT's TEXT into its run's buffer."
  (let ((buffer (gethash (workbench--get event "run_id") workbench--attached)))
    (when buffer
      (workbench--run-buffer-append buffer text))))

(defun workbench--run-ended (run-id buffer result)
  "The attach of RUN-ID into BUFFER was answered with RESULT."
  (when (eq (gethash run-id workbench--attached) buffer)
    (remhash run-id workbench--attached))
  (let* ((ending (workbench--get result "ending"))
         (status (or (workbench--get ending "status") "failed"))
         (why (workbench--string (workbench--get ending "message")))
         (outcome (workbench--string (workbench--get result "outcomeId"))))
    (message "Workbench: run %s %s%s%s" run-id status (if why (concat ": " why) "")
             (if outcome (format " (outcome %s)" outcome) "")))
  ;; Not inside the server's answer: the list is read with a request of its own.
  (run-at-time 0 nil #'workbench--refresh-runs-buffers))

(defun workbench--run-failed (run-id buffer message)
  "The attach of RUN-ID into BUFFER failed with MESSAGE."
  (when (eq (gethash run-id workbench--attached) buffer)
    (remhash run-id workbench--attached))
  (workbench--run-buffer-append buffer (list (format "■ cannot follow run %s: %s" run-id message)))
  (message "Workbench: cannot follow run %s: %s" run-id message))

(declare-function jsonrpc-async-request "jsonrpc"
                  (connection method params &rest args))
(declare-function lsp-request-async "lsp-mode"
                  (method params callback &rest args))

(defun workbench--request-async (params run-id buffer on-result)
  "Send the executeCommand PARAMS for run RUN-ID, whose events go to BUFFER.
ON-RESULT is called with RUN-ID, BUFFER and the answer; a failure is said
in BUFFER and the echo area.  No timeout: a run may go on for hours."
  (let ((fail (lambda (error)
                (workbench--run-failed run-id buffer (or (workbench--get error "message")
                                                         (format "%S" error))))))
    (with-current-buffer (workbench--server-buffer)
      (cond
       ((and (fboundp 'eglot-current-server) (eglot-current-server))
        (jsonrpc-async-request
         (eglot-current-server) :workspace/executeCommand params
         :success-fn (lambda (result) (funcall on-result run-id buffer result))
         :error-fn fail
         :timeout nil))
       (t
        (lsp-request-async "workspace/executeCommand" params
                           (lambda (result) (funcall on-result run-id buffer result))
                           :error-handler fail))))))

(defun workbench-attach (run-id)
  "Follow the run RUN-ID in the buffer *Workbench Run RUN-ID*.
Its events are replayed from its first, then followed until it ends
(`workbench.attach'); the ending goes to the echo area.  Runs belong to
the user: this works from any buffer once a manifest has a server."
  (interactive (list (workbench--read-run-id "Attach to run: ")))
  (unless (workbench--run-id-p run-id)
    (user-error "Not a run id: %s (wb_...; M-x workbench-runs lists them)" run-id))
  (let ((buffer (get-buffer-create (format "*Workbench Run %s*" run-id)))
        (params (list :command "workbench.attach" :arguments (vector (list :runId run-id)))))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (format "── attached to %s\n" run-id)))
      (special-mode))
    (puthash run-id buffer workbench--attached)
    (workbench--request-async params run-id buffer #'workbench--run-ended)
    (display-buffer buffer)
    buffer))

;;;;; Sessions: the next turn

(defun workbench--turn-ended (run-id buffer result)
  "The turn of session RUN-ID followed into BUFFER was answered with RESULT."
  (when (eq (gethash run-id workbench--attached) buffer)
    (remhash run-id workbench--attached))
  (let ((status (or (workbench--string (workbench--get result "status")) "failed"))
        (snapshot (workbench--string (workbench--get result "snapshotId"))))
    (if (equal status "ended")
        (message "Workbench: session %s ended before it took the turn" run-id)
      (message "Workbench: session %s turn %s %s%s" run-id (workbench--get result "turnIndex") status
               (if snapshot (format " (snapshot %s)" snapshot) ""))))
  (run-at-time 0 nil #'workbench--refresh-runs-buffers))

(defun workbench-send (run-id task)
  "Send the session RUN-ID its next turn, TASK (`workbench.send').
The turn's events go to *Workbench Run RUN-ID*; its ending to the echo
area.  A session is started with `wb-lsp run --session' (docs/sessions.md)."
  (interactive (list (workbench--read-run-id "Send a turn to session: ")
                     (read-string "Task: ")))
  (unless (workbench--run-id-p run-id)
    (user-error "Not a run id: %s (wb_...; M-x workbench-runs lists them)" run-id))
  (when (string-empty-p (string-trim task))
    (user-error "The turn's task is empty"))
  (let ((buffer (get-buffer-create (format "*Workbench Run %s*" run-id)))
        (params (list :command "workbench.send" :arguments (vector (list :runId run-id :task task)))))
    (with-current-buffer buffer
      (unless (derived-mode-p 'special-mode) (special-mode)))
    (workbench--run-buffer-append buffer (list (format "── %s: %s" run-id task)))
    (puthash run-id buffer workbench--attached)
    (workbench--request-async params run-id buffer #'workbench--turn-ended)
    (display-buffer buffer)
    buffer))

(defun workbench-runs-send (task)
  "Send the session at point its next turn, TASK: `workbench-send'."
  (interactive (list (read-string "Task: ")))
  (let* ((id (workbench--runs-id-at-point))
         (run (and workbench--runs-records (gethash id workbench--runs-records))))
    (unless (equal (workbench--get run "state") "idle")
      (user-error "Run %s is not a session waiting for a turn (%s)" id (workbench--get run "state")))
    (workbench-send id task)))

(with-eval-after-load 'eglot
  (cl-defmethod eglot-handle-notification
    (_server (_method (eql workbench/runEvent)) &key event text &allow-other-keys)
    "A `workbench/runEvent' notification: its lines into the run's buffer."
    (workbench--on-run-event event text)))

(defun workbench--lsp-mode-run-event (_workspace params)
  "lsp-mode's handler of `workbench/runEvent' with PARAMS."
  (workbench--on-run-event (workbench--get params "event") (workbench--get params "text")))

(provide 'workbench-mode)

;;; workbench-mode.el ends here
