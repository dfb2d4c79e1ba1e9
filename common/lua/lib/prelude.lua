-- prelude: helpers every script gets; embed_lua.cmake puts this file at the top of each script
-- in common/lua/ (after a "#!lua" line) when embedding it. Redis has no shared script code, and
-- each script must stay one self-contained EVAL body.

-- Redis's own clock in milliseconds (never a node's).
local function kb_now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function kb_int(n)
  return string.format('%d', n)
end

-- One currency's balances in the ledger hash, read with one call.
local function kb_balances(ledger, cur)
  local l = redis.call('HMGET', ledger, cur .. ':available', cur .. ':held', cur .. ':spent',
                       cur .. ':total')
  return {available = tonumber(l[1] or '0'), held = tonumber(l[2] or '0'),
          spent = tonumber(l[3] or '0'), total = tonumber(l[4] or '0')}
end

-- Applies a move to balances `b` (available, held and spent deltas), writes them back with one
-- call, and appends the audit entry (schemas/ledger-entry.schema.json) showing the balances
-- right after this move. String fields go through cjson so any runner name stays valid JSON.
local KB_ENTRY = '{"schema":"kernelbrain.ledger/1","ts_ms":%d,"op":"%s","currency":"%s",' ..
                 '"amount":%d,"charge_id":%s,"who":%s,"available":%d,"held":%d,"spent":%d,' ..
                 '"total":%d}'
local function kb_move(ledger, log, cur, b, op, amount, d_avail, d_held, d_spent, charge, who,
                       now)
  b.available = b.available + d_avail
  b.held = b.held + d_held
  b.spent = b.spent + d_spent
  redis.call('HSET', ledger, cur .. ':available', kb_int(b.available), cur .. ':held',
             kb_int(b.held), cur .. ':spent', kb_int(b.spent))
  redis.call('XADD', log, '*', 'entry', string.format(KB_ENTRY, now, op, cur, amount,
             cjson.encode(charge), cjson.encode(who), b.available, b.held, b.spent, b.total))
end
