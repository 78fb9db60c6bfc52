-- Drives Neovim (headless, main loop running: start with -S) through next edits: changes `hashlib.sha1` to
-- `_lazy_sha1` on line 5 as a user types it, waits for diffill's hints (vim.diagnostic), applies one with
-- "apply here" and the rest with "apply at all N places" (vim.lsp.buf.code_action), writes the file.
-- Results go to $DIFFILL_E2E_OUT as JSON.
local driver = dofile(os.getenv('DIFFILL_ROOT') .. '/tests/editors/nvim_driver.lua')
local result = driver.start({ hints = {} })
local step, finish, poll = driver.step, driver.finish, driver.poll

local buf = vim.api.nvim_get_current_buf()

local function hints(n)
  return function()
    local found = vim.tbl_filter(function(d) return d.source == 'diffill' end, vim.diagnostic.get(buf))
    table.sort(found, function(a, b) return a.lnum < b.lnum end)
    return #found == n and found
  end
end

local function apply(hint, word, k)
  vim.api.nvim_win_set_cursor(0, { hint.lnum + 1, hint.col })
  local before = driver.text(buf)
  vim.lsp.buf.code_action({ apply = true, filter = function(a) return a.title:find(word, 1, true) ~= nil end })
  poll(function()
    local now = driver.text(buf)
    return now ~= before and now
  end, 50, k)
end

poll(driver.client(buf), 50, function()
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
            result.buffer = driver.text(buf)
            step('written')
            finish(0)
          end)
        end)
      end)
    end)
  end)
end)
