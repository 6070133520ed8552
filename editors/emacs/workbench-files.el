;;; workbench-files.el --- An outcome's changed files, one by one  -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The wb-lsp authors
;; SPDX-License-Identifier: Apache-2.0

;;; Commentary:

;; Part of the Workbench package (`workbench-mode.el' loads every part):
;; `workbench-outcome-files' lists an outcome's changed files (the
;; server's `workbench.outcome' entries); each opens in Ediff or
;; `diff-mode' (`workbench.outcomeFile'), and one can be applied alone.

;;; Code:

(require 'tabulated-list)
(require 'seq)
(require 'workbench-core)

;;;; An outcome file by file: the changed files, each in a diff, one applied alone

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
  (workbench--list-keymap "RET" #'workbench-files-ediff "d" #'workbench-files-diff "a" #'workbench-files-apply)
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
  :type 'boolean
  :group 'workbench)

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

(provide 'workbench-files)

;;; workbench-files.el ends here
