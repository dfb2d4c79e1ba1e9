-- release: a runner that leaves (Slurm warning, preemption, Ctrl-C) gives an item back. The
-- reservation is voided and the item requeued; this does not count as an attempt.
-- KEYS: 1 meta, 2 ledger, 3 ledger:log, 4 lease, 5 items, 6 charges, 7 queue of the item's tier,
--       8 taskbudget
-- ARGV: 1 item id, 2 lease token, 3 charge id, 4 runner
-- Returns "released", or "noop" when the caller no longer holds the lease (nothing changes).
local meta, ledger, log, lease, items, charges = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5],
                                                KEYS[6]
local id, token, charge = ARGV[1], ARGV[2], ARGV[3]
local raw = redis.call('HGET', items, id)
local ch = redis.call('HGET', charges, charge)
if not raw or not ch or string.sub(ch, 1, 1) ~= 'H' then
  return 'noop'
end
local item = cjson.decode(raw)
if item.state ~= 'leased' or item.token ~= token then
  return 'noop'
end
local reserved = tonumber(string.sub(ch, 3))
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local held = tonumber(redis.call('HINCRBY', ledger, 'gpu_ms:held', string.format('%d', -reserved)))
local available = tonumber(redis.call('HINCRBY', ledger, 'gpu_ms:available', reserved))
redis.call('HSET', charges, charge, 'V:' .. reserved)
redis.call('HINCRBY', KEYS[8], item.task .. ':held', string.format('%d', -reserved))
redis.call('XADD', log, '*', 'entry', cjson.encode({
  schema = 'kernelbrain.ledger/1', ts_ms = now, op = 'void', currency = 'gpu_ms',
  amount = reserved, charge_id = charge, who = ARGV[4], available = available, held = held,
  spent = tonumber(redis.call('HGET', ledger, 'gpu_ms:spent')),
  total = tonumber(redis.call('HGET', ledger, 'gpu_ms:total'))}))
item.state = 'queued'
item.attempt = item.attempt - 1
item.token = nil
item.runner = nil
redis.call('HSET', items, id, cjson.encode(item))
redis.call('ZREM', lease, id)
redis.call('ZADD', KEYS[7], item.priority, id)
return 'released'
