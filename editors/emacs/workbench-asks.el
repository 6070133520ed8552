;;; workbench-asks.el --- What a Workbench run asks the person  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The wb-lsp authors
;; SPDX-License-Identifier: Apache-2.0

;;; Commentary:

;; Part of the Workbench package (`workbench-mode.el' loads every part).
;; A run this Emacs follows (`workbench-attach', a session's turn) may ask the person: permission for a tool
;; call, or questions (docs/runs.md#answering).  The server says so with `workbench/inputRequested'; the request
;; is asked with `completing-read' (a permission's options; each question's options, or your own words where it
;; allows them; several, comma-separated, where it allows several) and the answer goes back with the server's
;; `workbench.answer'.  `workbench/inputResolved' withdraws it (answered elsewhere, or refused after the input
;; timeout): an answer given after that is not sent.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'json)
(require 'workbench-core)

(defvar workbench-asks-read-function #'completing-read
  "How a choice is read: called as `completing-read' is (tests replace it).")

(defvar workbench--asks-pending (make-hash-table :test #'equal)
  "The requests asked and not yet resolved: request id to run id.")

(defun workbench--asks-send (run-id id answer)
  "Send ANSWER (a string; nil refuses) to request ID of run RUN-ID."
  (if (not (gethash id workbench--asks-pending))
      (message "Workbench: request %s was already answered" id)
    (let ((argument (list :runId run-id :requestId id)))
      (setq argument (if answer (plist-put argument :answer answer) (plist-put argument :reject t)))
      (condition-case err
          (workbench--execute-anywhere "workbench.answer" (vector argument))
        (error (message "Workbench: cannot answer %s: %s" id (error-message-string err)))))))

(defun workbench--asks-question (question)
  "The answers to QUESTION (a list of strings), or nil when dismissed."
  (let* ((labels (mapcar (lambda (option) (workbench--get option "label"))
                         (append (workbench--get question "options") nil)))
         (custom (or (workbench--true-p (workbench--get question "custom")) (null labels)))
         (prompt (format "%s " (workbench--get question "question"))))
    (if (workbench--true-p (workbench--get question "multiple"))
        (let ((text (funcall workbench-asks-read-function
                             (format "%s(%s; several, comma-separated): " prompt (string-join labels ", "))
                             labels nil (not custom))))
          (delete "" (mapcar #'string-trim (split-string (or text "") ","))))
      (let ((choice (funcall workbench-asks-read-function prompt labels nil (not custom))))
        (and choice (not (string-empty-p choice)) (list choice))))))

(defun workbench--asks-ask (run-id request)
  "Ask REQUEST of run RUN-ID, then answer it."
  (let ((id (workbench--get request "id")))
    (pcase (workbench--get request "kind")
      ("permission"
       (let ((options (append (workbench--get request "options") nil)))
         (workbench--asks-send
          run-id id (funcall workbench-asks-read-function
                             (format "%s: " (workbench--get request "message")) options nil t))))
      ("question"
       (let* ((questions (append (workbench--get request "questions") nil))
              (answers (cl-loop for question in questions
                                for given = (workbench--asks-question question)
                                unless given return nil
                                collect given)))
         (workbench--asks-send
          run-id id
          (cond ((null answers) nil)
                ((and (= (length answers) 1) (= (length (car answers)) 1)) (caar answers))
                (t (json-encode (vconcat (mapcar #'vconcat answers)))))))))))

(defun workbench--on-input-requested (run-id request text)
  "A `workbench/inputRequested' notification: say TEXT, then ask REQUEST of RUN-ID.
It is asked from a timer, so the notification's handler returns at once."
  (puthash (workbench--get request "id") run-id workbench--asks-pending)
  (message "Workbench: %s" text)
  (run-at-time 0 nil #'workbench--asks-ask run-id request))

(defun workbench--on-input-resolved (id how answer reason)
  "A `workbench/inputResolved' notification: request ID is no longer asked.
HOW is answered or refused, with the ANSWER or the REASON."
  (when (gethash id workbench--asks-pending)
    (remhash id workbench--asks-pending)
    (message "Workbench: %s %s" id
             (if (equal how "refused") (format "refused: %s" reason)
               (if answer (format "answered: %s" answer) "answered")))))

(with-eval-after-load 'eglot
  (cl-defmethod eglot-handle-notification
    (_server (_method (eql workbench/inputRequested)) &key runId request text &allow-other-keys)
    "A `workbench/inputRequested' notification."
    (workbench--on-input-requested runId request text))
  (cl-defmethod eglot-handle-notification
    (_server (_method (eql workbench/inputResolved)) &key id how answer reason &allow-other-keys)
    "A `workbench/inputResolved' notification."
    (workbench--on-input-resolved id how answer reason)))

(defun workbench--lsp-mode-input-requested (_workspace params)
  "lsp-mode's handler of `workbench/inputRequested' with PARAMS."
  (workbench--on-input-requested (workbench--get params "runId") (workbench--get params "request")
                                 (workbench--get params "text")))

(defun workbench--lsp-mode-input-resolved (_workspace params)
  "lsp-mode's handler of `workbench/inputResolved' with PARAMS."
  (workbench--on-input-resolved (workbench--get params "id") (workbench--get params "how")
                                (workbench--get params "answer") (workbench--get params "reason")))

(provide 'workbench-asks)

;;; workbench-asks.el ends here
