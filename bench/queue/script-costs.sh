#!/bin/sh
# What the operations the queue scripts are made of cost the redis server, one by one.
#
# usage: bench/queue/script-costs.sh [N [R]]   (N iterations per case, default 20000; each case
#                                               is timed R times, default 5, and the fastest
#                                               and the median are printed)
#
# Starts a throwaway redis-server configured like the benchmark's (AOF everysec, unix socket,
# temp folder), loads a campaign-sized state (a ledger hash, a 230-task budget hash, 50,000
# items, a 50,000-item queue, streams), then times each operation N times inside one EVAL: the
# server time of that EVAL (INFO commandstats) minus an empty loop, divided by N, is the cost
# of one operation inside a script, in microseconds. Writes are propagated to the AOF as they
# are in the real scripts. Prints one line per case; the fastest of R runs is the cost with the
# least interference from other programs on the machine. Needs redis-server and redis-cli.
set -eu
N=${1:-20000}
R=${2:-5}
dir=$(mktemp -d /tmp/kb-script-costs-XXXXXX)
sock="$dir/redis.sock"
redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --dir "$dir" \
  --appendonly yes --appendfsync everysec --maxmemory-policy noeviction --save "" \
  --logfile "$dir/redis.log" --daemonize yes --pidfile "$dir/redis.pid" >/dev/null
trap 'redis-cli -s "$sock" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT INT TERM
cli() { redis-cli -s "$sock" "$@"; }
i=0
until cli ping >/dev/null 2>&1; do
  i=$((i + 1))
  [ $i -lt 200 ] || { echo "script-costs: redis-server did not start" >&2; exit 1; }
  sleep 0.05
done

L='kb:{c}:ledger' TB='kb:{c}:taskbudget' TBH='kb:{c}:taskbudget:ht' LOG='kb:{c}:ledger:log'
RES='kb:{c}:results' ITEMS='kb:{c}:items' Q='kb:{c}:q:0' META='kb:{c}:meta'
ID='5f2b6c1d9e8a7b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4:1'
ITEM='{"cand":"5f2b6c1d9e8a7b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4","task":"task-117","tier":1,"cost":10,"priority":12345,"attempt":1,"claims":1,"state":"leased","token":"0123456789abcdef0123456789abcdef","runner":"bench-r12"}'
ENTRY='{"schema":"kernelbrain.ledger/1","ts_ms":1796000000000,"op":"reserve","currency":"gpu_ms","amount":10,"charge_id":"5f2b6c1d9e8a7b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4:1#1","who":"bench-r12","available":999999999990,"held":10,"spent":0,"total":1000000000000}'
RESULT=$(printf '{"schema":"kernelbrain.result/1","campaign":"c","task":"task-117","candidate":"%s","tier":1,"tier_name":"smoke","attempt":1,"charge_id":"%s#1","runner":"bench-r12","backend":"host","device":"","status":"ok","reason":"","check":{"sets":3,"max_abs_err":1.1920929e-07,"max_rel_err":2.3841858e-07},"timing":{"median_us":41.25,"p10_us":40.875,"p90_us":43.5,"mean_us":41.9,"min_us":40.5,"noise":0.0125,"samples":50,"warmup":3},"cost_ms":5}' "${ID%:1}" "$ID")

# The state: what a 230-task campaign holds.
cli hset "$L" gpu_ms:total 1000000000000 gpu_ms:available 999999999990 gpu_ms:held 10 \
  gpu_ms:spent 0 llm_tokens:total 0 llm_tokens:available 0 llm_tokens:held 0 \
  llm_tokens:spent 0 >/dev/null
cli hset "$META" state running lease_ms 60000 open 50000 done 0 dead 0 >/dev/null
cli eval "for t = 0, 229 do
  local name = string.format('task-%03d', t)
  redis.call('HSET', KEYS[1], name .. ':held', 0, name .. ':spent', 0)
  redis.call('HSET', KEYS[2], name .. ':held', 0, name .. ':spent', 0)
end
redis.call('HSET', KEYS[2], 'force-hashtable', string.rep('x', 100))
redis.call('HDEL', KEYS[2], 'force-hashtable')
for i = 1, 50000 do
  local id = string.format('%064x:%d', i, i % 3)
  redis.call('HSET', KEYS[3], id, ARGV[1])
  redis.call('ZADD', KEYS[4], i, id)
end
return 0" 4 "$TB" "$TBH" "$ITEMS" "$Q" "$ITEM" >/dev/null
cli hset "$ITEMS" "$ID" "$ITEM" >/dev/null
echo "state: $TB is $(cli object encoding "$TB") with $(cli hlen "$TB") fields," \
  "$TBH is $(cli object encoding "$TBH"); $ITEMS has $(cli hlen "$ITEMS") items;" \
  "$Q has $(cli zcard "$Q")"

eval_usec() {
  cli info commandstats | tr -d '\r' |
    sed -n 's/^cmdstat_eval:calls=[0-9]*,usec=\([0-9]*\),.*/\1/p'
}

# time NAME LUA_BODY: microseconds per execution of LUA_BODY inside a script (min and median)
base=0
time_case() {
  runs=""
  r=0
  while [ $r -lt "$R" ]; do
    cli config resetstat >/dev/null
    cli eval "local item = cjson.decode(ARGV[1]); local entry = ARGV[2]; local result = ARGV[3]
local id = ARGV[4]; local x
for i = 1, $N do $2 end
return 0" 9 "$L" "$TB" "$TBH" "$LOG" "$RES" "$ITEMS" "$Q" "$META" "kb:{c}:scratch" \
      "$ITEM" "$ENTRY" "$RESULT" "$ID" >/dev/null
    runs="$runs $(eval_usec)"
    r=$((r + 1))
  done
  echo "$runs" | tr ' ' '\n' | grep . | sort -n | awk -v n="$N" -v base="$base" -v name="$1" \
    '{ v[NR] = $1 } END { printf "  %-58s %8.2f %8.2f\n", name, v[1] / n - base,
                          v[int((NR + 1) / 2)] / n - base }'
}

echo "server time per operation inside a script, microseconds (N=$N, $R runs; empty loop"
echo "subtracted):"
printf '  %-58s %8s %8s\n' "operation" "fastest" "median"
base=$(cli config resetstat >/dev/null
  cli eval "local x; for i = 1, $N do x = i end return 0" 0 >/dev/null
  eval_usec | awk -v n="$N" '{ printf "%.4f", $1 / n }')
time_case "redis.call TIME (cheapest call)" "x = redis.call('TIME')"
time_case "HGET ledger field (8-field listpack)" "x = redis.call('HGET', KEYS[1], 'gpu_ms:spent')"
time_case "HMGET 3 fields, 460-field listpack (taskbudget)" \
  "x = redis.call('HMGET', KEYS[2], 'task-117:cap', 'task-117:held', 'task-117:spent')"
time_case "HMGET 3 fields, same hash as hashtable" \
  "x = redis.call('HMGET', KEYS[3], 'task-117:cap', 'task-117:held', 'task-117:spent')"
time_case "HINCRBY ledger (listpack; write, AOF)" \
  "x = redis.call('HINCRBY', KEYS[1], 'gpu_ms:held', '1')"
time_case "HINCRBY ledger, Lua number argument" \
  "x = redis.call('HINCRBY', KEYS[1], 'gpu_ms:held', 1)"
time_case "HINCRBY 460-field listpack (taskbudget)" \
  "x = redis.call('HINCRBY', KEYS[2], 'task-117:held', '1')"
time_case "HINCRBY same hash as hashtable" \
  "x = redis.call('HINCRBY', KEYS[3], 'task-117:held', '1')"
time_case "HGET item JSON (50k-item hashtable)" "x = redis.call('HGET', KEYS[6], id)"
time_case "HSET item JSON (50k-item hashtable; write, AOF)" \
  "x = redis.call('HSET', KEYS[6], id, ARGV[1])"
time_case "ZRANGE q 0 0 (50k zset)" "x = redis.call('ZRANGE', KEYS[7], 0, 0)"
time_case "ZRANGE q 0 15 (50k zset; claim scans 16)" "x = redis.call('ZRANGE', KEYS[7], 0, 15)"
time_case "ZADD + ZREM lease-like small zset (2 writes)" \
  "redis.call('ZADD', KEYS[9], 1796000000000, id); redis.call('ZREM', KEYS[9], id)"
time_case "XADD ledger:log entry (~330 B)" "x = redis.call('XADD', KEYS[4], '*', 'entry', entry)"
time_case "XADD results entry (~700 B)" \
  "x = redis.call('XADD', KEYS[5], '*', 'item', id, 'result', result)"
time_case "cjson.decode item (~250 B)" "x = cjson.decode(ARGV[1])"
time_case "cjson.encode item (10 fields)" "x = cjson.encode(item)"
time_case "cjson.encode ledger entry (11 fields, 5 numbers)" \
  "x = cjson.encode({schema = 'kernelbrain.ledger/1', ts_ms = 1796000000000, op = 'reserve',
     currency = 'gpu_ms', amount = 10, charge_id = id .. '#1', who = 'bench-r12',
     available = 999999999990, held = 10, spent = 0, total = 1000000000000})"
time_case "ledger entry by string.format (the prelude's kb_move)" \
  "x = string.format('{\"schema\":\"kernelbrain.ledger/1\",\"ts_ms\":%d,\"op\":\"%s\",' ..
     '\"currency\":\"%s\",\"amount\":%d,\"charge_id\":%s,\"who\":%s,\"available\":%d,' ..
     '\"held\":%d,\"spent\":%d,\"total\":%d}', 1796000000000, 'reserve', 'gpu_ms', 10,
     cjson.encode(id .. '#1'), cjson.encode('bench-r12'), 999999999990, 10, 0, 1000000000000)"
time_case "string.format('%d', n)" "x = string.format('%d', 123456 + i)"
time_case "number to string by concatenation (id .. '#' .. n)" "x = id .. '#' .. (i % 7)"
time_case "tonumber(HGET ...) of the ledger" \
  "x = tonumber(redis.call('HGET', KEYS[1], 'gpu_ms:total'))"
echo "AOF: $(cli info persistence | tr -d '\r' | grep -E '^aof_(current|base)_size')" |
  tr '\n' ' '
echo
