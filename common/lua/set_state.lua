-- set_state: move a campaign between states.
-- KEYS: 1 meta, 2 events
-- ARGV: 1 allowed current states, comma-separated ("*" = any), 2 new state, 3 reason, 4 who
-- States: submitting -> running -> done | cancelled; "draining" stops claims but lets leases end.
-- Returns the previous state. Errors: KB_NOTFOUND (no campaign), KB_STATE (not allowed now).
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  return redis.error_reply('KB_NOTFOUND no such campaign')
end
if state == ARGV[2] then
  return state
end
if ARGV[1] ~= '*' and not string.find(',' .. ARGV[1] .. ',', ',' .. state .. ',', 1, true) then
  return redis.error_reply('KB_STATE campaign is ' .. state .. ', cannot become ' .. ARGV[2])
end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'state_reason', ARGV[3])
redis.call('XADD', KEYS[2], '*', 'type', 'state', 'from', state, 'to', ARGV[2],
           'reason', ARGV[3], 'who', ARGV[4])
return state
