-- task_cap: sets or clears one task's GPU cap (the scheduler's budget split).
-- KEYS: 1 meta, 2 taskbudget
-- ARGV: 1 task id, 2 cap in ms (a non-negative integer), or "" to clear the cap
-- Setting a cap also sets meta "task_caps" to 1 (claims read the caps from then on), in the
-- same step, so no claim can pass the cap unaccounted. Returns 1.
-- Errors: KB_INVAL (a cap that is not a non-negative integer).
local field = ARGV[1] .. ':cap'
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[2], field)
  return 1
end
if not string.match(ARGV[2], '^%d+$') then
  return redis.error_reply('KB_INVAL cap must be a non-negative integer')
end
redis.call('HSET', KEYS[1], 'task_caps', 1)
redis.call('HSET', KEYS[2], field, ARGV[2])
return 1
