-- Drives Neovim 0.11 (no ghost text): the plugin's fallback is the LSP completion menu. Waits for diffill,
-- appends at the end of the prompt, asks for completion, picks diffill's item with <C-y>, writes the file.
local out_path = os.getenv('DIFFILL_E2E_OUT')
local ready_path = os.getenv('DIFFILL_E2E_READY')
local result = { version = tostring(vim.version()), steps = {} }
local done = false
local function finish(code)
  if done then return end
  done = true
  result.code = code
  local f = assert(io.open(out_path, 'w'))
  f:write(vim.json.encode(result))
  f:close()
  for _, c in ipairs(vim.lsp.get_clients()) do c:stop() end
  vim.defer_fn(function() vim.cmd(code == 0 and 'qall!' or ('cquit! ' .. code)) end, 300)
end
vim.defer_fn(function() table.insert(result.steps, 'timeout'); finish(3) end, 150000)
local buf = vim.api.nvim_get_current_buf()
local function poll(pred, k)
  if done then return end
  local v = pred()
  if v then return k(v) end
  vim.defer_fn(function() poll(pred, k) end, 50)
end
poll(function()
  local c = vim.lsp.get_clients({ name = 'diffill', bufnr = buf })[1]
  return c and c.initialized and vim.uv.fs_stat(ready_path) and c
end, function()
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
      result.before_accept = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
      result.pum_visible = vim.fn.pumvisible() == 1 -- the menu shows diffill's one item (needs 'menuone')
      vim.api.nvim_feedkeys(vim.keycode('<C-y>'), 'n', false)
      vim.defer_fn(function()
        result.buffer = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
        vim.api.nvim_feedkeys(vim.keycode('<Esc>'), 'nt', false)
        vim.defer_fn(function() vim.cmd('write'); finish(0) end, 100)
      end, 500)
    end)
  end, 200)
end)
