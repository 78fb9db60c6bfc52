-- What the Neovim drivers share (loaded with dofile): the result written to $DIFFILL_E2E_OUT as JSON when the
-- driver finishes or times out, its steps, polling on the main loop, and waiting for diffill's client.
local M = { done = false, ready_path = os.getenv('DIFFILL_E2E_READY') }

-- Starts a driver whose JSON result is `result` (its `steps` filled by M.step), and gives it back; the driver
-- fails with code 3 after $DIFFILL_E2E_TIMEOUT_MS (150 s by default).
function M.start(result)
  result.steps = result.steps or {}
  M.result = result
  vim.defer_fn(function() M.step('timeout'); M.finish(3) end, tonumber(os.getenv('DIFFILL_E2E_TIMEOUT_MS') or '150000'))
  return result
end

function M.step(s) table.insert(M.result.steps, s) end

-- Writes the result, stops the clients and leaves Neovim with `code` (once: later calls do nothing).
function M.finish(code)
  if M.done then return end
  M.done = true
  M.result.code = code
  local f = assert(io.open(os.getenv('DIFFILL_E2E_OUT'), 'w'))
  f:write(vim.json.encode(M.result))
  f:close()
  for _, c in ipairs(vim.lsp.get_clients()) do c:stop() end
  vim.defer_fn(function() vim.cmd(code == 0 and 'qall!' or ('cquit! ' .. code)) end, 300)
end

-- Calls k(v) once pred() gives a value v, asking every `interval` ms (until the driver finishes).
function M.poll(pred, interval, k)
  if M.done then return end
  local v = pred()
  if v then return k(v) end
  vim.defer_fn(function() M.poll(pred, interval, k) end, interval)
end

-- A predicate for M.poll: diffill's client of `buf` once initialized and, unless `early`, its model ready.
function M.client(buf, early)
  return function()
    local c = vim.lsp.get_clients({ name = 'diffill', bufnr = buf })[1]
    return c and c.initialized and (early or vim.uv.fs_stat(M.ready_path)) and c
  end
end

function M.text(buf) return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n') end

return M
