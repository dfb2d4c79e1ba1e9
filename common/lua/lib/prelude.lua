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

-- kb_int and tonumber through a cache of this call: each conversion is a sprintf or strtod of
-- thousands of instructions, and a call repeats the same small numbers (tiers, attempts,
-- claims, costs, deadlines) for each of its items. For whole numbers (kb_int_c) and strings
-- (kb_num_c) only.
local kb_istr, kb_snum = {}, {}
local function kb_int_c(n)
  local s = kb_istr[n]
  if not s then
    s = string.format('%d', n)
    kb_istr[n] = s
  end
  return s
end
local function kb_num_c(s)
  local v = kb_snum[s]
  if v == nil then
    v = tonumber(s)
    kb_snum[s] = v
  end
  return v
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
-- right after this move. String fields go through cjson so any charge id or name stays valid
-- JSON (the hot scripts use kb_ledger below instead, whose strings are JSON-safe already).
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

-- A charge record in a charges hash: "H:<held>", "P:<posted>" or "V:<voided>". Returns the
-- kind letter and the amount.
local function kb_charge_parse(ch)
  local kind, amount = string.match(ch, '^(%a):(%d+)')
  return kind, tonumber(amount)
end

-- ---- Items ---------------------------------------------------------------------------------
-- kb:{cid}:items holds each item as one JSON object whose fields come in a fixed order, those
-- that never change first:
--   {"cand":..,"task":..,"tier":..,"cost":..,"priority":..,"state":..,"attempt":..,"claims":..
--    [,"token":..,"runner":..] [,"next":..]}
-- (token and runner while leased; next, once done by complete_claim, names the item the same
-- call leased). The scripts read an item with cjson.decode (faster than any Lua pattern) and
-- write it back as the unchanged head, as stored, plus a formatted tail: no cjson.encode of the
-- whole object. An item in another order (an older version's) gets its head rebuilt.
local function kb_item_head(cand, task, tier, cost, priority)
  -- the shortest of 15 or 17 digits that reads back as the same number
  local p = string.format('%.15g', priority)
  if tonumber(p) ~= priority then
    p = string.format('%.17g', priority)
  end
  return string.format('{"cand":%s,"task":%s,"tier":%d,"cost":%d,"priority":%s,',
                       cjson.encode(cand), cjson.encode(task), tier, cost, p)
end

-- Returns the item's fields (cjson.decode, or `t` when the caller decoded `raw` already) and
-- `head`, the part before "state" to write back.
local function kb_item_decode(raw, t)
  t = t or cjson.decode(raw)
  local p = string.sub(raw, 1, 8) == '{"cand":' and string.find(raw, '"task":', 9, true)
  p = p and string.find(raw, '"tier":', p, true)
  p = p and string.find(raw, '"cost":', p, true)
  p = p and string.find(raw, '"priority":', p, true)
  p = p and string.find(raw, ',"state":"', p, true)
  t.head = p and string.sub(raw, 1, p) or kb_item_head(t.cand, t.task, t.tier, t.cost, t.priority)
  return t
end

-- An item as read from hash `items` under field `id` (`raw`: HGET's reply, false when there is
-- none), checked before any script trusts it: a JSON object whose "cand" is 64 hex digits,
-- "task" and "state" strings, "tier", "cost", "priority", "attempt" and "claims" numbers.
-- Returns the item as kb_item_decode does, or nil and the reason, naming the key and field
-- ('kb:{c}:items field "x": "cand" is not 64 hex digits'), for the dead-letter hash: bad state
-- in Redis is set aside, never an error that stops a process (docs/architecture.md).
-- The fast path: a Lua pattern over an item as the scripts write it (fields in the fixed order,
-- strings without escapes or control characters, tier, cost, attempt and claims whole
-- numbers), with no tail or a lease's (token, runner); nil for any other (the caller then
-- decodes it with cjson). For an item it accepts it returns what cjson.decode and
-- kb_item_decode give, at a fraction of their cost (no substring of the tail, the small
-- numbers through kb_num_c).
local KB_ITEM_PAT = '^{"cand":"([0-9a-f]+)","task":"([^"\\%c]+)","tier":(%d+),"cost":(%d+),' ..
                    '"priority":(-?%d[%d.eE+-]*),()"state":"([^"\\%c]*)","attempt":(%d+),' ..
                    '"claims":(%d+)()'
local KB_LEASE_TAIL = '^,"token":"([^"\\%c]*)","runner":"([^"\\%c]*)"}$'
local function kb_item_fast(raw)
  local cand, task, tier, cost, pri, at, state, attempt, claims, e = string.match(raw, KB_ITEM_PAT)
  local priority = cand and #cand == 64 and tonumber(pri)
  if not priority then
    return nil
  end
  local t = {cand = cand, task = task, tier = kb_num_c(tier), cost = kb_num_c(cost),
             priority = priority, state = state, attempt = kb_num_c(attempt),
             claims = kb_num_c(claims), head = string.sub(raw, 1, at - 1)}
  if e ~= #raw or string.byte(raw, e) ~= 125 then -- not just "}": a lease's tail, or none
    local token, runner = string.match(raw, KB_LEASE_TAIL, e)
    if not token then
      return nil
    end
    t.token, t.runner = token, runner
  end
  return t
end

-- A leased item read for the completion of its lease (complete_claim): the fields that needs
-- (task, state, attempt, claims, token, runner, head) from an item in the form the claim
-- wrote it ("cand" 64 characters, the task without escapes or control characters, then
-- "tier", "cost" and "priority", "leased" with the lease's token and runner), with plain
-- searches and one pattern over the part after "attempt"; nil for any other (the caller then
-- checks it with kb_item_check). The head, up to "state", is not looked at again past the
-- task: the claim that leased the item checked it (the candidate id's hex digits, the
-- numbers) and no script changes an item's head; the first ',"state":"' after the task is
-- the item's own (the task holds no quote, and the numbers between none). Returns what
-- kb_item_fast does for such an item less cand, tier, cost and priority (a completion uses
-- none of them), at about half its cost.
local KB_LEASED_TAIL = '^leased","attempt":(%d+),"claims":(%d+),"token":"([^"\\%c]*)",' ..
                       '"runner":"([^"\\%c]*)"}$'
local function kb_item_leased(raw)
  -- '{"cand":"' (1-9), 64 characters (10-73), '","task":"' (74-83), the task from 84
  if string.sub(raw, 1, 9) ~= '{"cand":"' or string.sub(raw, 74, 83) ~= '","task":"' then
    return nil
  end
  local e = string.find(raw, '","tier":', 84, true)
  local task = e and e > 84 and string.sub(raw, 84, e - 1)
  if not task or string.find(task, '[\\"%c]') then
    return nil
  end
  local at = string.find(raw, ',"state":"', e + 9, true)
  if not at then
    return nil
  end
  local attempt, claims, token, runner = string.match(raw, KB_LEASED_TAIL, at + 10)
  if not attempt then
    return nil
  end
  return {task = task, state = 'leased',
          attempt = kb_num_c(attempt), claims = kb_num_c(claims), token = token,
          runner = runner, head = string.sub(raw, 1, at)}
end

local KB_ITEM_NUMBERS = {'tier', 'cost', 'priority', 'attempt', 'claims'}
local function kb_item_check(items, id, raw)
  local fast = raw and kb_item_fast(raw)
  if fast then
    return fast
  end
  local where = items .. ' field "' .. id .. '"'
  if not raw then
    return nil, where .. ': no such item (a queue or lease entry without its item)'
  end
  local ok, t = pcall(cjson.decode, raw)
  if not ok or type(t) ~= 'table' then
    return nil, where .. ': not a JSON object'
  end
  if type(t.cand) ~= 'string' or #t.cand ~= 64 or string.find(t.cand, '[^0-9a-f]') then
    return nil, where .. ': "cand" is not 64 hex digits'
  end
  if type(t.task) ~= 'string' or t.task == '' then
    return nil, where .. ': "task" is not a non-empty string'
  end
  if type(t.state) ~= 'string' then
    return nil, where .. ': "state" is not a string'
  end
  for _, k in ipairs(KB_ITEM_NUMBERS) do
    if type(t[k]) ~= 'number' then
      return nil, where .. ': "' .. k .. '" is not a number'
    end
  end
  if t.tier < 0 or t.tier ~= math.floor(t.tier) then
    return nil, where .. ': "tier" is not a tier index'
  end
  return kb_item_decode(raw, t)
end

-- Whether item `id`, stored as `raw` (false: none), is counted in meta "open": enqueue alone
-- creates items, each under the id "<64 hex>:<tier>" and counted once, and an item whose value
-- still says "done" or "dead" was counted out already. A ghost (no item) or an id of another
-- form cannot say it was ever counted, and counts as not.
local function kb_item_counted(id, raw)
  -- the id's form, checked without building a 64-class pattern in every call of every script
  return raw and #id > 65 and not string.find(string.sub(id, 1, 64), '[^0-9a-f]') and
         string.match(id, '^:%d+$', 65) ~= nil and
         not string.find(raw, '"state":"done"', 1, true) and
         not string.find(raw, '"state":"dead"', 1, true)
end

-- Sets entry `id` of zset `from` aside: out of it, into the dead-letter hash `dead` with `why`.
-- `raw` is its item as stored (false: none). Returns true when the item is counted in meta
-- "open" (kb_item_counted) and was not in the dead-letter hash yet: the caller then moves it
-- from meta "open" to "dead", once (docs/architecture.md, "Bad state in Redis").
local function kb_dead_letter(from, dead, id, raw, why)
  redis.call('ZREM', from, id)
  local new = redis.call('HSET', dead, id, 'bad state: ' .. why .. ' (entry of ' .. from .. ')')
  return new == 1 and kb_item_counted(id, raw)
end

-- The item's priority as stored (a string, full precision), for requeueing it.
local function kb_item_priority(t)
  return string.match(t.head, '"priority":([^,]*),$')
end

-- The item's JSON in `state`; `tail` (JSON-safe, starting with a comma, or '') follows "claims".
local function kb_item_encode(t, state, tail)
  return t.head .. '"state":"' .. state .. '","attempt":' .. kb_int_c(t.attempt) ..
         ',"claims":' .. kb_int_c(t.claims) .. tail .. '}'
end
