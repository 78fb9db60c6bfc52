-- Drives Neovim >= 0.12 (headless, main loop running: start with -S): waits for diffill, enters insert mode at
-- the end of the prompt, waits for the ghost text, presses <Tab> (the plugin's accept key), writes the file.
-- Results go to $DIFFILL_E2E_OUT as JSON.
local driver = dofile(os.getenv('DIFFILL_ROOT') .. '/tests/editors/nvim_driver.lua')
local result = driver.start({ version = tostring(vim.version()) })
local step, finish, poll = driver.step, driver.finish, driver.poll

local buf = vim.api.nvim_get_current_buf()
local ns = vim.api.nvim_create_namespace('nvim.lsp.inline_completion')

local function ghost_text()
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    local d = m[4]
    if d.virt_text then
      local lines = {}
      local first = {}
      for _, chunk in ipairs(d.virt_text) do table.insert(first, chunk[1]) end
      table.insert(lines, table.concat(first))
      for _, vl in ipairs(d.virt_lines or {}) do
        local l = {}
        for _, chunk in ipairs(vl) do table.insert(l, chunk[1]) end
        table.insert(lines, table.concat(l))
      end
      return table.concat(lines, '\n')
    end
  end
end

-- $DIFFILL_E2E_EARLY: type as soon as the server has answered `initialize`, while the model still loads; the
-- request made then must be answered once the model is ready, with no other key pressed.
local early = os.getenv('DIFFILL_E2E_EARLY') == '1'
result.progress = {}
vim.api.nvim_create_autocmd('LspProgress', {
  callback = function(ev)
    local value = ev.data and ev.data.params and ev.data.params.value
    if value then table.insert(result.progress, value.kind) end
  end,
})

poll(driver.client(buf, early), 50, function(client)
  result.typed_before_ready = vim.uv.fs_stat(driver.ready_path) == nil
  step(early and 'server initialized' or 'server ready')
  result.inline_enabled = vim.lsp.inline_completion.is_enabled({ bufnr = buf })
  result.offset_encoding = client.offset_encoding
  -- cursor on the last non-empty line, append there: InsertEnter makes the automatic request
  local last = vim.fn.prevnonblank(vim.api.nvim_buf_line_count(buf))
  vim.api.nvim_win_set_cursor(0, { last, 0 })
  vim.api.nvim_feedkeys('A', 'n', false)
  poll(ghost_text, 50, function(ghost)
    result.ghost = ghost
    result.mode = vim.api.nvim_get_mode().mode
    step('ghost text shown')
    result.before_accept = driver.text(buf)
    vim.api.nvim_feedkeys(vim.keycode('<Tab>'), 'mt', false) -- through the plugin's mapping
    poll(function()
      local now = driver.text(buf)
      return now ~= result.before_accept and now
    end, 50, function(now)
      result.buffer = now
      result.ghost_after = ghost_text()
      step('accepted')
      vim.api.nvim_feedkeys(vim.keycode('<Esc>'), 'nt', false)
      vim.defer_fn(function()
        vim.cmd('write')
        step('written')
        finish(0)
      end, 100)
    end)
  end)
end)
