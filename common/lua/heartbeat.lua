-- heartbeat: extend the caller's own leases and report the campaign state.
-- KEYS: 1 meta, 2 lease, 3 items, 4 runners
-- ARGV: 1 runner name, then pairs of (item id, lease token)
-- Returns {extended count, campaign state}. Leases whose token does not match (the item was
-- reaped and maybe claimed by another runner) are left alone.
-- Errors: KB_GONE when the campaign is not in this redis (kb_gone): nothing written.
local now = kb_now_ms()
local m = redis.call('HMGET', KEYS[1], 'lease_ms', 'state')
local gone = kb_gone(KEYS[1], m[2])
if gone then
  return gone
end
local lease_ms = tonumber(m[1] or '0')
redis.call('HSET', KEYS[4], ARGV[1], now)
local n = 0
for i = 2, #ARGV - 1, 2 do
  local raw = redis.call('HGET', KEYS[3], ARGV[i])
  if raw then
    local item = kb_item_check(KEYS[3], ARGV[i], raw) -- one that does not decode: not held
    if item and item.state == 'leased' and item.token == ARGV[i + 1] then
      redis.call('ZADD', KEYS[2], 'XX', now + lease_ms, ARGV[i])
      n = n + 1
    end
  end
end
return {n, tostring(m[2] or 'missing')}
