;;; workbench-trials.el --- Trials of a Workbench package  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The wb-lsp authors
;; SPDX-License-Identifier: Apache-2.0

;;; Commentary:

;; Part of the Workbench package (`workbench-mode.el' loads every part):
;; `workbench-run-trials' runs the current package's trial through the
;; server (`workbench.trial': every task of its trials/ in each arm, graded
;; by gates the agent never sees), and `workbench-open-trial-report' opens
;; the latest trial's report.html.

;;; Code:

(require 'workbench-core)

(defcustom workbench-open-report-function #'browse-url-of-file
  "The function that opens a trial's report.html, given its file name."
  :type 'function
  :group 'workbench)

(defvar workbench-last-trial nil
  "The job of the last trial run or opened here, as `workbench.trials' lists it.")

(declare-function jsonrpc-async-request "jsonrpc"
                  (connection method params &rest args))
(declare-function lsp-request-async "lsp-mode"
                  (method params callback &rest args))

(defun workbench--manifest-uri (what)
  "The URI of the current manifest, or a `user-error' naming WHAT needs one."
  (unless (and buffer-file-name (derived-mode-p 'workbench-mode))
    (user-error "Open a Workbench manifest (workbench.yml) to %s" what))
  (workbench--file-uri buffer-file-name))

(defun workbench--execute-async (params on-result)
  "Send the executeCommand PARAMS; call ON-RESULT with the answer.
No timeout: a trial may go on for hours.  A failure goes to the echo area."
  (let ((fail (lambda (error)
                (message "Workbench: %s failed: %s" (plist-get params :command)
                         (or (workbench--get error "message") (format "%S" error))))))
    (cond
     ((and (fboundp 'eglot-current-server) (eglot-current-server))
      (jsonrpc-async-request (eglot-current-server) :workspace/executeCommand params
                             :success-fn on-result :error-fn fail :timeout nil))
     ((and (bound-and-true-p lsp-mode) (fboundp 'lsp-request-async))
      (lsp-request-async "workspace/executeCommand" params on-result :error-handler fail))
     (t (user-error "No language server manages this buffer; %s"
                    "start one with M-x eglot or M-x lsp")))))

(defun workbench-run-trials (&optional reps)
  "Run the trial of the current manifest's package.
With a prefix argument, REPS attempts of each task in each arm.  The trial's
line (works, dollars per working result) goes to the echo area when it ends;
`workbench-open-trial-report' opens its report."
  (interactive "P")
  (let ((argument (list :uri (workbench--manifest-uri "run its trial"))))
    (when reps
      (setq argument (plist-put argument :reps (prefix-numeric-value reps))))
    (message "Workbench: trial started; it goes on while you work")
    (workbench--execute-async
     (list :command "workbench.trial" :arguments (vector argument))
     (lambda (result)
       (let ((job (workbench--get result "job")))
         (setq workbench-last-trial job)
         (message "Workbench: %s (%s; M-x workbench-open-trial-report)"
                  (workbench--get job "summary") (workbench--get job "jobId")))))))

(defun workbench-open-trial-report ()
  "Open the report of the current package's latest trial.
The report is opened with `workbench-open-report-function'; return its file."
  (interactive)
  (let* ((job (workbench--execute "workbench.openTrialReport"
                                  (vector (list :uri (workbench--manifest-uri "open its trial's report")
                                                :open :json-false))))
         (report (workbench--get job "reportHtml")))
    (setq workbench-last-trial job)
    (funcall workbench-open-report-function report)
    (message "Workbench: %s" (workbench--get job "summary"))
    report))

(provide 'workbench-trials)

;;; workbench-trials.el ends here
