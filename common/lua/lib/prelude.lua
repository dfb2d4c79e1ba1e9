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

-- A new table with room for `n` array elements, none set: a table filled one element at a time
-- is rebuilt at every power of two (~700 instructions each; docs/benchmarks.md), this one never
-- while it holds at most `n`. `#t` counts the elements set from 1 on, as for any table.
local KB_NONE = {}
local function kb_array(n)
  return {unpack(KB_NONE, 1, n)}
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
-- kind letter and the amount (nil and nil for anything else). Without captures: a pattern with
-- two costs ~3.6k instructions, this ~1.5k (docs/benchmarks.md).
local function kb_charge_parse(ch)
  local b = string.byte(ch, 1)
  if not b or string.byte(ch, 2) ~= 58 or not ((b >= 65 and b <= 90) or (b >= 97 and b <= 122)) then
    return nil, nil
  end
  local digits = string.match(ch, '^%d+', 3)
  if not digits then
    return nil, nil
  end
  return string.char(b), kb_num_c(digits)
end

-- ---- Items (layout 2) -----------------------------------------------------------------------
-- kb:{cid}:items holds each item as one line of 11 fields separated by "|" (layout 2, meta
-- "layout" = "2", written by register; docs/architecture.md, "Items, layout 2"):
--   state|attempt|claims|cost|priority|task|token|runner|charge|result|next
-- state "queued", "leased", "done" or "dead"; attempt, claims and cost whole numbers; priority
-- as enqueue got it; token and runner while leased (runner kept when done or dead: the lease's,
-- JSON-escaped, "|" as \u007c); charge and result (the results entry's id) once done or dead;
-- next, once done by complete_claim, the ids of the items the same call leased, joined with
-- ",". The candidate and the tier are the id's ("<64 hex>:<tier>"). No field holds "|" (enqueue
-- refuses a task with one), so a claim and a completion read an item with one short anchored
-- pattern and write it back as a concatenation: no JSON is parsed or built per item.
-- Layout 1 (a JSON object per item, campaigns registered before 2026-12-07) is refused by the
-- scripts that write items (kb_layout_check).
local KB_LAYOUT = '2'

-- Nil when the campaign whose meta hash is `meta` is there (`state`, its "state" field as read,
-- is set: every campaign has one from register on), else the error reply KB_GONE: its keys are
-- gone from this Redis (one restarted without its data, a FLUSHALL), and a script that went on
-- would re-create fragments of a campaign that no longer exists. Every script that changes a
-- registered campaign asks this first and writes nothing when it answers.
local function kb_gone(meta, state)
  if state then
    return nil
  end
  return redis.error_reply('KB_GONE ' .. meta .. ' does not exist: the campaign is gone from ' ..
                           'this redis (restarted without its data, or flushed); nothing written')
end

-- Nil when the campaign of `meta` is there (kb_gone, `state` its "state" as read) and its
-- "layout" (`v`, as read) is this version's, else the error reply that refuses the campaign
-- (nothing written): a campaign stored in another layout is never read as bad state.
local function kb_layout_check(meta, state, v)
  local gone = kb_gone(meta, state)
  if gone then
    return gone
  end
  if v == KB_LAYOUT then
    return nil
  end
  local which = v and 'layout ' .. tostring(v) or 'layout 1 (before 2026-12-07)'
  return redis.error_reply('KB_STATE campaign stores its items in ' .. which ..
                           '; this version reads layout ' .. KB_LAYOUT ..
                           ' only: finish the campaign with the version that started it')
end

-- The item line (layout 2) of `t` in `state`, with token, runner, charge, result and next as
-- given ('' for none). `t` holds attempt, claims, cost_s, priority_s (texts as stored) and task.
local function kb_item_encode(t, state, token, runner, charge, result, nxt)
  return state .. '|' .. kb_int_c(t.attempt) .. '|' .. kb_int_c(t.claims) .. '|' .. t.cost_s ..
         '|' .. t.priority_s .. '|' .. t.task .. '|' .. token .. '|' .. runner .. '|' .. charge ..
         '|' .. result .. '|' .. nxt
end

-- A queued item as a claim reads it, from its id `id` and its line `raw` as the scripts write it:
-- {tier, task, cost, cost_s, priority_s, attempt, claims, state}; nil for anything else (the
-- caller then checks it with kb_item_check, which gives the reason). Of the id only the ":" at
-- 65 and the tier after it are looked at: enqueue, the only writer of new items, checked the
-- candidate's 64 hex digits (a character-class scan of them would cost a claim ~14k
-- instructions per item, docs/benchmarks.md), and nothing changes an item's id.
local KB_QUEUED_PAT = '^queued|(%d+)|(%d+)|(%d+)|([^|]+)|([^|%c]+)|'
local function kb_item_queued(id, raw)
  local attempt, claims, cost, pri, task = string.match(raw, KB_QUEUED_PAT)
  if not attempt or string.byte(id, 65) ~= 58 then
    return nil
  end
  local tier = kb_num_c(string.sub(id, 66))
  if not tier or tier ~= math.floor(tier) or tier < 0 then
    return nil
  end
  return {tier = tier, task = task, cost = kb_num_c(cost),
          cost_s = cost, priority_s = pri, attempt = kb_num_c(attempt), claims = kb_num_c(claims),
          state = 'queued'}
end

-- A leased item as its completion reads it (complete_claim): {state = "leased", task, token,
-- fast = true} from a line as the claim writes it (charge, result and next empty); nil for any
-- other line (the caller then checks it whole with kb_item_check).
local KB_LEASED_PAT = '^leased|%d+|%d+|%d+|[^|]+|([^|]+)|([^|]*)|[^|]*|||$'
local function kb_item_leased(raw)
  local task, token = string.match(raw, KB_LEASED_PAT)
  if not task then
    return nil
  end
  return {state = 'leased', task = task, token = token, fast = true}
end

-- An item as read from hash `items` under field `id` (`raw`: HGET's reply, false when there is
-- none), checked before any script trusts it: an id "<64 hex>:<tier>" and a layout 2 line whose
-- state is one of the four, attempt, claims and cost whole numbers, priority a finite number,
-- task not empty. Returns {cand, tier, cost, cost_s, priority, priority_s, task, state, attempt,
-- claims, token, runner, charge, result, next} ('' for the text fields not set), or nil and the
-- reason, naming the key and field ('kb:{c}:items field "x": not an item of layout 2 ...'), for
-- the dead-letter hash: bad state in Redis is set aside, never an error that stops a process.
local KB_ITEM_PAT = '^(%l+)|(%d+)|(%d+)|(%d+)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|' ..
                    '([^|]*)$'
local KB_STATES = {queued = true, leased = true, done = true, dead = true}
local function kb_item_check(items, id, raw)
  local where = items .. ' field "' .. id .. '"'
  if not raw then
    return nil, where .. ': no such item (a queue or lease entry without its item)'
  end
  local st, attempt, claims, cost, pri, task, token, runner, charge, result, nxt =
    string.match(raw, KB_ITEM_PAT)
  if not st then
    return nil, where .. ': not an item of layout ' .. KB_LAYOUT .. ' (11 fields separated by "|")'
  end
  if not KB_STATES[st] then
    return nil, where .. ': "' .. st .. '" is not an item state'
  end
  local priority = tonumber(pri)
  if not priority or priority ~= priority or priority == math.huge or priority == -math.huge then
    return nil, where .. ': the priority is not a finite number'
  end
  if task == '' then
    return nil, where .. ': the task is empty'
  end
  local tier = string.match(id, '^%x+:(%d+)$')
  if not tier or #id ~= 65 + #tier or string.find(id, '[^0-9a-f]') ~= 65 then
    return nil, where .. ': the id is not "<candidate, 64 hex digits>:<tier>"'
  end
  return {cand = string.sub(id, 1, 64), tier = tonumber(tier), cost = tonumber(cost), cost_s = cost,
          priority = priority, priority_s = pri, task = task, state = st,
          attempt = tonumber(attempt), claims = tonumber(claims), token = token, runner = runner,
          charge = charge, result = result, next = nxt}
end

-- An item's runner as a name (the line keeps it JSON-escaped, as complete_claim got it).
local function kb_item_runner(t)
  local r = t.runner or ''
  if string.find(r, '\\', 1, true) then
    local ok, v = pcall(cjson.decode, '"' .. r .. '"')
    return ok and type(v) == 'string' and v or r
  end
  return r
end

-- Whether item `id`, stored as `raw` (false: none), is counted in meta "open": enqueue alone
-- creates items, each under the id "<64 hex>:<tier>" and counted once, and an item whose line
-- says "done" or "dead" was counted out already. A ghost (no item) or an id of another form
-- cannot say it was ever counted, and counts as not.
local function kb_item_counted(id, raw)
  return raw and #id > 65 and not string.find(string.sub(id, 1, 64), '[^0-9a-f]') and
         string.match(id, '^:%d+$', 65) ~= nil and string.sub(raw, 1, 5) ~= 'done|' and
         string.sub(raw, 1, 5) ~= 'dead|'
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
