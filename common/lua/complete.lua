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
local now = kb_now_ms()
-- Two moves, each with its own audit entry: post takes the actual cost from held to spent;
-- void returns the rest of the reservation to available.
local bal = kb_balances(ledger, 'gpu_ms')
kb_move(ledger, log, 'gpu_ms', bal, 'post', actual, 0, -actual, actual, charge, ARGV[6], now)
if reserved > actual then
  local rest = reserved - actual
  kb_move(ledger, log, 'gpu_ms', bal, 'void', rest, rest, -rest, 0, charge, ARGV[6], now)
end
redis.call('HSET', charges, charge, 'P:' .. kb_int(actual))
redis.call('HINCRBY', KEYS[8], item.task .. ':held', kb_int(-reserved))
redis.call('HINCRBY', KEYS[8], item.task .. ':spent', kb_int(actual))
item.state = 'done'
item.token = nil
redis.call('HSET', items, id, cjson.encode(item))
redis.call('ZREM', lease, id)
redis.call('HINCRBY', meta, 'done', 1)
local open = redis.call('HINCRBY', meta, 'open', -1)
redis.call('XADD', KEYS[7], '*', 'item', id, 'result', ARGV[5])
return {'ok', open}
