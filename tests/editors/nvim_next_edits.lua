-- Drives Neovim (headless, main loop running: start with -S) through next edits: changes `hashlib.sha1` to
-- `_lazy_sha1` on line 5 as a user types it, waits for diffill's hints (vim.diagnostic), applies one with
-- "apply here" and the rest with "apply at all N places" (vim.lsp.buf.code_action), writes the file.
-- Results go to $DIFFILL_E2E_OUT as JSON.
local out_path = os.getenv('DIFFILL_E2E_OUT')
local ready_path = os.getenv('DIFFILL_E2E_READY')
local result = { steps = {}, hints = {} }
local function step(s) table.insert(result.steps, s) end

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
vim.defer_fn(function() step('timeout'); finish(3) end, tonumber(os.getenv('DIFFILL_E2E_TIMEOUT_MS') or '150000'))

local buf = vim.api.nvim_get_current_buf()

local function poll(pred, interval, k)
  if done then return end
  local v = pred()
  if v then return k(v) end
  vim.defer_fn(function() poll(pred, interval, k) end, interval)
end

local function hints(n)
  return function()
    local found = vim.tbl_filter(function(d) return d.source == 'diffill' end, vim.diagnostic.get(buf))
    table.sort(found, function(a, b) return a.lnum < b.lnum end)
    return #found == n and found
  end
end

local function apply(hint, word, k)
  vim.api.nvim_win_set_cursor(0, { hint.lnum + 1, hint.col })
  local before = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  vim.lsp.buf.code_action({ apply = true, filter = function(a) return a.title:find(word, 1, true) ~= nil end })
  poll(function()
    local now = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
    return now ~= before and now
  end, 50, k)
end

poll(function()
  local c = vim.lsp.get_clients({ name = 'diffill', bufnr = buf })[1]
  return c and c.initialized and vim.uv.fs_stat(ready_path) and c
end, 50, function()
  step('server ready')
  vim.api.nvim_win_set_cursor(0, { 5, 10 })
  vim.api.nvim_feedkeys('c12l_lazy_sha1' .. vim.keycode('<Esc>'), 'nt', false)
  poll(hints(3), 50, function(three)
    for _, h in ipairs(three) do table.insert(result.hints, { lnum = h.lnum, message = h.message }) end
    step('three hints')
    apply(three[1], 'here', function()
      step('applied here')
      poll(hints(2), 50, function(two)
        step('two hints')
        apply(two[1], 'at all 2 places', function()
          step('applied at all places')
          poll(hints(0), 50, function()
            step('no hints left')
            vim.cmd('write')
            result.buffer = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
            step('written')
            finish(0)
          end)
        end)
      end)
    end)
  end)
end)
