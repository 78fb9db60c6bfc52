-- Drives Neovim 0.11 (no ghost text): the plugin's fallback is the LSP completion menu. Waits for diffill,
-- appends at the end of the prompt, asks for completion, picks diffill's item with <C-y>, writes the file.
local driver = dofile(os.getenv('DIFFILL_ROOT') .. '/tests/editors/nvim_driver.lua')
local result = driver.start({ version = tostring(vim.version()) })
local buf = vim.api.nvim_get_current_buf()
local function poll(pred, k) driver.poll(pred, 50, k) end
poll(driver.client(buf), function()
  result.uses_inline = require('diffill').uses_inline()
  local last = vim.fn.prevnonblank(vim.api.nvim_buf_line_count(buf))
  vim.api.nvim_win_set_cursor(0, { last, 0 })
  vim.api.nvim_feedkeys('A', 'n', false)
  vim.defer_fn(function()
    vim.lsp.completion.get() -- what <C-x><C-o> / autotrigger do
    poll(function()
      local i = vim.fn.complete_info({ 'items', 'selected' })
      return #i.items > 0 and i
    end, function(info)
      result.menu = vim.tbl_map(function(x) return x.word end, info.items)
      result.before_accept = driver.text(buf)
      result.pum_visible = vim.fn.pumvisible() == 1 -- the menu shows diffill's one item (needs 'menuone')
      vim.api.nvim_feedkeys(vim.keycode('<C-y>'), 'n', false)
      vim.defer_fn(function()
        result.buffer = driver.text(buf)
        vim.api.nvim_feedkeys(vim.keycode('<Esc>'), 'nt', false)
        vim.defer_fn(function() vim.cmd('write'); driver.finish(0) end, 100)
      end, 500)
    end)
  end, 200)
end)
