-- complete_claim: a runner's cycle in one call: complete the item it holds (settle the charge,
-- record the result, end the lease), claim its next item (lease the best affordable ready item
-- and reserve its cost), or both at once (one round trip and one script dispatch per item,
-- what a runner that claims again right after completing does). kb_queue_claim,
-- kb_queue_complete and kb_queue_complete_and_claim are its three forms. All or nothing.
-- KEYS: 1 meta, 2 ledger, 3 ledger:log, 4 lease, 5 items, 6 charges, 7 results, 8 taskbudget,
--       9 dead, 10.. queues in preference order (highest tier first, so promising candidates finish
--       before new ones start); none when not claiming
-- ARGV: 1 runner (JSON-escaped by the caller), 2 lease token for the next item ('' = claim
--       nothing), 3 item id to complete ('' = complete nothing), 4 its lease token, 5 its charge
--       id, 6 its actual cost_ms, 7 its result JSON
-- Returns {done, open, claim...}: done is "ok", "dup" (this charge was posted already) or "-"
-- (nothing to complete), open the campaign's open items (-1 with "-"), and claim, when
-- claiming: {"ok", item, candidate, task, tier, attempt, charge_id, cost_ms, deadline_ms},
-- {"empty"} (no ready item), {"budget", available} (ready items, none affordable) or
-- {"state", state} (campaign not running).
-- A queue entry whose item is missing or does not decode (kb_item_check) is moved to the
-- dead-letter hash with the reason (and from meta "open" to "dead" when the item was counted:
-- kb_dead_letter), and the claim goes on to the next entry.
-- Errors (nothing written, nothing claimed): KB_LEASE when the completed item's lease was lost
-- (expired and reaped: its reservation was refunded and the item requeued), KB_NOTFOUND for an
-- unknown charge.
--
-- What it writes, and why that is all:
-- - Complete: the charge becomes "P:<actual>" (idempotency: a retry finds it and changes
--   nothing); the ledger moves actual from held to spent and the rest back to available. The
--   actual cost is never clipped: an actual beyond the reservation posts the reservation and
--   moves the overrun from available to spent ("overrun" audit entry; available may go below
--   0), the charge becomes "P:<actual>:O:<overrun>" and meta counts them
--   (gpu_ms:overruns, gpu_ms:overrun).
--   The result goes to the results stream with the lease it settles ("charge", "runner",
--   "attempt" fields); the lease ends; the item is "done" with "runner", "charge" and
--   "result" (that stream entry's id: the scheduler records only entries matching a done or
--   dead item this way); meta counts it.
-- - Claim: the item leaves its queue for the lease set, with a deadline from Redis TIME; its
--   charge "<item>#<claims>" holds its cost ("H:<cost>"); the ledger moves the cost from
--   available to held; the item is "leased" with the token and runner.
-- - The ledger hash is written once and the audit stream gets one entry whose "entry" fields
--   are the moves, each with the balances right after it; a move of 0 (tier 0 costs nothing)
--   is neither applied nor logged. Per-task budgets (taskbudget: held and spent per task) move
--   with every charge that is not 0; the caps are read only in campaigns that have caps (meta
--   task_caps).
-- - Retries: the done item records the item the same call leased ("next"). A retry that finds
--   the charge posted returns that lease again while it is still held with the same token (the
--   connection layer resends the same request after a lost reply), and claims afresh otherwise.
local meta, ledger, log, lease, items, charges = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5],
                                                KEYS[6]
local runner, next_token, id = ARGV[1], ARGV[2], ARGV[3]
local SCAN = 16 -- items looked at per queue when its head is not affordable

local now, bal -- Redis time and GPU balances, read when first needed
local entries = {} -- audit stream fields: 'entry', JSON, ...
local function move(op, amount, d_avail, d_held, d_spent, charge)
  if not bal then
    bal = kb_balances(ledger, 'gpu_ms')
  end
  if not now then
    now = kb_now_ms()
  end
  bal.available = bal.available + d_avail
  bal.held = bal.held + d_held
  bal.spent = bal.spent + d_spent
  entries[#entries + 1] = 'entry'
  entries[#entries + 1] = string.format(KB_ENTRY_RAW, now, op, amount, charge, runner,
                                        bal.available, bal.held, bal.spent, bal.total)
end

local m = redis.call('HMGET', meta, 'state', 'lease_ms', 'task_caps', 'open', 'done')
local open = -1
local done, old -- "ok" | "dup" | "-", and the completed item
local overrun, result_id -- what the completion charged beyond its reservation; its results entry
local charge_w, item_w = {}, {} -- HSET field, value pairs for charges and items
local gone = 0 -- counted items whose queue entry the claim moved to the dead-letter hash

-- Complete.
if id == '' then
  done = '-'
else
  local charge = ARGV[5]
  local ch = redis.call('HGET', charges, charge)
  if not ch then
    return redis.error_reply('KB_NOTFOUND no charge "' .. charge .. '"')
  end
  local kind, reserved = kb_charge_parse(ch)
  local raw = redis.call('HGET', items, id)
  old = raw and kb_item_check(items, id, raw) -- one that does not decode: a lost lease
  open = tonumber(m[4] or '0')
  if kind == 'P' then
    done = 'dup'
  elseif kind ~= 'H' or not old or old.state ~= 'leased' or old.token ~= ARGV[4] then
    return redis.error_reply('KB_LEASE lease of "' .. id .. '" was lost; its reservation was refunded')
  else
    done = 'ok'
    -- the measured cost, whole: below the reservation the rest returns; beyond it (the runner
    -- enforces limits whose sum is the reservation, so only a broken limit gets here) the
    -- overrun is taken from available, which may go below 0: never lost, never clipped
    local actual = math.max(math.floor(tonumber(ARGV[6]) or 0), 0)
    local posted = math.min(actual, reserved)
    local over = actual - posted
    local rest = reserved - posted
    if posted > 0 then
      move('post', posted, 0, -posted, posted, charge)
    end
    if over > 0 then
      move('overrun', over, -over, 0, over, charge)
    end
    if rest > 0 then
      move('void', rest, rest, -rest, 0, charge)
    end
    if reserved > 0 then
      redis.call('HINCRBY', KEYS[8], old.task .. ':held', kb_int(-reserved))
    end
    if actual > 0 then
      redis.call('HINCRBY', KEYS[8], old.task .. ':spent', kb_int(actual))
    end
    charge_w[1], charge_w[2] = charge, 'P:' .. kb_int(actual) ..
                                       (over > 0 and ':O:' .. kb_int(over) or '')
    if over > 0 then
      overrun = over
    end
    redis.call('ZREM', lease, id)
    -- the entry names the lease it settles (charge, runner, attempt); the done item records the
    -- entry's id: the scheduler accepts only entries that match (results only from leases)
    result_id = redis.call('XADD', KEYS[7], '*', 'item', id, 'result', ARGV[7], 'charge', charge,
                           'runner', old.runner or '', 'attempt', kb_int(old.attempt))
    open = open - 1
  end
end

-- Claim.
local claim = {}
if next_token ~= '' then
  if done == 'dup' and old and old.next then
    local raw = redis.call('HGET', items, old.next)
    local n = raw and kb_item_check(items, old.next, raw)
    if n and n.state == 'leased' and n.token == next_token then
      return {done, open, 'ok', old.next, n.cand, n.task, tostring(n.tier), tostring(n.attempt),
              old.next .. '#' .. n.claims, kb_int(n.cost),
              kb_int(tonumber(redis.call('ZSCORE', lease, old.next)))}
    end
  end
  if m[1] ~= 'running' then
    claim = {'state', tostring(m[1] or 'missing')}
  else
    local caps = m[3] == '1'
    local blocked = false
    for i = 10, #KEYS do
      -- the head first: nearly always affordable, and ZRANGE 0 0 costs a fifth of 0 15
      local ids = redis.call('ZRANGE', KEYS[i], 0, 0)
      local j = 1
      while ids[j] do
        local nid = ids[j]
        local raw = redis.call('HGET', items, nid)
        local it, why = kb_item_check(items, nid, raw)
        local ok = true
        if not it then
          if kb_dead_letter(KEYS[i], KEYS[9], nid, raw, why) then
            gone = gone + 1
          end
          ok = false
          ids = redis.call('ZRANGE', KEYS[i], 0, SCAN - 1)
          j = 0
        elseif it.cost > 0 then
          if not bal then
            bal = kb_balances(ledger, 'gpu_ms')
          end
          ok = it.cost <= bal.available
        end
        if ok and caps then
          local b = redis.call('HMGET', KEYS[8], it.task .. ':cap', it.task .. ':held',
                               it.task .. ':spent')
          ok = not b[1] or
               tonumber(b[2] or '0') + tonumber(b[3] or '0') + it.cost <= tonumber(b[1])
        end
        if ok then
          if not now then
            now = kb_now_ms()
          end
          local deadline = now + tonumber(m[2])
          redis.call('ZREM', KEYS[i], nid)
          redis.call('ZADD', lease, deadline, nid)
          it.attempt = it.attempt + 1
          it.claims = it.claims + 1
          local charge = nid .. '#' .. it.claims
          local cost = kb_int(it.cost)
          if it.cost > 0 then
            move('reserve', it.cost, -it.cost, it.cost, 0, charge)
            redis.call('HINCRBY', KEYS[8], it.task .. ':held', cost)
          end
          charge_w[#charge_w + 1] = charge
          charge_w[#charge_w + 1] = 'H:' .. cost
          item_w[1], item_w[2] = nid, kb_item_encode(it, 'leased', ',"token":"' .. next_token ..
                                                     '","runner":"' .. runner .. '"')
          claim = {'ok', nid, it.cand, it.task, tostring(it.tier), tostring(it.attempt), charge,
                   cost, kb_int(deadline)}
          break
        end
        blocked = blocked or it ~= nil
        if j == 1 and #ids == 1 then
          ids = redis.call('ZRANGE', KEYS[i], 0, SCAN - 1)
        end
        j = j + 1
      end
      if claim[1] then
        break
      end
    end
    if not claim[1] then
      if blocked then
        if not bal then
          bal = kb_balances(ledger, 'gpu_ms')
        end
        claim = {'budget', kb_int(bal.available)}
      else
        claim = {'empty'}
      end
    end
  end
end

-- Writes, batched: one HSET per hash, one audit stream entry.
if gone > 0 then -- counted items set aside by the claim leave "open" for "dead"
  redis.call('HINCRBY', meta, 'dead', gone)
  if done ~= 'ok' then
    redis.call('HINCRBY', meta, 'open', -gone)
  end
  if open >= 0 then
    open = open - gone
  end
end
if done == 'ok' then
  item_w[#item_w + 1] = id
  item_w[#item_w + 1] = kb_item_encode(old, 'done', ',"runner":' .. cjson.encode(old.runner or '') ..
                                       ',"charge":"' .. ARGV[5] .. '","result":"' .. result_id ..
                                       '"' .. (claim[1] == 'ok' and
                                       ',"next":"' .. claim[2] .. '"' or ''))
  redis.call('HSET', meta, 'open', kb_int(open), 'done', kb_int(tonumber(m[5] or '0') + 1))
  if overrun then
    redis.call('HINCRBY', meta, 'gpu_ms:overruns', 1)
    redis.call('HINCRBY', meta, 'gpu_ms:overrun', kb_int(overrun))
  end
end
if #entries > 0 then
  redis.call('HSET', ledger, 'gpu_ms:available', kb_int(bal.available), 'gpu_ms:held',
             kb_int(bal.held), 'gpu_ms:spent', kb_int(bal.spent))
  redis.call('XADD', log, '*', unpack(entries))
end
if #charge_w > 0 then
  redis.call('HSET', charges, unpack(charge_w))
end
if #item_w > 0 then
  redis.call('HSET', items, unpack(item_w))
end
local out = {done, open}
for i = 1, #claim do
  out[#out + 1] = claim[i]
end
return out
