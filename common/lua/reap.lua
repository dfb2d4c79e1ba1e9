-- reap: leases past their deadline (by Redis's clock) go back to their queue with the
-- reservation refunded; an item that has used max_attempts goes to the dead-letter hash instead,
-- and a result with status "infra_error" is appended so the scheduler records it (with the
-- fields "charge", "runner", "attempt" of the lease, whose entry id the dead item records as
-- "result", as complete_claim does for a done one).
-- KEYS: 1 meta, 2 ledger, 3 ledger:log, 4 lease, 5 items, 6 charges, 7 dead, 8 results,
--       9 taskbudget, 10.. queues by tier index (tier 0 first)
-- ARGV: 1 campaign id, 2 most items to reap in this call, 3 who
-- Returns {requeued, dead, bad}: bad counts the lease entries whose item is missing or does not
-- decode (kb_item_check), moved to the dead-letter hash with the reason (and, when the item was
-- counted (kb_dead_letter), from meta "open" to "dead" with its held reservation voided).
local meta, ledger, log, lease, items, charges = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5],
                                                KEYS[6]
local now = kb_now_ms()
local expired = redis.call('ZRANGEBYSCORE', lease, '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
if #expired == 0 then
  return {0, 0}
end
local mf = redis.call('HMGET', meta, 'max_attempts', 'tiers', 'backend', 'layout', 'state')
local bad_layout = kb_layout_check(meta, mf[5], mf[4])
if bad_layout then
  return bad_layout
end
local max_attempts = tonumber(mf[1])
local tiers = cjson.decode(mf[2])
local backend = mf[3]
local requeued, dead = 0, 0
local function reap(id, item)
  local charge = id .. '#' .. item.claims
  local ch = redis.call('HGET', charges, charge)
  local kind, reserved
  if ch then
    kind, reserved = kb_charge_parse(ch)
  end
  if kind == 'H' then
    if reserved > 0 then
      kb_move(ledger, log, 'gpu_ms', kb_balances(ledger, 'gpu_ms'), 'void', reserved, reserved,
              -reserved, 0, charge, ARGV[3], now)
      redis.call('HINCRBY', KEYS[9], item.task .. ':held', kb_int(-reserved))
    end
    redis.call('HSET', charges, charge, 'V:' .. kb_int(reserved))
  end
  redis.call('ZREM', lease, id)
  local runner = kb_item_runner(item)
  if item.attempt >= max_attempts then
    local reason = 'lease expired ' .. item.attempt .. ' times (last runner ' .. runner .. ')'
    redis.call('HSET', KEYS[7], id, reason)
    redis.call('HINCRBY', meta, 'open', -1)
    redis.call('HINCRBY', meta, 'dead', 1)
    local tier = tiers[item.tier + 1] or {name = 'tier' .. item.tier}
    local xid = redis.call('XADD', KEYS[8], '*', 'item', id, 'result', cjson.encode({
      schema = 'kernelbrain.result/1', campaign = ARGV[1], task = item.task,
      candidate = item.cand, tier = item.tier, tier_name = tier.name, attempt = item.attempt,
      charge_id = charge, runner = runner, backend = backend, device = '',
      status = 'infra_error', reason = reason, cost_ms = 0, started = now / 1000,
      finished = now / 1000}), 'charge', charge, 'runner', runner, 'attempt',
      kb_int(item.attempt))
    redis.call('HSET', items, id, kb_item_encode(item, 'dead', '', item.runner, charge, xid, ''))
    dead = dead + 1
  else
    redis.call('ZADD', KEYS[10 + item.tier], item.priority_s, id)
    redis.call('HSET', items, id, kb_item_encode(item, 'queued', '', '', '', '', ''))
    requeued = requeued + 1
  end
end
-- Voids the reservation of a counted item `id` whose lease is set aside because its item (`raw`
-- as stored) no longer decodes: its charge id "<id>#<claims>" cannot be read from the item, so
-- the item's charges are scanned for the one still held (bad state only, never the hot path).
-- The task's held share is returned where the stored text still names the task.
local function void_bad(id, raw)
  local task = string.match(raw, '^%l+|[^|]*|[^|]*|[^|]*|[^|]*|([^|]+)|')
  local cursor = '0'
  repeat
    local r = redis.call('HSCAN', charges, cursor, 'MATCH', id .. '#*', 'COUNT', 1000)
    cursor = r[1]
    for i = 1, #r[2], 2 do
      local kind, reserved = kb_charge_parse(r[2][i + 1])
      if kind == 'H' then
        if reserved > 0 then
          kb_move(ledger, log, 'gpu_ms', kb_balances(ledger, 'gpu_ms'), 'void', reserved,
                  reserved, -reserved, 0, r[2][i], ARGV[3], now)
          if task then
            redis.call('HINCRBY', KEYS[9], task .. ':held', kb_int(-reserved))
          end
        end
        redis.call('HSET', charges, r[2][i], 'V:' .. kb_int(reserved))
      end
    end
  until cursor == '0'
end

local bad = 0
for _, id in ipairs(expired) do
  local raw = redis.call('HGET', items, id)
  local item, why = kb_item_check(items, id, raw)
  if item then
    reap(id, item)
  else -- a lease whose item is missing or does not decode: set aside, the others reaped
    if kb_dead_letter(lease, KEYS[7], id, raw, why) then
      redis.call('HINCRBY', meta, 'open', -1)
      redis.call('HINCRBY', meta, 'dead', 1)
      void_bad(id, raw)
    end
    bad = bad + 1
  end
end
return {requeued, dead, bad}
