;;; diffill.el --- Local diffusion code completion (the diffill language server) for lsp-mode and Eglot  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "29.1"))
;; Keywords: languages, tools, convenience
;; SPDX-License-Identifier: Apache-2.0

;;; Commentary:

;; diffill is a language server (`diffill serve') that completes code at point with a local text-diffusion model.
;;
;; lsp-mode (>= 10.0 for ghost text): diffill runs as an add-on client beside your usual server, and
;; `lsp-inline-completion-mode' shows its proposal as an overlay after a short idle delay (0.2 s here instead of
;; lsp-mode's 2 s default).  Accept with TAB (see `diffill-accept-key') or C-<return>; C-g cancels.
;;
;;   (require 'diffill)
;;   (diffill-lsp-setup)                 ; then M-x lsp (or lsp-deferred in the mode hooks) as usual
;;
;; Eglot (built into Emacs >= 29): Eglot has no inline completion and runs one server per buffer, so diffill
;; becomes that server for the languages in `diffill-major-modes'; its answer is an ordinary completion item
;; (with a textEdit), used by `completion-at-point' (M-TAB / C-M-i, or corfu/company).
;;
;;   (require 'diffill)
;;   (diffill-eglot-setup)               ; then M-x eglot
;;
;; Settings go to the server as initializationOptions (`diffill-settings') and on change as
;; workspace/didChangeConfiguration (`diffill-toggle', `diffill-set').

;;; Code:

(require 'cl-lib)
(require 'subr-x)

(defgroup diffill nil
  "Local diffusion code completion."
  :group 'tools
  :prefix "diffill-")

(defcustom diffill-server-command '("diffill" "serve")
  "The command that starts the language server, as a list of program and arguments."
  :type '(repeat string))

(defcustom diffill-settings '()
  "Server settings (a plist), sent as initializationOptions; empty = the
server's defaults (the README's settings table), e.g. (:latencyBudgetMs 400).
Keys: :model (\"\" = the embedded model, or a folder or Hugging Face
hub id), :device (\"auto\", \"cpu\", \"cuda\"), :steps (1..128),
:canvasLength, :enabled, :languages, :latencyBudgetMs,
:maxPromptTokens, :threads, :minConfidence, :draftCandidates."
  :type 'plist)

(defcustom diffill-major-modes
  '(python-mode python-ts-mode js-mode js-ts-mode js-jsx-mode typescript-mode typescript-ts-mode tsx-ts-mode
    go-mode go-ts-mode rust-mode rust-ts-mode rustic-mode c-mode c-ts-mode c++-mode c++-ts-mode
    java-mode java-ts-mode lua-mode lua-ts-mode)
  "Major modes in which diffill runs."
  :type '(repeat symbol))

(defcustom diffill-language-ids
  '("python" "javascript" "javascriptreact" "typescript" "typescriptreact" "go" "rust" "c" "cpp" "java" "lua")
  "lsp-mode language ids in which diffill runs.
See `lsp-language-id-configuration'."
  :type '(repeat string))

(defcustom diffill-inline-completion-idle-delay 0.2
  "Idle seconds before lsp-mode asks for ghost text.
lsp-mode's own default is 2."
  :type 'number)

(defcustom diffill-accept-key "TAB"
  "Key (for `kbd') that accepts the ghost text while shown, or nil.
Applies to lsp-mode; C-<return> always works too."
  :type '(choice string (const nil)))

;;;; lsp-mode

(declare-function lsp-register-client "lsp-mode")
(declare-function make-lsp-client "lsp-mode")
(declare-function lsp-stdio-connection "lsp-mode")
(declare-function lsp-activate-on "lsp-mode")
(declare-function lsp-notify "lsp-mode")
(declare-function lsp-request "lsp-mode")
(declare-function lsp--workspace-client "lsp-mode")
(declare-function lsp--client-server-id "lsp-mode")
(declare-function lsp-workspaces "lsp-mode")
(declare-function lsp-inline-completion-mode "lsp-inline-completion")
(declare-function lsp-inline-completion-accept "lsp-inline-completion")
(declare-function lsp-inline-completion--define-key "lsp-inline-completion")
(defvar lsp-inline-completion-idle-delay)
(defvar lsp-inline-completion-active-map)
(defvar lsp-inline-completion-enable)
(defvar lsp--cur-workspace)
(defvar eglot-server-programs)
(defvar eglot-workspace-configuration)

(defun diffill--lsp-workspace ()
  "The diffill workspace of the current buffer (lsp-mode), or nil."
  (and (fboundp 'lsp-workspaces)
       (cl-find-if (lambda (ws) (eq (lsp--client-server-id (lsp--workspace-client ws)) 'diffill))
                   (lsp-workspaces))))

(defun diffill--lsp-on-open ()
  "Turn on ghost text in buffers where the diffill client runs."
  (when (diffill--lsp-workspace)
    (setq-local lsp-inline-completion-idle-delay diffill-inline-completion-idle-delay)
    (lsp-inline-completion-mode 1)))

;;;###autoload
(defun diffill-lsp-setup ()
  "Register diffill with lsp-mode as an add-on client and enable its ghost text."
  (require 'lsp-mode)
  (require 'lsp-inline-completion)
  (setq lsp-inline-completion-enable t)
  (setq-default lsp-inline-completion-idle-delay diffill-inline-completion-idle-delay)
  (when diffill-accept-key
    (lsp-inline-completion--define-key lsp-inline-completion-active-map (kbd diffill-accept-key)
                                       #'lsp-inline-completion-accept 'keep))
  (lsp-register-client
   (make-lsp-client
    :new-connection (lsp-stdio-connection (lambda () diffill-server-command))
    :activation-fn (apply #'lsp-activate-on diffill-language-ids)
    :initialization-options (lambda () diffill-settings)
    :add-on? t                          ; runs beside the buffer's usual server
    :priority -5
    :server-id 'diffill))
  (add-hook 'lsp-after-open-hook #'diffill--lsp-on-open))

;;;; Eglot

(defun diffill--eglot-contact (&rest _)
  "Eglot's contact for diffill: the command plus initializationOptions."
  (append diffill-server-command (list :initializationOptions diffill-settings)))

;;;###autoload
(defun diffill-eglot-setup ()
  "Make diffill Eglot's server for `diffill-major-modes'.
Completions then come through `completion-at-point'."
  (require 'eglot)
  (setq eglot-server-programs
        (cons (cons diffill-major-modes #'diffill--eglot-contact)
              (cl-remove-if (lambda (entry) (eq (cdr-safe entry) #'diffill--eglot-contact))
                            eglot-server-programs)))
  ;; didChangeConfiguration carries the same settings
  (setq-default eglot-workspace-configuration
                (plist-put (copy-sequence (default-value 'eglot-workspace-configuration)) :diffill diffill-settings)))

;;;; Commands (both clients)

(declare-function eglot-current-server "eglot")
(declare-function jsonrpc-notify "jsonrpc")
(declare-function jsonrpc-request "jsonrpc")

(defun diffill--notify-settings ()
  "Send `diffill-settings' to the running diffill server(s)."
  (let ((params (list :settings (list :diffill diffill-settings))))
    (cond
     ((diffill--lsp-workspace)
      (let ((lsp--cur-workspace (diffill--lsp-workspace)))
        (with-no-warnings
          (lsp-notify "workspace/didChangeConfiguration" params))))
     ((and (fboundp 'eglot-current-server) (eglot-current-server))
      (jsonrpc-notify (eglot-current-server) :workspace/didChangeConfiguration params)))))

;;;###autoload
(defun diffill-set (key value)
  "Set setting KEY (a keyword such as :steps) to VALUE and send it to the server."
  (setq diffill-settings (plist-put (copy-sequence diffill-settings) key value))
  (diffill--notify-settings))

;;;###autoload
(defun diffill-toggle ()
  "Turn diffill's completions off or on (the server keeps running)."
  (interactive)
  (let ((on (not (eq (plist-get diffill-settings :enabled) :json-false))))
    (diffill-set :enabled (if on :json-false t))
    (message "diffill: completions %s" (if on "off" "on"))))

;;;###autoload
(defun diffill-status ()
  "Show the server's model state and last latency (the diffill/status request)."
  (interactive)
  (let ((status
         (cond
          ((diffill--lsp-workspace)
           (let ((lsp--cur-workspace (diffill--lsp-workspace)))
             (with-no-warnings (lsp-request "diffill/status" nil))))
          ((and (fboundp 'eglot-current-server) (eglot-current-server))
           (jsonrpc-request (eglot-current-server) :diffill/status nil)))))
    (if (not status)
        (message "diffill: no server in this buffer")
      (let ((get (lambda (k) (if (hash-table-p status) (gethash (substring (symbol-name k) 1) status)
                               (plist-get status k)))))
        (message "diffill: %s, last completion %.0f ms" (funcall get :model)
                 (or (funcall get :last_latency_ms) 0))))
    status))

(provide 'diffill)
;;; diffill.el ends here
