-- claim: lease the best ready item across the given queues and reserve its cost, all or nothing.
-- KEYS: 1 meta, 2 ledger, 3 ledger:log, 4 lease, 5 items, 6 charges, 7.. queues in preference
--       order (highest tier first, so promising candidates finish before new ones start)
-- ARGV: 1 runner name, 2 lease token (random, the runner's proof of ownership)
-- Returns {"ok", item, candidate, task, tier, attempt, charge_id, cost_ms, deadline_ms},
--         {"empty"} when no queue has an item, {"budget", available} when items are ready but the
--         budget cannot cover any of them, or {"state", state} when the campaign is not running.
local meta, ledger, log, lease, items, charges = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5],
                                                KEYS[6]
local state = redis.call('HGET', meta, 'state')
if state ~= 'running' then
  return {'state', tostring(state or 'missing')}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease_ms = tonumber(redis.call('HGET', meta, 'lease_ms'))
local available = tonumber(redis.call('HGET', ledger, 'gpu_ms:available'))
local blocked = false
for i = 7, #KEYS do
  local head = redis.call('ZRANGE', KEYS[i], 0, 0)
  if #head > 0 then
    local id = head[1]
    local item = cjson.decode(redis.call('HGET', items, id))
    if item.cost <= available then
      redis.call('ZREM', KEYS[i], id)
      item.attempt = item.attempt + 1
      item.claims = item.claims + 1
      item.state = 'leased'
      item.token = ARGV[2]
      item.runner = ARGV[1]
      local deadline = now + lease_ms
      local charge = id .. '#' .. item.claims
      local held = tonumber(redis.call('HINCRBY', ledger, 'gpu_ms:held', item.cost))
      available = tonumber(redis.call('HINCRBY', ledger, 'gpu_ms:available',
                                          string.format('%d', -item.cost)))
      redis.call('HSET', charges, charge, 'H:' .. item.cost)
      redis.call('HSET', items, id, cjson.encode(item))
      redis.call('ZADD', lease, deadline, id)
      redis.call('XADD', log, '*', 'entry', cjson.encode({
        schema = 'kernelbrain.ledger/1', ts_ms = now, op = 'reserve', currency = 'gpu_ms',
        amount = item.cost, charge_id = charge, who = ARGV[1], available = available,
        held = held, spent = tonumber(redis.call('HGET', ledger, 'gpu_ms:spent')),
        total = tonumber(redis.call('HGET', ledger, 'gpu_ms:total'))}))
      return {'ok', id, item.cand, item.task, tostring(item.tier), tostring(item.attempt), charge,
              tostring(item.cost), tostring(deadline)}
    end
    blocked = true
  end
end
if blocked then
  return {'budget', tostring(available)}
end
return {'empty'}
