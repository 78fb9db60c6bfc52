-- Default config for `vim.lsp.enable('diffill')` (Neovim >= 0.11 reads lsp/<name>.lua from 'runtimepath').
-- require('diffill').setup{} uses the same values; it also sets up ghost text and the accept key.
return {
  cmd = { 'diffill', 'serve' },
  filetypes = {
    'python', 'javascript', 'javascriptreact', 'typescript', 'typescriptreact',
    'go', 'rust', 'c', 'cpp', 'java', 'lua',
  },
  root_markers = { '.git' },
  init_options = {},
}
