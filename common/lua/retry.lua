-- retry: the runner, not the candidate, failed an evaluation (infra_error: the task could not
-- be prepared, the sandbox died while preparing, device memory was taken by another process),
-- so the item goes back to its queue for another attempt while it has attempts left (meta
-- max_attempts, as the reaper counts them: the claim that led here was one). The device time
-- the failed attempt used is real and is charged: the charge is settled as complete_claim
-- settles it (posted up to the reservation, the rest voided, an overrun taken from available),
-- the lease ends, and the item is queued again with its priority; meta counts the retry
-- ("infra_retries") and keeps the latest reason ("infra_last": item and reason), which
-- `kb-submit status` shows. No result is recorded for the failed attempt: the candidate's
-- verdict comes from an attempt that ran, or from the last one (the caller completes it).
-- KEYS: 1 meta, 2 ledger, 3 ledger:log, 4 lease, 5 items, 6 charges, 7 queue of the item's tier,
--       8 taskbudget
-- ARGV: 1 item id, 2 lease token, 3 charge id, 4 actual cost_ms, 5 runner, 6 reason
-- Returns "requeued" (also for a resent call that finds this charge posted already: nothing
-- changes), "final" (the item has used max_attempts: nothing is written, the caller completes
-- it with its infra_error result) or "lost" (the caller no longer holds the lease: the reaper
-- requeued or set it aside; nothing changes).
local meta, ledger, log, lease, items, charges = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5],
                                                KEYS[6]
local id, token, charge, runner = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
local ch = redis.call('HGET', charges, charge)
if not ch then
  return 'lost'
end
local kind, reserved = kb_charge_parse(ch)
if kind == 'P' then
  return 'requeued'
end
local raw = redis.call('HGET', items, id)
local item = raw and kb_item_check(items, id, raw) -- one that does not decode: the reaper's
if kind ~= 'H' or not item or item.state ~= 'leased' or item.token ~= token then
  return 'lost'
end
local max_attempts = tonumber(redis.call('HGET', meta, 'max_attempts') or '') or 1
if item.attempt >= max_attempts then
  return 'final'
end
local actual = math.max(math.floor(tonumber(ARGV[4]) or 0), 0)
local posted = math.min(actual, reserved)
local over, rest = actual - posted, reserved - posted
local now = kb_now_ms()
local bal = kb_balances(ledger, 'gpu_ms')
if posted > 0 then
  kb_move(ledger, log, 'gpu_ms', bal, 'post', posted, 0, -posted, posted, charge, runner, now)
end
if over > 0 then
  kb_move(ledger, log, 'gpu_ms', bal, 'overrun', over, -over, 0, over, charge, runner, now)
  redis.call('HINCRBY', meta, 'gpu_ms:overruns', 1)
  redis.call('HINCRBY', meta, 'gpu_ms:overrun', kb_int(over))
end
if rest > 0 then
  kb_move(ledger, log, 'gpu_ms', bal, 'void', rest, rest, -rest, 0, charge, runner, now)
end
if reserved > 0 then
  redis.call('HINCRBY', KEYS[8], item.task .. ':held', kb_int(-reserved))
end
if actual > 0 then
  redis.call('HINCRBY', KEYS[8], item.task .. ':spent', kb_int(actual))
end
redis.call('HSET', charges, charge, 'P:' .. kb_int(actual) .. (over > 0 and ':O:' .. kb_int(over) or ''))
redis.call('ZREM', lease, id)
redis.call('HSET', items, id, kb_item_encode(item, 'queued', '', '', '', '', ''))
redis.call('ZADD', KEYS[7], item.priority_s, id)
redis.call('HINCRBY', meta, 'infra_retries', 1)
redis.call('HSET', meta, 'infra_last', id .. ': ' .. string.sub(ARGV[6], 1, 300))
return 'requeued'
