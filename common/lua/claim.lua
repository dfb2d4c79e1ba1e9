-- claim: lease the best ready item across the given queues and reserve its cost, all or nothing.
-- KEYS: 1 meta, 2 ledger, 3 ledger:log, 4 lease, 5 items, 6 charges, 7 taskbudget,
--       8.. queues in preference order (highest tier first, so promising candidates finish
--       before new ones start)
-- ARGV: 1 runner name, 2 lease token (random, the runner's proof of ownership)
-- An item is affordable when its cost fits the campaign's available GPU budget and, when its
-- task has a cap ("<task>:cap" in taskbudget), the task's held + spent + cost stays within it.
-- Each queue is scanned from its head over at most 16 items for an affordable one.
-- Returns {"ok", item, candidate, task, tier, attempt, charge_id, cost_ms, deadline_ms},
--         {"empty"} when no queue has an item, {"budget", available} when items are ready but
--         none is affordable, or {"state", state} when the campaign is not running.
local meta, ledger, log, lease, items, charges, taskbudget =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local SCAN = 16
local m = redis.call('HMGET', meta, 'state', 'lease_ms')
if m[1] ~= 'running' then
  return {'state', tostring(m[1] or 'missing')}
end
local bal = kb_balances(ledger, 'gpu_ms')

local function affordable(item)
  if item.cost > bal.available then
    return false
  end
  local b = redis.call('HMGET', taskbudget, item.task .. ':cap', item.task .. ':held',
                       item.task .. ':spent')
  if not b[1] then
    return true
  end
  return tonumber(b[2] or '0') + tonumber(b[3] or '0') + item.cost <= tonumber(b[1])
end

local blocked = false
for i = 8, #KEYS do
  local ids = redis.call('ZRANGE', KEYS[i], 0, SCAN - 1)
  for _, id in ipairs(ids) do
    local item = cjson.decode(redis.call('HGET', items, id))
    if affordable(item) then
      local now = kb_now_ms()
      local deadline = now + tonumber(m[2])
      redis.call('ZREM', KEYS[i], id)
      item.attempt = item.attempt + 1
      item.claims = item.claims + 1
      item.state = 'leased'
      item.token = ARGV[2]
      item.runner = ARGV[1]
      local charge = id .. '#' .. item.claims
      local cost = kb_int(item.cost)
      kb_move(ledger, log, 'gpu_ms', bal, 'reserve', item.cost, -item.cost, item.cost, 0, charge,
              ARGV[1], now)
      redis.call('HINCRBY', taskbudget, item.task .. ':held', cost)
      redis.call('HSET', charges, charge, 'H:' .. cost)
      redis.call('HSET', items, id, cjson.encode(item))
      redis.call('ZADD', lease, deadline, id)
      return {'ok', id, item.cand, item.task, tostring(item.tier), tostring(item.attempt), charge,
              cost, tostring(deadline)}
    end
    blocked = true
  end
end
if blocked then
  return {'budget', kb_int(bal.available)}
end
return {'empty'}
