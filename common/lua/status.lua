#!lua flags=no-writes
-- status: a consistent snapshot of a campaign, read-only.
-- KEYS: 1 meta, 2 ledger, 3 lease, 4 items, 5.. queues by tier index
-- Returns {state, open, done, dead, leased, gpu total, available, held, spent,
--          llm total, available, held, spent, cheapest ready cost or -1, ready per tier...,
--          stray results, gpu_ms overruns, gpu_ms overrun, llm_tokens overruns, llm_tokens
--          overrun, infra retries (retry.lua)}.
local m = redis.call('HMGET', KEYS[1], 'state', 'open', 'done', 'dead', 'stray',
                     'gpu_ms:overruns', 'gpu_ms:overrun', 'llm_tokens:overruns',
                     'llm_tokens:overrun', 'infra_retries')
if not m[1] then
  return redis.error_reply('KB_NOTFOUND no such campaign')
end
local l = redis.call('HMGET', KEYS[2], 'gpu_ms:total', 'gpu_ms:available', 'gpu_ms:held',
                     'gpu_ms:spent', 'llm_tokens:total', 'llm_tokens:available',
                     'llm_tokens:held', 'llm_tokens:spent')
local out = {m[1], tonumber(m[2]), tonumber(m[3]), tonumber(m[4]),
             redis.call('ZCARD', KEYS[3])}
for i = 1, 8 do
  out[#out + 1] = tonumber(l[i] or '0')
end
local cheapest = -1
local ready = {}
for i = 5, #KEYS do
  ready[#ready + 1] = redis.call('ZCARD', KEYS[i])
  local head = redis.call('ZRANGE', KEYS[i], 0, 0)
  -- a head that does not decode is skipped: the next claim moves it to the dead-letter hash
  local it = #head > 0 and kb_item_check(KEYS[4], head[1], redis.call('HGET', KEYS[4], head[1]))
  if it then
    local cost = it.cost
    if cheapest < 0 or cost < cheapest then
      cheapest = cost
    end
  end
end
out[#out + 1] = cheapest
for _, n in ipairs(ready) do
  out[#out + 1] = n
end
for i = 5, 10 do
  out[#out + 1] = tonumber(m[i] or '0')
end
return out
