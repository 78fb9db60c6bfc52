-- Neovim init for the e2e test: the plugin from editors/nvim, configured like a user would.
local root = os.getenv('DIFFILL_ROOT')
vim.opt.runtimepath:prepend(root .. '/editors/nvim')
vim.o.swapfile = false
require('diffill').setup({
  cmd = vim.json.decode(os.getenv('DIFFILL_E2E_CMD')),
  settings = vim.json.decode(os.getenv('DIFFILL_E2E_SETTINGS')),
  -- accept_key defaults to <Tab>
})
