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
local held = tonumber(redis.call('HINCRBY', ledger, 'gpu_ms:held', string.format('%d', -reserved)))
local spent = tonumber(redis.call('HINCRBY', ledger, 'gpu_ms:spent', actual))
local available = tonumber(redis.call('HINCRBY', ledger, 'gpu_ms:available', reserved - actual))
local total = tonumber(redis.call('HGET', ledger, 'gpu_ms:total'))
redis.call('HSET', charges, charge, 'P:' .. actual)
redis.call('HINCRBY', KEYS[8], item.task .. ':held', string.format('%d', -reserved))
redis.call('HINCRBY', KEYS[8], item.task .. ':spent', string.format('%d', actual))
redis.call('XADD', log, '*', 'entry', cjson.encode({
  schema = 'kernelbrain.ledger/1', ts_ms = now, op = 'post', currency = 'gpu_ms',
  amount = actual, charge_id = charge, who = ARGV[6], available = available, held = held,
  spent = spent, total = total}))
if reserved > actual then
  redis.call('XADD', log, '*', 'entry', cjson.encode({
    schema = 'kernelbrain.ledger/1', ts_ms = now, op = 'void', currency = 'gpu_ms',
    amount = reserved - actual, charge_id = charge, who = ARGV[6], available = available,
    held = held, spent = spent, total = total}))
end
item.state = 'done'
item.token = nil
redis.call('HSET', items, id, cjson.encode(item))
redis.call('ZREM', lease, id)
redis.call('HINCRBY', meta, 'done', 1)
local open = redis.call('HINCRBY', meta, 'open', -1)
redis.call('XADD', KEYS[7], '*', 'item', id, 'result', ARGV[5])
return {'ok', open}
