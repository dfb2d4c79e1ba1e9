-- charge: two-phase transfers on one currency of the ledger, each resolving at most once (the
-- model is TigerBeetle's pending transfers): reserve moves an amount from available to held;
-- post settles it (the actual amount moves to spent, the rest of the reservation back to
-- available; an actual beyond the reservation is charged whole, the overrun taken from
-- available, logged as an "overrun" entry and counted in meta); void returns all of it. Used
-- for LLM tokens by the scheduler; GPU time goes
-- through claim/complete, which keep the same hash format.
-- KEYS: 1 ledger, 2 ledger:log, 3 charges hash of this currency, 4 meta (optional: where
--       overruns are counted, fields <currency>:overruns and <currency>:overrun)
-- ARGV: 1 op ("reserve" | "post" | "void"), 2 currency ("gpu_ms" | "llm_tokens"),
--       3 charge id, 4 amount (reserve: to hold; post: actual; void: ignored), 5 who
-- Returns {"ok", amount, overrun} (overrun: what a post charged beyond the reservation, 0
-- otherwise) or {"dup", amount} when this op already happened to this charge.
-- Errors: KB_BUDGET (reserve beyond available), KB_NOTFOUND (post/void of an unknown charge),
--         KB_STATE (post of a voided charge, void of a posted one, reserve of a used id),
--         KB_INVAL (bad op, currency or amount).
local ledger, log, charges = KEYS[1], KEYS[2], KEYS[3]
local op, cur, id, who = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
local amount = tonumber(ARGV[4])
if cur ~= 'gpu_ms' and cur ~= 'llm_tokens' then
  return redis.error_reply('KB_INVAL unknown currency "' .. cur .. '"')
end
if not amount or amount < 0 or amount ~= math.floor(amount) then
  return redis.error_reply('KB_INVAL amount must be a non-negative integer')
end
local ch = redis.call('HGET', charges, id)
local kind, previous
if ch then
  kind, previous = kb_charge_parse(ch)
end
local bal = kb_balances(ledger, cur)
local now = kb_now_ms()

if op == 'reserve' then
  if ch then
    if kind == 'H' and previous == amount then
      return {'dup', previous}
    end
    return redis.error_reply('KB_STATE charge "' .. id .. '" was already used')
  end
  if amount > bal.available then
    return redis.error_reply('KB_BUDGET ' .. cur .. ': ' .. amount .. ' wanted, ' ..
                             bal.available .. ' available')
  end
  kb_move(ledger, log, cur, bal, 'reserve', amount, -amount, amount, 0, id, who, now)
  redis.call('HSET', charges, id, 'H:' .. kb_int(amount))
  return {'ok', amount}
elseif op == 'post' or op == 'void' then
  if not ch then
    return redis.error_reply('KB_NOTFOUND no charge "' .. id .. '"')
  end
  local done_kind = op == 'post' and 'P' or 'V'
  if kind == done_kind then
    return {'dup', previous}
  end
  if kind ~= 'H' then
    return redis.error_reply('KB_STATE charge "' .. id .. '" is already ' ..
                             (kind == 'P' and 'posted' or 'voided'))
  end
  -- post: the actual amount goes from held to spent, then (own entry) the rest from held back
  -- to available; void: all of it back. Each audit entry shows the balances right after it.
  -- A post beyond the reservation is charged whole: the reservation goes to spent and the
  -- overrun (own "overrun" entry) from available to spent, which may take available below 0.
  local posted = op == 'post' and math.min(amount, previous) or 0
  local over = op == 'post' and amount - posted or 0
  if op == 'post' then
    kb_move(ledger, log, cur, bal, 'post', posted, 0, -posted, posted, id, who, now)
  end
  if over > 0 then
    kb_move(ledger, log, cur, bal, 'overrun', over, -over, 0, over, id, who, now)
  end
  local rest = previous - posted
  if rest > 0 then
    kb_move(ledger, log, cur, bal, 'void', rest, rest, -rest, 0, id, who, now)
  end
  local settled = op == 'post' and amount or previous
  redis.call('HSET', charges, id, done_kind .. ':' .. kb_int(settled) ..
             (over > 0 and ':O:' .. kb_int(over) or ''))
  if over > 0 and KEYS[4] then
    redis.call('HINCRBY', KEYS[4], cur .. ':overruns', 1)
    redis.call('HINCRBY', KEYS[4], cur .. ':overrun', kb_int(over))
  end
  return {'ok', settled, over}
end
return redis.error_reply('KB_INVAL unknown op "' .. op .. '"')
