-- diffill for Neovim: registers `diffill serve` as a language server and shows its completions.
--
--   require('diffill').setup {
--     cmd = { 'diffill', 'serve' },            -- the server
--     settings = {},                           -- initializationOptions ({} = the server's defaults)
--     accept_key = '<Tab>',                    -- accepts the ghost text (false: no mapping)
--   }
--
-- Neovim >= 0.12: ghost text with the built-in vim.lsp.inline_completion, accepted with `accept_key`
-- (the key keeps its normal meaning when no ghost text is shown).
-- Neovim 0.11: ordinary LSP completion (vim.lsp.completion with autotrigger; the items carry a textEdit).
-- Neovim 0.8-0.10: the server is started on FileType and completion is on 'omnifunc' (<C-x><C-o>).
local M = {}

M.defaults = {
  cmd = { 'diffill', 'serve' },
  filetypes = {
    'python', 'javascript', 'javascriptreact', 'typescript', 'typescriptreact',
    'go', 'rust', 'c', 'cpp', 'java', 'lua',
  },
  root_markers = { '.git' },
  -- initializationOptions: model ('' = embedded), device ('auto'|'cpu'|'cuda'), steps (1..128), canvasLength,
  -- enabled, languages, latencyBudgetMs, maxPromptTokens, threads, minConfidence, draftCandidates
  settings = {},
  accept_key = '<Tab>',
  -- 'auto': ghost text where Neovim has it (>= 0.12), else the completion menu; 'inline' or 'menu' to force one
  mode = 'auto',
  autotrigger = true, -- completion menu opens by itself (menu mode, Neovim >= 0.11)
  on_attach = nil, -- function(client, bufnr) called after diffill's own setup
}

M.config = vim.deepcopy(M.defaults)
local NAME = 'diffill'

local function has_inline()
  return vim.lsp.inline_completion ~= nil and vim.fn.has('nvim-0.12') == 1
end

function M.uses_inline()
  if M.config.mode == 'menu' then return false end
  return has_inline()
end

-- client methods: `client:m(...)` on Neovim >= 0.11 (the dot form is deprecated there), `client.m(...)` before
local NEW_API = vim.fn.has('nvim-0.11') == 1
local function call(c, method, ...)
  if NEW_API then return c[method](c, ...) end
  return c[method](...)
end

local function clients(bufnr)
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  return get({ name = NAME, bufnr = bufnr })
end

--- Accepts the ghost text; false when there is none (so a mapping can fall back to the key's own meaning).
function M.accept()
  if has_inline() then return vim.lsp.inline_completion.get() end
  return false
end

local function map_accept_key(bufnr)
  local key = M.config.accept_key
  if not key or not M.uses_inline() then return end
  vim.keymap.set('i', key, function()
    if not vim.lsp.inline_completion.get() then
      return vim.api.nvim_replace_termcodes(key, true, true, true)
    end
    return ''
  end, { buffer = bufnr, expr = true, replace_keycodes = false, desc = 'diffill: accept the ghost text' })
end

--- After a diffill item was picked from the completion menu: Neovim's menu inserts one word of a plain-text
--- textEdit (up to the first space); replace it with the whole proposal, and the rest of the line that the
--- item's range covers (the model may rewrite the rest of the line).
function M.complete_done(bufnr)
  local done = vim.v.completed_item
  local lsp_data = done and done.user_data and type(done.user_data) == 'table' and done.user_data.nvim
    and done.user_data.nvim.lsp
  local item = lsp_data and lsp_data.completion_item
  local client = lsp_data and vim.lsp.get_client_by_id(lsp_data.client_id)
  if not (item and client and client.name == NAME and item.textEdit and item.textEdit.newText) then return end
  if vim.v.event and vim.v.event.reason and vim.v.event.reason ~= 'accept' then return end
  local edit = item.textEdit
  local word = done.word or ''
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local line = vim.api.nvim_buf_get_lines(bufnr, row - 1, row, false)[1] or ''
  local start = col - #word
  if start < 0 or line:sub(start + 1, col) ~= word then return end
  local rng = edit.range or edit.replace
  local suffix = 0
  if rng and rng['end'].line == rng.start.line and rng['end'].character > rng.start.character then
    local units = rng['end'].character - rng.start.character
    local rest = line:sub(col + 1)
    local enc = client.offset_encoding or 'utf-16'
    local ok, bytes = pcall(vim.str_byteindex, rest, enc, math.min(units, vim.str_utfindex(rest, enc)), false)
    suffix = ok and bytes or 0
  end
  local new_lines = vim.split(edit.newText, '\n', { plain = true })
  if #new_lines == 1 and suffix == 0 and new_lines[1] == word then return end
  vim.api.nvim_buf_set_text(bufnr, row - 1, start, row - 1, col + suffix, new_lines)
  local last = new_lines[#new_lines]
  local end_col = (#new_lines == 1) and (start + #last) or #last
  vim.api.nvim_win_set_cursor(0, { row + #new_lines - 1, end_col })
end

--- Called when the diffill client attaches to a buffer.
function M.attach(client, bufnr)
  if M.uses_inline() then
    vim.lsp.inline_completion.enable(true, { bufnr = bufnr })
    map_accept_key(bufnr)
  elseif vim.lsp.completion and vim.lsp.completion.enable then
    -- diffill proposes one item: without 'menuone' Neovim shows no menu for a single match (it inserts it at
    -- once, and <C-y> then types the character above the cursor instead of accepting)
    local cot = vim.bo[bufnr].completeopt ~= '' and vim.bo[bufnr].completeopt or vim.o.completeopt
    if not vim.tbl_contains(vim.split(cot, ',', { plain = true }), 'menuone') then
      vim.bo[bufnr].completeopt = cot .. ',menuone'
    end
    vim.lsp.completion.enable(true, client.id, bufnr, {
      autotrigger = M.config.autotrigger,
      -- the menu shows (and inserts) the first line; complete_done() then puts in the whole proposal
      convert = function(item)
        local edit = item.textEdit
        if edit and edit.newText then return { word = vim.split(edit.newText, '\n', { plain = true })[1] } end
        return {}
      end,
    })
    vim.api.nvim_create_autocmd('CompleteDone', {
      group = vim.api.nvim_create_augroup('diffill_complete_' .. bufnr, { clear = true }),
      buffer = bufnr,
      callback = function() M.complete_done(bufnr) end,
    })
  else
    vim.bo[bufnr].omnifunc = 'v:lua.vim.lsp.omnifunc'
  end
  if M.config.on_attach then M.config.on_attach(client, bufnr) end
end

--- The project folder of a buffer: the nearest folder above it with a root marker (.git), else the file's own
--- folder, so that a project without .git still gets its files read (workspace context, copies).
function M.root_of(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local marker = vim.fs.find(M.config.root_markers, { upward = true, path = vim.fs.dirname(name) })[1]
  if marker then return vim.fs.dirname(marker) end
  return name ~= '' and vim.fs.dirname(name) or vim.fn.getcwd()
end

local function lsp_config()
  return {
    cmd = M.config.cmd,
    filetypes = M.config.filetypes,
    root_dir = function(bufnr, on_dir) on_dir(M.root_of(bufnr)) end,
    init_options = M.config.settings,
    on_attach = M.attach,
  }
end

local function notify(msg, level)
  vim.notify('diffill: ' .. msg, level or vim.log.levels.INFO)
end

--- Sends new settings to the running servers (workspace/didChangeConfiguration).
function M.set_settings(changes)
  M.config.settings = vim.tbl_extend('force', M.config.settings, changes)
  for _, c in ipairs(clients()) do
    call(c, 'notify', 'workspace/didChangeConfiguration', { settings = { diffill = M.config.settings } })
  end
end

function M.toggle()
  local enabled = M.config.settings.enabled ~= false
  M.set_settings({ enabled = not enabled })
  notify('completions ' .. (enabled and 'off' or 'on'))
end

--- The server's diffill/status answer (synchronous; nil if no server).
function M.status(timeout_ms)
  local c = clients()[1]
  if not c then return nil end
  local res = call(c, 'request_sync', 'diffill/status', {}, timeout_ms or 2000)
  return res and res.result
end

--- A short text for a statusline: "diffill 87 ms", "diffill: loading", "diffill: off".
function M.statusline()
  local s = M._last_status
  if not s then return '' end
  if s.settings and s.settings.enabled == false then return 'diffill: off' end
  if not s.ready then return 'diffill: ' .. ((s.error and 'no model') or 'loading') end
  local ms = tonumber(s.last_latency_ms) or 0
  return ms > 0 and string.format('diffill %d ms', math.floor(ms + 0.5)) or 'diffill'
end

local function poll_status()
  local c = clients()[1]
  if not c then return end
  call(c, 'request', 'diffill/status', {}, function(err, result)
    if not err then M._last_status = result end
  end)
end

function M.restart()
  local old = clients()
  for _, c in ipairs(old) do call(c, 'stop') end
  vim.wait(3000, function() return #clients() == 0 end, 50)
  if vim.lsp.config and vim.lsp.enable then
    vim.lsp.enable(NAME) -- re-runs the FileType autocmds of open buffers, which start the server again
  else
    vim.cmd('doautoall diffill FileType')
  end
end

local function start_legacy(bufnr)
  -- Neovim 0.8-0.10: no vim.lsp.config
  vim.lsp.start({
    name = NAME,
    cmd = M.config.cmd,
    root_dir = M.root_of(bufnr),
    init_options = M.config.settings,
    on_attach = M.attach,
  }, { bufnr = bufnr })
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  if opts and opts.settings then M.config.settings = vim.deepcopy(opts.settings) end
  if opts and opts.filetypes then M.config.filetypes = opts.filetypes end
  if opts and opts.cmd then M.config.cmd = opts.cmd end
  if vim.lsp.config and vim.lsp.enable then -- Neovim >= 0.11
    vim.lsp.config(NAME, lsp_config())
    vim.lsp.enable(NAME)
  elseif vim.lsp.start then -- 0.8 .. 0.10
    vim.api.nvim_create_autocmd('FileType', {
      group = vim.api.nvim_create_augroup('diffill', { clear = true }),
      pattern = M.config.filetypes,
      callback = function(ev) start_legacy(ev.buf) end,
    })
  else
    notify('needs Neovim >= 0.8', vim.log.levels.ERROR)
    return
  end
  local group = vim.api.nvim_create_augroup('diffill_status', { clear = true })
  vim.api.nvim_create_autocmd({ 'InsertLeave', 'BufEnter' }, { group = group, callback = poll_status })
  vim.api.nvim_create_user_command('DiffillToggle', M.toggle, { desc = 'diffill: completions on/off' })
  vim.api.nvim_create_user_command('DiffillRestart', M.restart, { desc = 'diffill: restart the server' })
  vim.api.nvim_create_user_command('DiffillStatus', function()
    local s = M.status()
    if s then M._last_status = s end
    local c = clients()[1]
    local root = c and c.root_dir and ('workspace root: ' .. c.root_dir .. '\n') or ''
    notify(s and (root .. vim.inspect(s)) or 'no server running')
  end, { desc = 'diffill: model state and latency' })
end

return M
