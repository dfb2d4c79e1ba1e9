-- stray: the scheduler drops results-stream entries that settled no lease it knows of (an XADD
-- by someone else, a replayed entry, an unknown item, a mismatched runner, attempt or charge):
-- each is acknowledged so it does not come back, its reason kept, and counted once.
-- KEYS: 1 meta, 2 results, 3 stray (hash: entry id -> reason)
-- ARGV: 1 group, then pairs: entry id, reason
-- Returns the number of entries this call acknowledged (and counted): a retry after a lost
-- reply finds them acknowledged and counts nothing.
local n = 0
for i = 2, #ARGV - 1, 2 do
  if redis.call('XACK', KEYS[2], ARGV[1], ARGV[i]) == 1 then
    redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
    n = n + 1
  end
end
if n > 0 then
  redis.call('HINCRBY', KEYS[1], 'stray', n)
end
return n
