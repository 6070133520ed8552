;;; workbench-runs.el --- Workbench runs: list, attach, kill, outcome, sessions  -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The wb-lsp authors
;; SPDX-License-Identifier: Apache-2.0

;;; Commentary:

;; Part of the Workbench package (`workbench-mode.el' loads every part).
;; Every run is owned by a supervisor process and outlives the editor
;; (docs/runs.md).  `workbench-runs' lists the running and recent runs
;; of the Workbench home (`workbench.runs'); from there a run can be
;; followed (`workbench.attach': its events replayed, then live, as
;; `workbench/runEvent' notifications into a run buffer), killed
;; (`workbench.kill') and its outcome shown (`workbench.outcome').

;;; Code:

(require 'tabulated-list)
(require 'seq)
(require 'workbench-core)
(require 'workbench-files)

(defcustom workbench-runs-recent 20
  "How many finished runs `workbench-runs' lists after the running ones."
  :type 'integer
  :group 'workbench)

(defvar workbench--attached (make-hash-table :test #'equal)
  "The buffer following each attached run, by run id.")

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
  (workbench--list-keymap "RET" #'workbench-runs-attach "a" #'workbench-runs-attach "k" #'workbench-runs-kill
                          "s" #'workbench-runs-send "o" #'workbench-runs-outcome "f" #'workbench-runs-files)
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

(defun workbench--runs-with-outcome (show)
  "Call SHOW with the outcome id of the run at point, or say it has none."
  (let* ((id (workbench--runs-id-at-point))
         (run (and workbench--runs-records (gethash id workbench--runs-records)))
         (outcome (workbench--string (workbench--get run "outcome_id"))))
    (if outcome
        (funcall show outcome)
      (message "Workbench: run %s has no outcome%s" id
               (if (equal (workbench--get run "state") "running") " yet" "")))))

(defun workbench-runs-outcome ()
  "Show the outcome of the run at point: `workbench-outcome'."
  (interactive)
  (workbench--runs-with-outcome #'workbench-outcome))

(defun workbench-runs-files ()
  "List the changed files of the run at point's outcome: `workbench-outcome-files'."
  (interactive)
  (workbench--runs-with-outcome #'workbench-outcome-files))

(defun workbench--read-run-id (prompt)
  "Read a run id with PROMPT, completing from the runs of the Workbench home."
  (let ((ids (ignore-errors
               (mapcar (lambda (run) (workbench--get run "run_id"))
                       (workbench--execute-anywhere "workbench.runs" (vector (list :all t)))))))
    (completing-read prompt ids nil nil)))

(defcustom workbench-confirm-kill t
  "Ask before `workbench-kill' cancels a run."
  :type 'boolean
  :group 'workbench)

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

(provide 'workbench-runs)

;;; workbench-runs.el ends here
