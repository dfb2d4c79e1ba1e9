-- sched_lock: the campaign's one scheduler. A second kb-scheduler of a campaign would read
-- results from the same consumer group (each entry goes to one reader only) and split them
-- over two sets of files, or leave the entries it read pending when its task files' lock then
-- stops it; so each scheduler holds this lock, renewed while it runs, before it reads anything.
-- KEYS: 1 the lock (string kb:{cid}:scheduler), 2 meta
-- ARGV: 1 op ("take" | "renew" | "release"), 2 this scheduler's value ("<token>
--       host=H/pidns:[N] pid=P since=MS"), 3 ttl_ms (take, renew), 4 (take) the value of a
--       holder the caller found dead (its process gone on the caller's host and PID
--       namespace), or ""
-- Returns: take: {"ok"}, or {"held", value, pttl ms} (nothing written); renew: 1 held (again,
-- when it had expired and nobody took it), 0 lost (another scheduler holds it); release: 1
-- released, 0 not ours.
-- Errors: KB_GONE when the campaign is not in this redis (kb_gone), KB_INVAL (bad op or ttl).
local lock, op, me = KEYS[1], ARGV[1], ARGV[2]
local gone = kb_gone(KEYS[2], redis.call('HGET', KEYS[2], 'state'))
if gone then
  return gone
end
local cur = redis.call('GET', lock)
if op == 'release' then
  if cur == me then
    redis.call('DEL', lock)
    return 1
  end
  return 0
end
local ttl = tonumber(ARGV[3])
if not ttl or ttl < 1 or ttl ~= math.floor(ttl) then
  return redis.error_reply('KB_INVAL ttl_ms must be a positive integer')
end
if op == 'take' then
  if cur and cur ~= me and cur ~= ARGV[4] then
    return {'held', cur, redis.call('PTTL', lock)}
  end
  redis.call('SET', lock, me, 'PX', ttl)
  return {'ok'}
elseif op == 'renew' then
  if cur and cur ~= me then
    return 0
  end
  redis.call('SET', lock, me, 'PX', ttl)
  return 1
end
return redis.error_reply('KB_INVAL unknown op "' .. tostring(op) .. '"')
