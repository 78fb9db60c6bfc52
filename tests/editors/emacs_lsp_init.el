;;; emacs_lsp_init.el --- Emacs init for the lsp-mode e2e test (run in a terminal: emacs -nw -Q -l this FILE)
;; env: DIFFILL_ROOT, ELISP_DIR (lsp-mode 10 and its dependencies), DIFFILL_E2E_CMD (JSON list),
;;      DIFFILL_E2E_SETTINGS (JSON object), DIFFILL_E2E_OUT (events written here, one JSON per line)
(require 'json)
(dolist (d (directory-files (getenv "ELISP_DIR") t "^[a-z]"))
  (when (file-directory-p d) (add-to-list 'load-path d)))
(dolist (a '("dash" "f" "s" "ht" "spinner" "lv" "markdown-mode" "lsp-mode")) (load (concat a "-autoloads") t t))
(add-to-list 'load-path (expand-file-name "editors/emacs" (getenv "DIFFILL_ROOT")))

(setq lsp-session-file (make-temp-file "lsp-session")  ; no prompts, no ~/.emacs.d writes
      lsp-auto-guess-root nil lsp-enable-file-watchers nil lsp-keep-workspace-alive nil
      lsp-lens-enable nil lsp-enable-snippet nil lsp-headerline-breadcrumb-enable nil
      lsp-modeline-code-actions-enable nil lsp-completion-enable nil lsp-enable-on-type-formatting nil
      lsp-restart 'ignore confirm-kill-processes nil make-backup-files nil auto-save-default nil
      inhibit-startup-screen t)

(defun diffill-e2e-event (&rest kv)
  (with-temp-buffer
    (insert (json-encode kv) "\n")
    (append-to-file (point-min) (point-max) (getenv "DIFFILL_E2E_OUT"))))

(require 'diffill)
(setq diffill-server-command (append (json-parse-string (getenv "DIFFILL_E2E_CMD") :array-type 'list) nil)
      diffill-settings (json-parse-string (getenv "DIFFILL_E2E_SETTINGS") :object-type 'plist))
(diffill-lsp-setup)                     ; the setup a user calls
(setq lsp-enabled-clients '(diffill))   ; no other Python server on this machine

(add-hook 'lsp-inline-completion-shown-hook
          (lambda ()
            (diffill-e2e-event :event "shown"
                               :after-string (substring-no-properties
                                              (overlay-get lsp-inline-completion--overlay 'after-string))
                               :display (substring-no-properties
                                         (or (overlay-get lsp-inline-completion--overlay 'display) ""))
                               :idle-delay lsp-inline-completion-idle-delay)))
(add-hook 'lsp-inline-completion-accepted-functions
          (lambda (text _beg _end) (diffill-e2e-event :event "accepted" :text text)))
(add-hook 'after-save-hook (lambda () (diffill-e2e-event :event "saved" :file buffer-file-name)))
(add-hook 'lsp-after-open-hook
          (lambda () (diffill-e2e-event :event "opened" :inline-mode (and lsp-inline-completion-mode t))))

(lsp-workspace-folders-add default-directory)  ; instead of the interactive "import project root?" prompt
(add-hook 'python-mode-hook #'lsp)
