;;; test.el --- Drives Emacs (batch) with workbench-mode and Eglot against the real wb-lsp  -*- lexical-binding: t; -*-

;; Run by tests/editors/emacs/run.sh: `emacs --batch -L editors/emacs -l test.el' (without -Q, so that
;; Debian's site-start puts elpa-eglot on the load path).
;;
;; Environment: WB_LSP_BIN (the server), WB_TEST_REPO (a copy of fixtures/cases/unsupported-runner),
;; WB_TEST_LEGACY_REPO (a copy of fixtures/example-repo), WB_TEST_TIMEOUT_MS (per wait, default 20000).
;; Exits 0 when every check passes; otherwise prints what failed and exits 1.

;;; Code:

(require 'cl-lib)
(require 'subr-x)

(defvar wbt-timeout
  (/ (float (string-to-number (or (getenv "WB_TEST_TIMEOUT_MS") "20000"))) 1000)
  "Seconds each wait may take.")
(when (<= wbt-timeout 0) (setq wbt-timeout 20.0))

(define-error 'wbt-failure "Editor test failure")

(defun wbt-out (format-string &rest args)
  "Print FORMAT-STRING with ARGS on a line of standard output."
  (princ (concat (apply #'format format-string args) "\n")))

(defun wbt-fail (format-string &rest args)
  "Fail the test with the message FORMAT-STRING formatted with ARGS."
  (signal 'wbt-failure (list (apply #'format format-string args))))

(defun wbt-check (condition format-string &rest args)
  "Fail with FORMAT-STRING and ARGS unless CONDITION."
  (unless condition (apply #'wbt-fail format-string args)))

(defun wbt-env (name)
  "The value of the environment variable NAME, which must be set."
  (let ((value (getenv name)))
    (wbt-check (and value (not (string-empty-p value))) "the environment variable %s is not set" name)
    value))

(defvar wbt-idle-since (current-time) "When the last simulated command ended.")
(defvar wbt-idle-ran nil "Idle timers already run since the last simulated command.")

(defun wbt-command (&optional command)
  "Run COMMAND (a function, called interactively) the way Emacs's command loop would.
Batch Emacs has no command loop: `post-command-hook' (where `eglot-ensure'
connects and Flymake starts) only runs when called, and idle timers (where
Eglot sends didChange) only run from `wbt-run-idle-timers'."
  (let ((this-command command))
    (run-hooks 'pre-command-hook)
    (when command (call-interactively command))
    (run-hooks 'post-command-hook))
  (setq wbt-idle-since (current-time)
        wbt-idle-ran nil))

(defun wbt-run-idle-timers ()
  "Run the idle timers due after the time Emacs has been \"idle\" since the last command."
  (let ((idle (time-since wbt-idle-since)))
    (dolist (timer (copy-sequence timer-idle-list))
      (when (and (not (memq timer wbt-idle-ran))
                 (memq timer timer-idle-list)
                 (not (time-less-p idle (timer--time timer))))
        (push timer wbt-idle-ran)
        (timer-event-handler timer)))))

(defun wbt-wait (what predicate)
  "Poll PREDICATE, running process output, timers and idle timers, until non-nil.
Return its value; fail, naming WHAT, after `wbt-timeout' seconds."
  (let ((deadline (+ (float-time) wbt-timeout))
        value)
    (while (and (not (setq value (funcall predicate)))
                (< (float-time) deadline))
      (accept-process-output nil 0.02)
      (wbt-run-idle-timers))
    (or value (wbt-fail "timed out after %.0fs waiting for %s" wbt-timeout what))))

(defun wbt-goto (line column)
  "Move point to LINE (1-based) and COLUMN (0-based)."
  (goto-char (point-min))
  (forward-line (1- line))
  (move-to-column column))

(defun wbt-lsp-diagnostics ()
  "The LSP diagnostics (plists) behind the current buffer's Flymake diagnostics."
  (delq nil (mapcar (lambda (diag)
                      (alist-get 'eglot-lsp-diag (flymake-diagnostic-data diag)))
                    (flymake-diagnostics))))

(defun wbt-diagnostic-at-line (line)
  "The LSP diagnostic starting on LINE (0-based), or nil."
  (cl-find-if (lambda (d) (equal (plist-get (plist-get (plist-get d :range) :start) :line) line))
              (wbt-lsp-diagnostics)))

(defun wbt-completion-labels ()
  "The completion candidates Eglot's `completion-at-point' function offers at point."
  (let ((capf (eglot-completion-at-point)))
    (wbt-check capf "eglot-completion-at-point returned nil at %d:%d"
               (line-number-at-pos) (current-column))
    (mapcar #'substring-no-properties (all-completions "" (nth 2 capf)))))

(defun wbt-complete ()
  "Complete at point with `completion-at-point', as M-TAB does; the completion must be unique."
  (wbt-command #'completion-at-point))

(defun wbt-line (line)
  "The text of LINE (1-based)."
  (save-excursion
    (goto-char (point-min))
    (forward-line (1- line))
    (buffer-substring-no-properties (line-beginning-position) (line-end-position))))

(defun wbt-hover ()
  "The hover documentation at point, through Eglot's eldoc function."
  (let (doc)
    (eglot-hover-eldoc-function (lambda (info &rest _) (setq doc (or info ""))))
    (wbt-wait "the hover response" (lambda () doc))
    (substring-no-properties doc)))

(defvar wbt-messages nil "Messages shown while testing.")

(defun wbt-record-message (format-string &rest args)
  "Record what `message' shows with FORMAT-STRING and ARGS."
  (when format-string
    (push (apply #'format-message format-string args) wbt-messages)))

(advice-add 'message :before #'wbt-record-message)

(defun wbt-messaged (regexp)
  "The recorded message matching REGEXP, or nil."
  (cl-find-if (lambda (m) (string-match-p regexp m)) wbt-messages))

(defun wbt-run ()
  "Every check."
  (let* ((bin (wbt-env "WB_LSP_BIN"))
         (repo (file-name-as-directory (wbt-env "WB_TEST_REPO")))
         (legacy-repo (file-name-as-directory (wbt-env "WB_TEST_LEGACY_REPO")))
         (manifest (expand-file-name ".workbenches/typo/workbench.yml" repo))
         (instructions (expand-file-name ".workbenches/typo/instructions.md" repo)))
    (wbt-check (require 'eglot nil t)
               "eglot is not installed (Debian/Ubuntu: apt-get install -y elpa-eglot; Emacs 29+ has it built in)")
    (require 'workbench-mode)
    (setq workbench-lsp-server-command (list bin "serve"))
    (setq workbench-lsp-client 'eglot)
    (setq workbench-lsp-settings (quote (:severity (:unsupported-runner "error"))))
    (setq eglot-confirm-server-initiated-edits nil)
    (setq eglot-sync-connect t)

    ;; One entry, so one server, for the manifests and the packages' Markdown.
    (let ((entry (cl-find-if (lambda (entry) (memq 'workbench-mode (ensure-list (car entry))))
                             eglot-server-programs)))
      (wbt-check entry "workbench-mode is not in eglot-server-programs")
      (wbt-check (memq 'workbench-markdown-mode (ensure-list (car entry)))
                 "workbench-markdown-mode is not served with workbench-mode: %S" (car entry)))
    (find-file manifest)
    (wbt-check (eq major-mode 'workbench-mode) "%s opened in %s, not workbench-mode" manifest major-mode)
    (wbt-out "ok: the manifest opens in workbench-mode")

    ;; eglot-ensure (called by the mode) connects from post-command-hook.
    (wbt-command)
    (let ((server (wbt-wait "Eglot to connect to wb-lsp" #'eglot-current-server)))
      (wbt-check (equal (file-name-as-directory (expand-file-name (project-root (eglot--project server))))
                        repo)
                 "the Eglot project root is %s, expected %s" (project-root (eglot--project server)) repo)
      (wbt-check (equal (plist-get (eglot--server-info server) :name) "wb-lsp")
                 "the server calls itself %S" (eglot--server-info server)))
    (wbt-out "ok: Eglot connected to wb-lsp with the repository as project root")

    ;; Diagnostics: `runner: open-code' on line 4 (0-based 3) is an unsupported runner.
    (let ((diag (wbt-wait "a diagnostic on line 4 in Flymake" (lambda () (wbt-diagnostic-at-line 3)))))
      (wbt-check (equal (plist-get diag :message) "Unsupported runner: open-code")
                 "the diagnostic message is %S" (plist-get diag :message))
      (let ((range (plist-get diag :range)))
        (wbt-check (and (equal (plist-get (plist-get range :start) :character) 8)
                        (equal (plist-get (plist-get range :end) :character) 17))
                   "the diagnostic range is %S, expected columns 8-17" range))
      (wbt-check (equal (plist-get diag :code) "unsupported-runner") "the diagnostic code is %S"
                 (plist-get diag :code))
      (let ((flymake (wbt-wait "Flymake to show the diagnostic"
                               (lambda () (car (flymake-diagnostics (point-min) (point-max)))))))
        (wbt-check (= (line-number-at-pos (flymake-diagnostic-beg flymake)) 4)
                   "the Flymake diagnostic is on line %d" (line-number-at-pos (flymake-diagnostic-beg flymake)))))
    (wbt-out "ok: diagnostic 4:9 Unsupported runner: open-code, shown by Flymake")

    ;; Completion of the runner value.
    (wbt-goto 4 8)
    (let ((labels (wbt-completion-labels)))
      (wbt-check (member "opencode" labels) "completion after `runner: ' lacks opencode: %S" labels)
      (wbt-out "ok: completion after `runner: ' offers %s" (string-join labels ", ")))

    ;; Hover on the `runner' key.
    (wbt-goto 4 2)
    (let ((hover (wbt-hover)))
      (wbt-check (string-match-p "runner" hover) "hover on `runner' is %S" hover)
      (wbt-check (string-match-p (regexp-quote "runner: opencode") hover)
                 "hover on `runner' lacks the example: %S" hover)
      ;; Without markdown-mode Eglot asks for plain text: no Markdown markup reaches ElDoc.
      (wbt-check (not (string-match-p "\\*\\*\\|`" hover)) "hover on `runner' shows Markdown: %S" hover))
    (wbt-out "ok: hover on `runner' documents the field")

    ;; Go to definition on the `instructions:' value, through xref.
    (wbt-goto 7 18)
    (let ((manifest-buffer (current-buffer)))
      (wbt-command #'xref-find-definitions)
      (wbt-wait (format "go-to-definition to visit %s" instructions)
                (lambda () (equal (buffer-file-name (window-buffer (selected-window))) instructions)))
      (wbt-out "ok: go-to-definition on `instructions:' visited instructions.md")
      (switch-to-buffer manifest-buffer))

    ;; Completion of a missing top-level key on a new, empty line.
    (goto-char (point-max))
    (unless (bolp) (insert "\n"))
    (wbt-command)
    (let ((labels (wbt-completion-labels)))
      (wbt-check (member "description" labels) "top-level completion lacks description: %S" labels)
      (wbt-check (not (member "runner" labels)) "top-level completion offers runner, which is already present"))
    (wbt-out "ok: completion on an empty top-level line offers description")

    ;; Completing `wor' inserts the workspaces block as plain text (no yasnippet: Eglot takes no snippets).
    (let ((start (point)))
      (insert "wor")
      (wbt-command)
      (wbt-complete)
      (let ((inserted (buffer-substring-no-properties start (point-max))))
        (wbt-check (equal inserted "workspaces:\n  name:\n    access: read-only")
                   "completing `wor' inserted %S" inserted))
      (delete-region start (point-max))
      (wbt-command))
    (wbt-out "ok: completing `wor' inserts the workspaces block")

    ;; And a value after `runner: ' (`op': Eglot's flex completion style would also match `o' in claude-code).
    (wbt-goto 4 8)
    (delete-region (point) (line-end-position))
    (insert "op")
    (wbt-command)
    (wbt-complete)
    (wbt-check (equal (wbt-line 4) "runner: opencode") "completing `runner: op' gave %S" (wbt-line 4))
    (wbt-out "ok: completing `runner: op' inserts opencode")

    ;; Fixing the runner clears the diagnostic.
    (wbt-goto 4 8)
    (delete-region (point) (line-end-position))
    (insert "opencode")
    (wbt-command)
    (wbt-wait "the diagnostic on line 4 to clear after the fix" (lambda () (not (wbt-diagnostic-at-line 3))))
    (wbt-out "ok: fixing the runner clears the diagnostic")

    ;; Breaking it again brings it back, checked with the final settings: `workbench-lsp-settings' (sent as
    ;; initialization options) makes unsupported-runner an error.
    (wbt-goto 4 8)
    (delete-region (point) (line-end-position))
    (insert "open-code")
    (wbt-command)
    (let ((diag (wbt-wait "the diagnostic on line 4 to return" (lambda () (wbt-diagnostic-at-line 3)))))
      (wbt-check (equal (plist-get diag :severity) 1)
                 "the severity setting (unsupported-runner: error) is not applied: severity %S"
                 (plist-get diag :severity))
      (wbt-check (cl-find-if (lambda (d) (eq (flymake-diagnostic-type d) 'eglot-error)) (flymake-diagnostics))
                 "Flymake shows no error"))
    (wbt-out "ok: the severity setting from workbench-lsp-settings applies (unsupported-runner is an error)")

    ;; M-x workbench-check-workspace: two packages in this repository.
    (let ((result (call-interactively #'workbench-check-workspace)))
      (wbt-command)
      (wbt-check (equal (plist-get result :packages) 2) "workbench.checkWorkspace answered %S" result)
      (wbt-check (wbt-messaged "checking 2 package") "no message reported the check: %S" wbt-messages))
    (wbt-out "ok: workbench-check-workspace checked 2 packages")

    ;; M-x workbench-migrate on a spec 0 manifest in another repository (a second server).
    (find-file (expand-file-name ".workbenches/legacy-release/workbench.yml" legacy-repo))
    (wbt-command)
    (let ((server (wbt-wait "Eglot to connect for the second repository" #'eglot-current-server)))
      (wbt-check (equal (file-name-as-directory (expand-file-name (project-root (eglot--project server))))
                        legacy-repo)
                 "the second project root is %s" (project-root (eglot--project server))))
    (wbt-wait "the spec-0-manifest diagnostic"
              (lambda () (cl-find "spec-0-manifest" (wbt-lsp-diagnostics)
                                  :key (lambda (d) (plist-get d :code)) :test #'equal)))
    (wbt-command #'workbench-migrate)
    (wbt-wait "the buffer to declare spec 1 and runtimes"
              (lambda () (save-excursion
                           (goto-char (point-min))
                           (and (re-search-forward "^spec: 1$" nil t)
                                (re-search-forward "^runtimes:" nil t)))))
    (wbt-check (wbt-messaged "migrated to spec 1") "no message reported the migration: %S" wbt-messages)
    (wbt-wait "the spec-0-manifest diagnostic to clear after migrating"
              (lambda () (not (cl-find "spec-0-manifest" (wbt-lsp-diagnostics)
                                       :key (lambda (d) (plist-get d :code)) :test #'equal))))
    (wbt-out "ok: workbench-migrate migrated legacy-release to spec 1")

    ;; M-x eglot-format-buffer: the server's edits reach the buffer (not the file).
    (goto-char (point-min))
    (re-search-forward "^tools:\n  - git$")
    (replace-match "tools  :\n  -      'git'" t t)
    (wbt-command)
    (let* ((file (buffer-file-name))
           (on-disk (with-temp-buffer (insert-file-contents file) (buffer-string))))
      (wbt-command #'eglot-format-buffer)
      (wbt-wait "the buffer to be formatted"
                (lambda () (save-excursion
                             (goto-char (point-min))
                             (re-search-forward "^tools:\n  - git$" nil t))))
      (wbt-check (equal on-disk (with-temp-buffer (insert-file-contents file) (buffer-string)))
                 "formatting wrote the file")
      (wbt-check (buffer-modified-p) "formatting did not edit the buffer"))
    (wbt-out "ok: eglot-format-buffer formats the manifest (tools: / - git)")))

(defun wbt-print-events ()
  "Print the end of every Eglot events buffer (the JSON-RPC traffic) to standard error."
  (dolist (buffer (buffer-list))
    (when (string-match-p "EGLOT.*events" (buffer-name buffer))
      (with-current-buffer buffer
        (princ (format "--- %s (last 6000 characters):\n%s\n" (buffer-name)
                       (buffer-substring-no-properties (max (point-min) (- (point-max) 6000)) (point-max)))
               #'external-debugging-output)))))

(defun wbt-quit (status)
  "Exit with STATUS, answering nothing a server still sends (a reply to a closing process would fail the exit)."
  (dolist (process (process-list))
    (set-process-filter process #'ignore)
    (set-process-sentinel process #'ignore))
  (kill-emacs status))

(condition-case err
    (progn
      (wbt-run)
      (wbt-out "emacs: all checks passed")
      (wbt-quit 0))
  (wbt-failure
   (princ (format "FAIL (emacs): %s\n" (cadr err)) #'external-debugging-output)
   (wbt-print-events)
   (kill-emacs 1))
  (error
   (princ (format "FAIL (emacs): unexpected error %S\n" err) #'external-debugging-output)
   (wbt-print-events)
   (kill-emacs 1)))

;;; test.el ends here
