-- register: create a campaign in state "submitting" and fund its ledger.
-- KEYS: 1 meta, 2 ledger, 3 ledger:log, 4 events
-- ARGV: 1 campaign id, 2 spec (campaign JSON), 3 spec sha256, 4 n_tiers, 5 tiers JSON
--       ([{"name":..,"cost_ms":..}]), 6 max_attempts, 7 lease_ms, 8 backend,
--       9 gpu_ms total, 10 llm_tokens total, 11 who
-- Returns "created", or "resume" when an identical submission was interrupted before it opened.
-- Errors: KB_EXISTS when the campaign exists with another spec or already opened (an
-- interrupted submission of another spec says how to finish or cancel it).
local meta, ledger, log, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local state = redis.call('HGET', meta, 'state')
if state then
  local sha = redis.call('HGET', meta, 'spec_sha')
  if state == 'submitting' and sha == ARGV[3] then
    return 'resume'
  end
  if state == 'submitting' then -- a submission killed half way, of another campaign file
    return redis.error_reply('KB_EXISTS campaign "' .. ARGV[1] .. '" has an interrupted ' ..
                             'submission of another campaign file (sha256 ' ..
                             string.sub(tostring(sha), 1, 12) .. '..., this one ' ..
                             string.sub(ARGV[3], 1, 12) .. '...): submit that file again to ' ..
                             'finish it, or cancel it (kb-submit cancel ' .. ARGV[1] ..
                             ') and submit this one under another id')
  end
  return redis.error_reply('KB_EXISTS campaign "' .. ARGV[1] .. '" already exists (state ' ..
                           state .. ')')
end
local now = kb_now_ms()
redis.call('HSET', meta, 'id', ARGV[1], 'state', 'submitting', 'spec', ARGV[2],
           'spec_sha', ARGV[3], 'n_tiers', ARGV[4], 'tiers', ARGV[5], 'max_attempts', ARGV[6],
           'lease_ms', ARGV[7], 'backend', ARGV[8], 'open', 0, 'done', 0, 'dead', 0,
           'created_ms', now, 'layout', KB_LAYOUT)
local function fund(cur, amount)
  redis.call('HSET', ledger, cur .. ':total', kb_int(amount))
  local bal = {available = 0, held = 0, spent = 0, total = amount}
  kb_move(ledger, log, cur, bal, 'fund', amount, amount, 0, 0, 'fund:' .. ARGV[1], ARGV[11], now)
end
fund('gpu_ms', tonumber(ARGV[9]))
fund('llm_tokens', tonumber(ARGV[10]))
redis.call('XADD', events, '*', 'type', 'submitted', 'who', ARGV[11])
return 'created'
