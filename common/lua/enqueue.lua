-- enqueue: make (candidate, tier) ready, once. Idempotent on the item id "<candidate>:<tier>".
-- KEYS: 1 meta, 2 items, 3 queue of the tier
-- ARGV: 1 item id, 2 candidate id, 3 task id, 4 tier, 5 cost_ms, 6 priority (lower goes first)
-- Returns 1 when enqueued, 0 when the item already existed (in any state).
-- Errors: KB_GONE when the campaign is not in this redis (kb_gone), KB_STATE when it is not
-- submitting or running or stores its items in another layout (kb_layout_check), KB_INVAL for
-- a tier or cost that is not a non-negative integer, a priority that is not a finite number, a
-- candidate id that is not 64 hex digits, an item id that is not "<candidate>:<tier>" or a task
-- id that is empty or holds "|" or a control character (the item line's separator,
-- prelude.lua).
local m = redis.call('HMGET', KEYS[1], 'state', 'layout')
local state = m[1]
local bad_layout = kb_layout_check(KEYS[1], state, m[2])
if bad_layout then
  return bad_layout
end
if state ~= 'submitting' and state ~= 'running' then
  return redis.error_reply('KB_STATE campaign is ' .. tostring(state))
end
local tier, cost, priority = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
if not tier or tier < 0 or tier ~= math.floor(tier) or not cost or cost < 0 or
   cost ~= math.floor(cost) then
  return redis.error_reply('KB_INVAL tier and cost must be non-negative integers')
end
if not priority or priority ~= priority or priority == math.huge or priority == -math.huge then
  return redis.error_reply('KB_INVAL priority must be a finite number')
end
if #ARGV[2] ~= 64 or string.find(ARGV[2], '[^0-9a-f]') or ARGV[1] ~= ARGV[2] .. ':' .. kb_int(tier) then
  return redis.error_reply('KB_INVAL the item id must be "<candidate, 64 hex digits>:<tier>"')
end
if ARGV[3] == '' or string.find(ARGV[3], '[|%c]') then
  return redis.error_reply('KB_INVAL task id "' .. ARGV[3] .. '" is empty or holds "|" or a control character')
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return 0
end
-- the priority as given when it reads back as the same number, else its shortest exact form
local p = ARGV[6]
if string.find(p, '[|%s]') then
  p = string.format('%.17g', priority)
end
local item = {attempt = 0, claims = 0, cost_s = kb_int(cost), priority_s = p, task = ARGV[3]}
redis.call('HSET', KEYS[2], ARGV[1], kb_item_encode(item, 'queued', '', '', '', '', ''))
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[1])
redis.call('HINCRBY', KEYS[1], 'open', 1)
return 1
