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
if not raw or not ch then
  return 'noop'
end
local kind, reserved = kb_charge_parse(ch)
local item = kb_item_check(items, id, raw) -- one that does not decode: the reaper sets it aside
if not item or kind ~= 'H' or item.state ~= 'leased' or item.token ~= token then
  return 'noop'
end
if reserved > 0 then
  kb_move(ledger, log, 'gpu_ms', kb_balances(ledger, 'gpu_ms'), 'void', reserved, reserved,
          -reserved, 0, charge, ARGV[4], kb_now_ms())
  redis.call('HINCRBY', KEYS[8], item.task .. ':held', kb_int(-reserved))
end
redis.call('HSET', charges, charge, 'V:' .. kb_int(reserved))
item.attempt = item.attempt - 1
redis.call('HSET', items, id, kb_item_encode(item, 'queued', '', '', '', '', ''))
redis.call('ZREM', lease, id)
redis.call('ZADD', KEYS[7], item.priority_s, id)
return 'released'
