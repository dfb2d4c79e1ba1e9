-- enqueue: make (candidate, tier) ready, once. Idempotent on the item id "<candidate>:<tier>".
-- KEYS: 1 meta, 2 items, 3 queue of the tier
-- ARGV: 1 item id, 2 candidate id, 3 task id, 4 tier, 5 cost_ms, 6 priority (lower goes first)
-- Returns 1 when enqueued, 0 when the item already existed (in any state).
-- Errors: KB_STATE when the campaign is not submitting or running, KB_INVAL for a tier or cost
-- that is not a non-negative integer or a priority that is not a finite number.
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'submitting' and state ~= 'running' then
  return redis.error_reply('KB_STATE campaign is ' .. tostring(state or 'missing'))
end
local tier, cost, priority = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
if not tier or tier < 0 or tier ~= math.floor(tier) or not cost or cost < 0 or
   cost ~= math.floor(cost) then
  return redis.error_reply('KB_INVAL tier and cost must be non-negative integers')
end
if not priority or priority ~= priority or priority == math.huge or priority == -math.huge then
  return redis.error_reply('KB_INVAL priority must be a finite number')
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return 0
end
local item = {head = kb_item_head(ARGV[2], ARGV[3], tier, cost, priority), attempt = 0,
              claims = 0}
redis.call('HSET', KEYS[2], ARGV[1], kb_item_encode(item, 'queued', ''))
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[1])
redis.call('HINCRBY', KEYS[1], 'open', 1)
return 1
