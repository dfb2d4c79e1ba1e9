#!lua flags=no-writes
-- leases: the leases a dead runner holds, read-only: those past their deadline (the reaper has
-- not requeued them yet) and those whose runner has sent no heartbeat for ARGV[2] ms (a runner
-- that stopped: killed, its node lost), by deadline.
-- KEYS: 1 lease, 2 items, 3 runners, 4 meta
-- ARGV: 1 most leases to return, 2 silence in ms after which a runner counts as stopped
-- Returns {now, stale, last, then per lease up to ARGV[1]: item, runner, deadline_ms, last
-- heartbeat ms ('' when the runner never beat)}; stale counts them all, last is the latest of
-- their deadlines (0 when none).
local now = kb_now_ms()
local max, silent = tonumber(ARGV[1]), tonumber(ARGV[2])
local lease_ms = tonumber(redis.call('HGET', KEYS[4], 'lease_ms') or '0')
local all = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local out = {now, 0, 0}
local stale, last = 0, 0
for i = 1, #all - 1, 2 do
  local id, deadline = all[i], tonumber(all[i + 1])
  local it = kb_item_check(KEYS[2], id, redis.call('HGET', KEYS[2], id))
  local runner = it and kb_item_runner(it) or ''
  local seen = runner ~= '' and redis.call('HGET', KEYS[3], runner) or false
  -- a runner with no heartbeat yet counts once its lease was taken (or last extended, the
  -- deadline less lease_ms) that long ago: a new runner may claim before its first beat
  local quiet = seen and now - tonumber(seen) or now - (deadline - lease_ms)
  if deadline <= now or quiet > silent then
    stale = stale + 1
    last = math.max(last, deadline)
    if stale <= max then
      out[#out + 1] = id
      out[#out + 1] = runner
      out[#out + 1] = kb_int(deadline)
      out[#out + 1] = seen or ''
    end
  end
end
out[2] = stale
out[3] = kb_int(last)
return out
