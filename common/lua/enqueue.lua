-- enqueue: make (candidate, tier) ready, once. Idempotent on the item id "<candidate>:<tier>".
-- KEYS: 1 meta, 2 items, 3 queue of the tier
-- ARGV: 1 item id, 2 candidate id, 3 task id, 4 tier, 5 cost_ms, 6 priority (lower goes first)
-- Returns 1 when enqueued, 0 when the item already existed (in any state).
-- Errors: KB_STATE when the campaign is not submitting or running.
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'submitting' and state ~= 'running' then
  return redis.error_reply('KB_STATE campaign is ' .. tostring(state or 'missing'))
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return 0
end
local item = {cand = ARGV[2], task = ARGV[3], tier = tonumber(ARGV[4]),
              cost = tonumber(ARGV[5]), priority = tonumber(ARGV[6]),
              attempt = 0, claims = 0, state = 'queued'}
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(item))
redis.call('ZADD', KEYS[3], item.priority, ARGV[1])
redis.call('HINCRBY', KEYS[1], 'open', 1)
return 1
