-- register: create a campaign in state "submitting" and fund its ledger.
-- KEYS: 1 meta, 2 ledger, 3 ledger:log, 4 events
-- ARGV: 1 campaign id, 2 spec (campaign JSON), 3 spec sha256, 4 n_tiers, 5 tiers JSON
--       ([{"name":..,"cost_ms":..}]), 6 max_attempts, 7 lease_ms, 8 backend,
--       9 gpu_ms total, 10 llm_tokens total, 11 who
-- Returns "created", or "resume" when an identical submission was interrupted before it opened.
-- Errors: KB_EXISTS when the campaign exists with another spec or already opened.
local meta, ledger, log, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local state = redis.call('HGET', meta, 'state')
if state then
  if state == 'submitting' and redis.call('HGET', meta, 'spec_sha') == ARGV[3] then
    return 'resume'
  end
  return redis.error_reply('KB_EXISTS campaign "' .. ARGV[1] .. '" already exists (state ' ..
                           state .. ')')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', meta, 'id', ARGV[1], 'state', 'submitting', 'spec', ARGV[2],
           'spec_sha', ARGV[3], 'n_tiers', ARGV[4], 'tiers', ARGV[5], 'max_attempts', ARGV[6],
           'lease_ms', ARGV[7], 'backend', ARGV[8], 'open', 0, 'done', 0, 'dead', 0,
           'created_ms', now)
local function fund(cur, amount)
  redis.call('HSET', ledger, cur .. ':total', amount, cur .. ':available', amount,
             cur .. ':held', 0, cur .. ':spent', 0)
  redis.call('XADD', log, '*', 'entry', cjson.encode({
    schema = 'kernelbrain.ledger/1', ts_ms = now, op = 'fund', currency = cur,
    amount = amount, charge_id = 'fund:' .. ARGV[1], who = ARGV[11],
    available = amount, held = 0, spent = 0, total = amount}))
end
fund('gpu_ms', tonumber(ARGV[9]))
fund('llm_tokens', tonumber(ARGV[10]))
redis.call('XADD', events, '*', 'type', 'submitted', 'who', ARGV[11])
return 'created'
