-- complete: settle an item's charge, record its result and end its lease. Idempotent by charge
-- id: a retry after a lost reply returns {"dup"} and changes nothing.
-- KEYS: 1 meta, 2 ledger, 3 ledger:log, 4 lease, 5 items, 6 charges, 7 results, 8 taskbudget
-- ARGV: 1 item id, 2 lease token, 3 charge id, 4 actual cost_ms, 5 result JSON, 6 runner
-- The actual cost is capped at the reservation; the remainder returns to "available".
-- Returns {"ok", open items left} or {"dup"}.
-- Errors: KB_LEASE when the lease was lost (expired and reaped: its reservation was refunded and
-- the item requeued), KB_NOTFOUND for an unknown charge.
local meta, ledger, log, lease, items, charges = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5],
                                                KEYS[6]
local id, token, charge = ARGV[1], ARGV[2], ARGV[3]
local ch = redis.call('HGET', charges, charge)
if not ch then
  return redis.error_reply('KB_NOTFOUND no charge "' .. charge .. '"')
end
local kind = string.sub(ch, 1, 1)
if kind == 'P' then
  return {'dup'}
end
local raw = redis.call('HGET', items, id)
local item = raw and cjson.decode(raw)
if kind ~= 'H' or not item or item.state ~= 'leased' or item.token ~= token then
  return redis.error_reply('KB_LEASE lease of "' .. id .. '" was lost; its reservation was refunded')
end
local reserved = tonumber(string.sub(ch, 3))
local actual = math.min(math.max(tonumber(ARGV[4]), 0), reserved)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Two steps, each with its own audit entry showing the balances right after it: post moves the
-- actual cost from held to spent; void returns the rest of the reservation to available.
local function entry(op, amount, available, held, spent)
  redis.call('XADD', log, '*', 'entry', cjson.encode({
    schema = 'kernelbrain.ledger/1', ts_ms = now, op = op, currency = 'gpu_ms',
    amount = amount, charge_id = charge, who = ARGV[6], available = available, held = held,
    spent = spent, total = tonumber(redis.call('HGET', ledger, 'gpu_ms:total'))}))
end
local held = tonumber(redis.call('HINCRBY', ledger, 'gpu_ms:held', string.format('%d', -actual)))
local spent = tonumber(redis.call('HINCRBY', ledger, 'gpu_ms:spent', string.format('%d', actual)))
local available = tonumber(redis.call('HGET', ledger, 'gpu_ms:available'))
entry('post', actual, available, held, spent)
if reserved > actual then
  local rest = reserved - actual
  held = tonumber(redis.call('HINCRBY', ledger, 'gpu_ms:held', string.format('%d', -rest)))
  available = tonumber(redis.call('HINCRBY', ledger, 'gpu_ms:available',
                                  string.format('%d', rest)))
  entry('void', rest, available, held, spent)
end
redis.call('HSET', charges, charge, 'P:' .. string.format('%d', actual))
redis.call('HINCRBY', KEYS[8], item.task .. ':held', string.format('%d', -reserved))
redis.call('HINCRBY', KEYS[8], item.task .. ':spent', string.format('%d', actual))
item.state = 'done'
item.token = nil
redis.call('HSET', items, id, cjson.encode(item))
redis.call('ZREM', lease, id)
redis.call('HINCRBY', meta, 'done', 1)
local open = redis.call('HINCRBY', meta, 'open', -1)
redis.call('XADD', KEYS[7], '*', 'item', id, 'result', ARGV[5])
return {'ok', open}
