-- complete_claim: a runner's cycle in one call: complete the items it holds (settle each charge,
-- record each result, end each lease), claim its next items (lease the best affordable ready
-- items and reserve each one's cost), or both at once (one round trip and one script dispatch
-- per call, what a runner that claims again right after completing does). kb_queue_claim,
-- kb_queue_complete and kb_queue_complete_and_claim are its one-item forms (one complete, one
-- claim: ARGV 1-7, the fused form); kb_queue_cycle_batch completes up to KB_QUEUE_BATCH_MAX
-- items and claims up to K in one call. All or nothing.
-- KEYS: 1 meta, 2 ledger, 3 ledger:log, 4 lease, 5 items, 6 charges, 7 results, 8 taskbudget,
--       9 dead, 10.. queues in preference order (highest tier first, so promising candidates finish
--       before new ones start); none when not claiming
-- ARGV: 1 runner (JSON-escaped by the caller), 2 lease token for the items claimed ('' or K = 0:
--       claim nothing; every item one call claims gets this token), 3 item id to complete ('' =
--       complete nothing), 4 its lease token, 5 its charge id, 6 its actual cost_ms, 7 its result
--       JSON; 8 (optional) K, how many items to claim at most (absent: 1); 9.. (optional) further
--       items to complete, five arguments each as 3-7; last (optional, present when #ARGV - 8 is
--       one more than a multiple of 5, so after K): the tasks the runner holds prepared, ids
--       joined with ',' (task affinity, below; absent or '': the plain order).
-- Returns {done, open, claim...}: done is per completed item "ok", "dup" (this charge was posted
-- already) or "-" (nothing to complete), joined with "," when the call completes several
-- ("ok,dup,ok"); open the campaign's open items (-1 with "-"); then, when claiming, one record
-- {"ok", item, task, attempt, charge_id, cost_ms, deadline_ms} per item claimed (at most K;
-- the candidate and tier are the item id's, "<candidate>:<tier>"), followed, when fewer than K
-- were claimed, by why no more: {"empty"} (no ready item), {"budget", available} (ready items,
-- none affordable) or {"state", state} (campaign not running). With K = 1 that is one record
-- or one reason, as the fused form had.
-- Each queue, highest tier first, is looked at once per call: its first K entries (the head
-- alone for one item) and, when they did not give enough affordable items, the 16 after them.
-- Task affinity (a list given, maybe '', meta affinity_ms not 0): the claim first takes, of the
-- first K + 16 entries of its plain order over the running tiers' queues (tier 0 excluded), the
-- preferred tasks' affordable entries, then those of tasks no other runner holds (meta
-- "held:<task>", written by every claim with affinity), then the others; unless the entry a plain claim would take
-- first has been passed over for affinity_ms (default 2000) since the first claim that passed
-- it over (meta "aff"): then the plain order. What is left of K is claimed in plain order.
-- A queue entry whose item is missing or does not decode (kb_item_check) is moved to the
-- dead-letter hash with the reason (and from meta "open" to "dead" when the item was counted:
-- kb_dead_letter), and the claim goes on to the next entry.
-- Errors (nothing written, nothing claimed: every completion is checked before any write): KB_LEASE
-- when a completed item's lease was lost (expired and reaped: its reservation was refunded and
-- the item requeued), KB_NOTFOUND for an unknown charge, KB_INVAL for a charge named twice in
-- one call or a bad K.
--
-- What it writes, and why that is all:
-- - Complete, per item: the charge becomes "P:<actual>" (idempotency: a retry finds it and
--   changes nothing); the ledger moves the reservation out of held, actual to spent and the
--   rest back to available (a "settle" move). The actual cost is never clipped: an actual
--   beyond the reservation takes the overrun from available (which may go below 0), the charge
--   becomes "P:<actual>:O:<overrun>" and meta counts them (gpu_ms:overruns, gpu_ms:overrun).
--   The result goes to the results stream with the lease it settles: an entry of fields
--   "item", "result" and "charge" (the lease's runner and attempt are the done item's; the
--   reaper's entries and those of earlier versions also carry "runner" and "attempt"); the
--   lease ends; the item is "done" with "runner", "charge" and "result" (that stream entry's
--   id: the scheduler records only entries matching a done or dead item this way); meta
--   counts it.
-- - Claim, per item: the item leaves its queue for the lease set, with a deadline from Redis
--   TIME; its charge "<item>#<claims>" holds its cost ("H:<cost>"); the ledger moves the cost
--   from available to held; the item is "leased" with the token and runner. Each item claimed
--   is chosen as the fused form chooses one, after the ones before it were taken (their
--   reservations counted against the budget and the task caps).
-- - The ledger hash is written once and the audit stream gets one entry with one "moves" field
--   (schemas/ledger-moves.schema.json): the call's moves in order, ["settle", charge,
--   reserved, actual] per item completed and ["reserve", charge, cost] per item claimed, and
--   the balances after the last (each earlier move's follow from them); a move of 0 (tier 0
--   costs nothing) is neither applied nor logged. Per-task budgets (taskbudget: held and
--   spent per task) move with every charge that is not 0; the caps are read only in campaigns
--   that have caps (meta task_caps).
-- - Retries: the first item the call completes records the items the same call leased ("next":
--   their ids joined with ","). A retry that finds every charge posted returns those leases
--   again while they are still held with the same token (the connection layer resends the same
--   request after a lost reply), and claims afresh for the rest of K.
local meta, ledger, log, lease, items, charges = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5],
                                                KEYS[6]
local runner, next_token = ARGV[1], ARGV[2]
local want = tonumber(ARGV[8] or '1')
local SCAN = 16 -- items looked at per queue when its head is not affordable
-- Task affinity: the optional last argument (when #ARGV - 8 is one more than a multiple of 5)
-- names the tasks the runner holds prepared, joined with ','.
local prefer -- set of task ids, nil: no affinity (plain order)
if #ARGV >= 9 and (#ARGV - 8) % 5 == 1 then
  prefer = {}
  for t in string.gmatch(ARGV[#ARGV], '[^,]+') do
    prefer[t] = true
  end
end
local AFFINITY_MS = 2000 -- how long a queue's head may be passed over (meta affinity_ms)
if not want or want < 0 or want ~= math.floor(want) then
  return redis.error_reply('KB_INVAL K must be a whole number, not "' ..
                           tostring(ARGV[8]) .. '"')
end

local now, bal -- Redis time and GPU balances, read when first needed
-- items this call completes and claims, at most: the size its tables are made with
local n_max = math.min(want, 64) + math.floor((#ARGV - 2) / 5)
-- this call's audit entry's "moves" array, in pieces for one table.concat
local moves = kb_array(7 * n_max)
-- This call's ledger moves: each applied to the balances and appended to the call's one audit
-- entry (schemas/ledger-moves.schema.json) as the pieces of a JSON array element, without
-- cjson and without a string per move: the charge ids are built from item ids, JSON-safe.
-- A reservation: `cost` (> 0; `cost_s` its text) from available to held.
local function reserve(charge, cost, cost_s)
  if not bal then
    bal = kb_balances(ledger, 'gpu_ms')
  end
  bal.available = bal.available - cost
  bal.held = bal.held + cost
  local n = #moves
  moves[n + 1] = n == 0 and '["reserve","' or ',["reserve","'
  moves[n + 2], moves[n + 3], moves[n + 4], moves[n + 5] = charge, '",', cost_s, ']'
end
-- A settlement (reserved or actual > 0): the reservation leaves held, the actual cost goes to
-- spent and the difference to available (below 0 when actual > reserved: an overrun).
local function settle(charge, reserved, actual, actual_s)
  if not bal then
    bal = kb_balances(ledger, 'gpu_ms')
  end
  bal.available = bal.available + reserved - actual
  bal.held = bal.held - reserved
  bal.spent = bal.spent + actual
  local n = #moves
  moves[n + 1] = n == 0 and '["settle","' or ',["settle","'
  moves[n + 2], moves[n + 3], moves[n + 4] = charge, '",', kb_int_c(reserved)
  moves[n + 5], moves[n + 6], moves[n + 7] = ',', actual_s, ']'
end
-- Per-task budgets (KEYS[8]): the moves of this call summed per field, written with one HMGET
-- and one HSET at the end instead of an HINCRBY per move.
local tb_f, tb_d = {}, {} -- fields in the order first moved, and each one's pending delta
local function tb_add(f, d)
  if tb_d[f] then
    tb_d[f] = tb_d[f] + d
  else
    tb_f[#tb_f + 1] = f
    tb_d[f] = d
  end
end

local m = redis.call('HMGET', meta, 'state', 'lease_ms', 'task_caps', 'open', 'done',
                     'affinity_ms', 'aff', 'layout')
local bad_layout = kb_layout_check(meta, m[1], m[8])
if bad_layout then
  return bad_layout
end
if m[6] then
  AFFINITY_MS = tonumber(m[6]) or AFFINITY_MS
end
if AFFINITY_MS <= 0 then
  prefer = nil
end
local open = -1
-- HSET field, value pairs for charges and items
local charge_w, item_w = kb_array(2 * n_max), kb_array(2 * n_max)
local gone = 0 -- counted items whose queue entry the claim moved to the dead-letter hash

-- Complete: every item checked first (nothing is written unless all pass), then settled. Per
-- item k its ARGV index (at[k]: id, token, charge, cost, result from there), its leased line as
-- found (raws[k]) and as read (olds[k]), its reservation (reserved[k]): arrays, not a table per
-- item (each table a script makes, and each it grows, costs the server thousands of
-- instructions per item, docs/benchmarks.md).
local at, ids_c, charges_c = {}, {}, {}
local a = 3 -- the first item at ARGV 3-7; ARGV 8 is K; further items from 9
while a + 4 <= #ARGV do
  if ARGV[a] ~= '' then
    local n = #at + 1
    at[n], ids_c[n], charges_c[n] = a, ARGV[a], ARGV[a + 2]
  end
  a = a == 3 and 9 or a + 5
end
local n_todo = #at
local dones = {} -- "ok" | "dup" per item
local first_old -- the first item's value as found (its "next" serves a retry)
local n_ok, n_dup = 0, 0
local seen = {}
for k = 1, n_todo do
  local charge = charges_c[k]
  if seen[charge] then
    return redis.error_reply('KB_INVAL charge "' .. charge .. '" named twice in one call')
  end
  seen[charge] = true
end
local chs = n_todo > 0 and redis.call('HMGET', charges, unpack(charges_c)) or {}
local raws = n_todo > 0 and redis.call('HMGET', items, unpack(ids_c)) or {}
local olds, reserved_k = {}, {}
for k = 1, n_todo do
  local id, charge = ids_c[k], charges_c[k]
  local ch = chs[k]
  if not ch then
    return redis.error_reply('KB_NOTFOUND no charge "' .. charge .. '"')
  end
  local kind, reserved = kb_charge_parse(ch)
  local raw = raws[k]
  -- as the claim wrote it (kb_item_leased), or checked whole: one that does not decode is a
  -- lost lease
  local old = raw and (kb_item_leased(raw) or kb_item_check(items, id, raw))
  if k == 1 then
    first_old = old
  end
  if kind == 'P' then
    dones[k] = 'dup'
    n_dup = n_dup + 1
  elseif kind ~= 'H' or not old or old.state ~= 'leased' or old.token ~= ARGV[at[k] + 1] then
    return redis.error_reply('KB_LEASE lease of "' .. id .. '" was lost; its reservation was refunded')
  else
    dones[k] = 'ok'
    n_ok = n_ok + 1
    olds[k], reserved_k[k] = old, reserved
  end
end
if n_todo > 0 then
  open = tonumber(m[4] or '0')
end
local overruns, overrun = 0, 0 -- what the completions charged beyond their reservations
local ended = {} -- leases the completions end
local xids = {} -- per item completed now, its results entry's id, for the item writes
for k = 1, n_todo do
  if dones[k] == 'ok' then
    local id, charge, old, reserved, ak = ids_c[k], charges_c[k], olds[k], reserved_k[k], at[k]
    -- the measured cost, whole: below the reservation the rest returns; beyond it (the runner
    -- enforces limits whose sum is the reservation, so only a broken limit gets here) the
    -- overrun is taken from available, which may go below 0: never lost, never clipped
    local actual = math.max(math.floor(kb_num_c(ARGV[ak + 3]) or 0), 0)
    local over = math.max(actual - reserved, 0)
    local actual_s = kb_int_c(actual)
    if reserved > 0 or actual > 0 then
      settle(charge, reserved, actual, actual_s)
    end
    if over > 0 then
      overruns, overrun = overruns + 1, overrun + over
    end
    if reserved > 0 then
      tb_add(old.task .. ':held', -reserved)
    end
    if actual > 0 then
      tb_add(old.task .. ':spent', actual)
    end
    local nw = #charge_w
    charge_w[nw + 1] = charge
    charge_w[nw + 2] = over > 0 and 'P:' .. actual_s .. ':O:' .. kb_int(over) or 'P:' .. actual_s
    ended[#ended + 1] = id
    -- the entry names the lease it settles by its charge; the done item records the entry's id
    -- with the lease's runner and attempt: the scheduler accepts only entries that match
    -- (results only from leases). No "runner" and "attempt" fields: the done item has them,
    -- and each field of a stream entry costs the server ~3.5k instructions (docs/benchmarks.md)
    xids[k] = redis.call('XADD', KEYS[7], '*', 'item', id, 'result', ARGV[ak + 4], 'charge',
                         charge)
    open = open - 1
  end
end
if #ended > 0 then
  redis.call('ZREM', lease, unpack(ended))
end

-- Claim.
-- the reply: done and open (set last), then the records of the items claimed, one after
-- another; nc of them
local out, nc = kb_array(7 * math.min(want, 64) + 4), 0
out[1], out[2] = '-', -1
local why -- why fewer than `want` were claimed
local function record(nid, it, charge, deadline)
  local n = #out
  out[n + 1], out[n + 2], out[n + 3], out[n + 4] = 'ok', nid, it.task, kb_int_c(it.attempt)
  out[n + 5], out[n + 6], out[n + 7] = charge, it.cost_s, deadline
  nc = nc + 1
end
-- A retry of a call that completed everything: the leases that call took, if still held.
if next_token ~= '' and n_todo > 0 and n_dup == n_todo and first_old and first_old.next and
   first_old.next ~= '' then
  for nid in string.gmatch(first_old.next, '[^,]+') do
    local raw = redis.call('HGET', items, nid)
    local n = raw and kb_item_check(items, nid, raw)
    if n and n.state == 'leased' and n.token == next_token and nc < want then
      n.cost_s = kb_int_c(n.cost)
      record(nid, n, nid .. '#' .. kb_int_c(n.claims),
             kb_int(tonumber(redis.call('ZSCORE', lease, nid))))
    end
  end
  if nc >= want then
    out[1], out[2] = table.concat(dones, ','), open
    return out
  end
end
local fresh = {} -- ids claimed by this call (not recovered), for "next"
local aff_w = {} -- task affinity's meta field, value pairs (aff, held:<task>)
-- ZADD deadline, id pairs of the leases this call takes
local lease_w = kb_array(2 * math.min(want, 64))
local caps = m[3] == '1'
local deadline_s, lease_tail -- the same for every item this call leases
-- Whether `it` (its cost and its task's cap) can be reserved now.
local function affordable(it)
  if it.cost > 0 then
    if not bal then
      bal = kb_balances(ledger, 'gpu_ms')
    end
    if it.cost > bal.available then
      return false
    end
  end
  if caps then -- the task's held and spent as stored plus this call's moves so far
    local fh, fs = it.task .. ':held', it.task .. ':spent'
    local b = redis.call('HMGET', KEYS[8], it.task .. ':cap', fh, fs)
    if not b[1] then
      return true
    end
    local held = tonumber(b[2] or '0') + (tb_d[fh] or 0)
    -- a task with nothing held may always start one evaluation (the budget split's "no
    -- starvation" rule, without waiting for its next rebalance: a cap of used + one dearest
    -- reservation, set while nothing was held, no longer fits that reservation once anything
    -- was spent, and its runner would wait up to rebalance_seconds with the task's next item)
    return held <= 0 or held + tonumber(b[3] or '0') + (tb_d[fs] or 0) + it.cost <=
                        tonumber(b[1])
  end
  return true
end
-- Leases item `nid` (`it`, affordable) from queue `q`.
local function take(nid, it)
  if not now then
    now = kb_now_ms()
  end
  if not deadline_s then
    deadline_s = kb_int(now + tonumber(m[2]))
    lease_tail = '|' .. next_token .. '|' .. runner .. '|||'
  end
  lease_w[#lease_w + 1] = deadline_s
  lease_w[#lease_w + 1] = nid
  it.attempt = it.attempt + 1
  it.claims = it.claims + 1
  local charge = nid .. '#' .. kb_int_c(it.claims)
  local cost = it.cost_s
  if it.cost > 0 then
    reserve(charge, it.cost, cost)
    tb_add(it.task .. ':held', it.cost)
  end
  charge_w[#charge_w + 1] = charge
  charge_w[#charge_w + 1] = 'H:' .. cost
  item_w[#item_w + 1] = nid
  item_w[#item_w + 1] = 'leased|' .. kb_int_c(it.attempt) .. '|' .. kb_int_c(it.claims) .. '|' ..
                        cost .. '|' .. it.priority_s .. '|' .. it.task .. lease_tail
  record(nid, it, charge, deadline_s)
  fresh[#fresh + 1] = nid
  if prefer and it.tier > 0 then -- task affinity: this runner holds the task now (a compile
                                 -- prepares nothing)
    aff_w[#aff_w + 1] = 'held:' .. it.task
    aff_w[#aff_w + 1] = runner
  end
end
-- Queue `q`'s entry `nid` (its item line `raw`, false when missing) as a claim reads it: the
-- item when queued, else nil, and the entry moved to the dead-letter hash with the reason
-- (counted in `gone` when the item was counted open).
local function read_queued(q, nid, raw)
  local it, bad = raw and kb_item_queued(nid, raw)
  if not it then
    it, bad = kb_item_check(items, nid, raw)
    if it and it.state ~= 'queued' then
      it, bad = nil, items .. ' field "' .. nid .. '": ' .. it.state .. ', not queued'
    end
  end
  if not it and kb_dead_letter(q, KEYS[9], nid, raw, bad) then
    gone = gone + 1
  end
  return it
end
-- Claims up to `r` items from queue `q` in its order, looking at its first r entries and, when
-- they were not enough, the SCAN after them; the ones taken leave the queue together. Returns
-- whether a decodable item was passed over (not affordable).
local function claim_from(q, r)
  local taken, blocked = {}, false
  local from, to = 0, r - 1 -- the head alone for one item: nearly always affordable
  for _ = 1, 2 do
    local ids = redis.call('ZRANGE', q, from, to)
    if #ids == 0 then
      break
    end
    local raws_q = redis.call('HMGET', items, unpack(ids))
    local removed = 0
    for j, nid in ipairs(ids) do
      if #taken >= r then
        break
      end
      local it = read_queued(q, nid, raws_q[j])
      if not it then
        removed = removed + 1
      elseif affordable(it) then
        take(nid, it)
        taken[#taken + 1] = nid
      else
        blocked = true
      end
    end
    if #taken >= r or #ids < to - from + 1 then
      break
    end
    from = to + 1 - removed -- the dead-lettered entries left the queue; the taken ones not yet
    to = from + SCAN - 1
  end
  if #taken > 0 then
    redis.call('ZREM', q, unpack(taken))
  end
  return blocked
end
-- Task affinity. The claim's plain order is the queues' (highest tier first), each in its
-- order; its window is the first r + SCAN entries of that order over the running tiers' queues
-- (tier 0, compiling, prepares nothing and is never reordered). Of the window's affordable
-- entries the preferred tasks' are taken first, then those of tasks no other runner holds, then
-- those of tasks another runner holds (each group in plain order), unless the
-- first affordable entry of the plain order (the one a claim without affinity would take) has
-- been passed over for AFFINITY_MS already (meta "aff" = "<item> <ms>": that entry and when it
-- was first passed over): then the plain order. So every entry, once first in the plain order,
-- waits at most AFFINITY_MS (and the next claim) for its turn.
-- Whether `first`, the plain order's first entry, may be passed over now.
local function may_pass(first)
  local rec = m[7]
  if not now then
    now = kb_now_ms()
  end
  local id, since = string.match(rec or '', '^(%S+) (%d+)$')
  if id ~= first then
    aff_w[#aff_w + 1] = 'aff'
    aff_w[#aff_w + 1] = first .. ' ' .. kb_int(now)
    return true
  end
  return now - tonumber(since) < AFFINITY_MS
end
-- Claims up to `r` items from the queues KEYS[i0..i1] (running tiers, highest first) with
-- affinity, as above; the ones taken leave their queues. Returns whether a decodable item was
-- passed over as not affordable. The caller claims the rest of `r`, if any, in plain order.
-- Kept whole (84 lines): read the window, group it, take; each phase uses the one before's locals.
local function claim_pref(i0, i1, r)
  local win, blocked = {}, false -- {queue, id, item} of the affordable entries, plain order
  local seen_n = 0
  for i = i0, i1 do
    if seen_n >= r + SCAN then
      break
    end
    local q = KEYS[i]
    local ids = redis.call('ZRANGE', q, 0, r + SCAN - 1 - seen_n)
    if #ids > 0 then
      local raws_q = redis.call('HMGET', items, unpack(ids))
      for j, nid in ipairs(ids) do
        local it = read_queued(q, nid, raws_q[j])
        if it then
          seen_n = seen_n + 1
          if affordable(it) then
            win[#win + 1] = {q, nid, it}
          else
            blocked = true
          end
        end
      end
    end
  end
  if #win == 0 then
    return blocked
  end
  -- classes: 1 the runner's preferred tasks, 2 tasks no runner holds, 3 tasks another runner
  -- holds (meta "held:<task>": the last affinity claim's runner)
  local fields, class = {}, {}
  for _, e in ipairs(win) do
    local t = e[3].task
    if not prefer[t] and not class[t] then
      class[t] = 2
      fields[#fields + 1] = 'held:' .. t
    end
  end
  if #fields > 0 then
    local hs = redis.call('HMGET', meta, unpack(fields))
    for k, f in ipairs(fields) do
      local t = string.sub(f, 6)
      if hs[k] and hs[k] ~= runner then
        class[t] = 3
      end
    end
  end
  local byc = {{}, {}, {}}
  for _, e in ipairs(win) do
    local c = prefer[e[3].task] and 1 or class[e[3].task]
    byc[c][#byc[c] + 1] = e
  end
  local order, at = {}, 0 -- the new order, and where the plain first is in it
  for c = 1, 3 do
    for _, e in ipairs(byc[c]) do
      order[#order + 1] = e
      if e == win[1] then
        at = #order
      end
    end
  end
  -- the plain first passed over (beyond the r taken) only while it may be (AFFINITY_MS)
  if at > r and not may_pass(win[1][2]) then
    order = win
  end
  local taken = {} -- queue -> ids
  local n = 0
  for _, e in ipairs(order) do
    if n >= r then
      break
    end
    if affordable(e[3]) then -- again: the ones taken before count against budget and caps
      take(e[2], e[3])
      taken[e[1]] = taken[e[1]] or {}
      table.insert(taken[e[1]], e[2])
      n = n + 1
    else
      blocked = true
    end
  end
  for q, ids in pairs(taken) do
    redis.call('ZREM', q, unpack(ids))
  end
  return blocked
end
if next_token ~= '' and want > 0 then
  if m[1] ~= 'running' then
    why = {'state', tostring(m[1] or 'missing')}
  else
    local blocked = false
    if prefer then -- the running tiers' queues: all but a last one of tier 0
      local last = #KEYS
      if string.match(KEYS[last], ':q:0$') then
        last = last - 1
      end
      if last >= 10 then
        blocked = claim_pref(10, last, want)
      end
    end
    for i = 10, #KEYS do
      if nc >= want then
        break
      end
      blocked = claim_from(KEYS[i], want - nc) or blocked
    end
    if #lease_w > 0 then
      redis.call('ZADD', lease, unpack(lease_w))
    end
    if nc < want then
      if blocked then
        if not bal then
          bal = kb_balances(ledger, 'gpu_ms')
        end
        why = {'budget', kb_int(bal.available)}
      else
        why = {'empty'}
      end
    end
  end
end

-- Writes, batched: one HSET per hash, one audit stream entry.
if gone > 0 then -- counted items set aside by the claim leave "open" for "dead"
  redis.call('HINCRBY', meta, 'dead', gone)
  if n_ok == 0 then
    redis.call('HINCRBY', meta, 'open', -gone)
  end
  if open >= 0 then
    open = open - gone
  end
end
if n_ok > 0 then
  local first = true
  for k = 1, n_todo do
    local xid = xids[k]
    if xid then
      local nw, charge, old, raw = #item_w, charges_c[k], olds[k], raws[k]
      item_w[nw + 1] = ids_c[k]
      -- the leased line less its "leased" and its two empty fields at the end, then charge,
      -- result and next: the lease's attempt, claims, cost, priority, task, token and runner
      -- kept
      local nxt = (first and #fresh > 0) and table.concat(fresh, ',') or ''
      first = false
      if old.fast then -- the line ends with "|||": its charge, result and next empty
        item_w[nw + 2] = 'done' .. string.sub(raw, 7, #raw - 2) .. charge .. '|' .. xid .. '|' ..
                         nxt
      else
        item_w[nw + 2] = kb_item_encode(old, 'done', old.token, old.runner, charge, xid, nxt)
      end
    end
  end
  redis.call('HSET', meta, 'open', kb_int(open), 'done', kb_int(tonumber(m[5] or '0') + n_ok))
  if overruns > 0 then
    redis.call('HINCRBY', meta, 'gpu_ms:overruns', overruns)
    redis.call('HINCRBY', meta, 'gpu_ms:overrun', kb_int(overrun))
  end
end
if #aff_w > 0 then
  redis.call('HSET', meta, unpack(aff_w))
end
if #tb_f > 0 then
  local cur = redis.call('HMGET', KEYS[8], unpack(tb_f))
  local w = {}
  for k, f in ipairs(tb_f) do
    local v = tonumber(cur[k] or '0')
    if not v then -- as HINCRBY would refuse it
      return redis.error_reply('KB_INVAL ' .. KEYS[8] .. ' field "' .. f .. '" is not a number')
    end
    w[#w + 1] = f
    w[#w + 1] = kb_int(v + tb_d[f])
  end
  redis.call('HSET', KEYS[8], unpack(w))
end
if #moves > 0 then
  if not now then
    now = kb_now_ms()
  end
  local avail, held, spent = kb_int(bal.available), kb_int(bal.held), kb_int(bal.spent)
  redis.call('HSET', ledger, 'gpu_ms:available', avail, 'gpu_ms:held', held, 'gpu_ms:spent',
             spent)
  redis.call('XADD', log, '*', 'moves', '{"schema":"kernelbrain.ledger-moves/1","ts_ms":' ..
             kb_int(now) .. ',"currency":"gpu_ms","who":"' .. runner .. '","moves":[' ..
             table.concat(moves) .. '],"available":' .. avail .. ',"held":' .. held ..
             ',"spent":' .. spent .. ',"total":' .. kb_int(bal.total) .. '}')
end
if #charge_w > 0 then
  redis.call('HSET', charges, unpack(charge_w))
end
if #item_w > 0 then
  redis.call('HSET', items, unpack(item_w))
end
out[1], out[2] = n_todo > 0 and table.concat(dones, ',') or '-', open
if why and nc < want then
  for j = 1, #why do
    out[#out + 1] = why[j]
  end
end
return out
