#!/usr/bin/env bash
# The exact ledger and results only from leases, on the real programs: a host campaign whose
# tiers' cost_ms (the planning estimates) are far below what an evaluation takes, so every
# evaluation costs more than the old clipped reservation; forged, replayed and mismatched entries
# planted on the results stream while the real scheduler runs. Then:
#  - every audit-stream entry satisfies available + held + spent = total, and the replay of the
#    stream gives the ledger hash;
#  - the ledger's spent equals the sum of cost_ms over the HDF5 files' /evaluations rows (h5py);
#  - summary.json, `kb-submit status --json`, the report's header and its burn-down end show
#    that same figure;
#  - every planted entry was dropped (none in any file) and counted in status; honest ones landed.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
make_campaign led '"ladder": [{"name": "compile"}, {"name": "smoke", "cost_ms": 1},
    {"name": "screen", "cost_ms": 1}, {"name": "full", "cost_ms": 1}]'
"$BIN/kb-submit" submit "$T/led.json" > /dev/null

note "scheduler and a runner that leaves after 3 evaluations"
"$BIN/kb-scheduler" --campaign led --cache "$T/sched" 2> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
"$BIN/kb-runner" --campaign led --cache "$T/cache" --name r1 --max-items 3 2> "$T/runner1.log" ||
  fail "runner 1: $(tail -5 "$T/runner1.log")"

note "plant forged entries on the results stream"
$KB_PY - "$T/redis/redis.sock" > "$T/planted" <<'PY'
import json, socket, sys
class R:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX); self.s.connect(path); self.f = self.s.makefile("rb")
    def cmd(self, *a):
        out = b"*%d\r\n" % len(a)
        for x in a:
            x = x if isinstance(x, bytes) else str(x).encode()
            out += b"$%d\r\n%s\r\n" % (len(x), x)
        self.s.sendall(out); return self.read()
    def read(self):
        line = self.f.readline()[:-2]; t, rest = line[:1], line[1:]
        if t in (b"+", b":"): return int(rest) if t == b":" else rest.decode()
        if t == b"-": raise RuntimeError(rest.decode())
        if t == b"$":
            n = int(rest)
            if n < 0: return None
            d = self.f.read(n + 2)[:-2]; return d.decode()
        if t == b"*":
            n = int(rest); return None if n < 0 else [self.read() for _ in range(n)]
r = R(sys.argv[1]); key = "kb:{led}:results"
honest = r.cmd("XRANGE", key, "-", "+")
assert len(honest) >= 3, honest
eid, f = honest[-1]; f = dict(zip(f[::2], f[1::2]))
# complete_claim's entries name no runner or attempt (the done item has them): the result's
res = json.loads(f["result"])
who, att = f.get("runner", res["runner"]), f.get("attempt", str(res["attempt"]))
planted = 0
def add(fields):
    global planted
    r.cmd("XADD", key, "*", *[x for kv in fields.items() for x in kv]); planted += 1
add(f)                                                  # a replay of an honest entry
add(dict(f, runner="mallory"))                          # another runner
add(dict(f, attempt=str(int(att) + 1)))                 # another attempt
res = json.loads(f["result"]); res["candidate"] = "f" * 64
add({"item": "f" * 64 + ":1", "result": json.dumps(res), "charge": "f" * 64 + ":1#1",
     "runner": who, "attempt": "1"})                    # an unknown item
add({"item": f["item"], "result": f["result"]})         # no lease named (an old-style XADD)
res = json.loads(f["result"]); res["status"] = "ok"; res["reason"] = ""; res["cost_ms"] = 0
add(dict(f, result=json.dumps(res)))                    # a doctored result of a settled lease
print(planted)
PY
planted=$(cat "$T/planted")

note "a second runner finishes the campaign"
"$BIN/kb-runner" --campaign led --cache "$T/cache" --name r2 2> "$T/runner2.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
wait_pid $SCHED 300 || fail "scheduler failed: $(tail -5 "$T/sched.log")"
wait_pid $RUNNER 60 || fail "runner 2 exit code $?: $(tail -5 "$T/runner2.log")"
[ "$(rcli HGET 'kb:{led}:meta' state)" = done ] || fail "campaign not done"

note "figures"
spent=$(rcli HGET 'kb:{led}:ledger' gpu_ms:spent)
total=$(rcli HGET 'kb:{led}:ledger' gpu_ms:total)
"$BIN/kb-submit" --json status led > "$T/status.json"
"$BIN/kb-submit" report "$T/results/led" -f json -o "$T/report.json"
"$BIN/kb-submit" report "$T/results/led" -f html -o "$T/report.html"
ledger_jsonl 'kb:{led}:ledger:log' "$T/ledger.jsonl"
$KB_PY - "$T" "$spent" "$total" "$planted" "$(rcli HGET 'kb:{led}:meta' done)" "$(rcli HGET 'kb:{led}:meta' dead)" <<'PY' || fail "ledger invariants"
import glob, json, re, sys, h5py
T, spent, total, planted, done, dead = sys.argv[1], *map(int, sys.argv[2:])
def fail(m): print("ledger.sh: " + m, file=sys.stderr); sys.exit(1)
rows, cost = 0, 0
for path in sorted(glob.glob(T + "/results/led/*.h5")):
    with h5py.File(path, "r") as h:
        ev = h["evaluations"][:]
        rows += len(ev); cost += int(ev["cost_ms"].sum())
        bad = [e for e in ev if e["runner"].decode() == "mallory" or e["candidate"].decode() == "f" * 64]
        if bad: fail(f"{path}: a planted result was stored: {bad[0]}")
print(f"ledger spent {spent} ms, sum of cost_ms over {rows} rows {cost} ms, total {total}", file=sys.stderr)
if rows != done + dead: fail(f"{rows} rows, redis counted {done} done + {dead} dead")
if spent != cost: fail(f"ledger spent {spent} != sum of cost_ms {cost}")
if cost <= rows: fail(f"evaluations cost {cost} ms in {rows} rows: they do not overrun 1 ms estimates")
# every audit entry: the invariant; the replay: the hash
b = {}
for line in open(T + "/ledger.jsonl"):
    e = json.loads(line); c = e["currency"]; x = b.setdefault(c, [0, 0, 0, 0])
    a = e["amount"]; op = e["op"]
    d = {"fund": (a, 0, 0, a), "reserve": (-a, a, 0, 0), "post": (0, -a, a, 0),
         "void": (a, -a, 0, 0), "overrun": (-a, 0, a, 0)}[op]
    for i in range(4): x[i] += d[i]
    if e["available"] + e["held"] + e["spent"] != e["total"]: fail(f"audit entry breaks the invariant: {line}")
    if [e["available"], e["held"], e["spent"], e["total"]] != x: fail(f"replay {x} != entry {line}")
if b["gpu_ms"] != [total - spent, 0, spent, total]: fail(f"replay {b['gpu_ms']} != ledger hash")
st = json.load(open(T + "/status.json")); sm = json.load(open(f"{T}/results/led/summary.json"))
rep = json.load(open(T + "/report.json"))
html = open(T + "/report.html").read()
m = re.search(r"Budget: ([0-9.]+) of [0-9.]+ gpu_seconds spent", html)
pts = re.search(r'"label":\s*"gpu_seconds left",\s*"points":\s*(\[[^\]]*\])', html)
burn_end = total - round(json.loads(pts.group(1))[-1]["y"] * 1000) if pts else None
figs = {"status": st["gpu_ms"]["spent"], "summary.json": sm["gpu_ms"]["spent"],
        "report json": rep["gpu_ms"]["spent"], "report rows": rep["gpu_ms"]["evaluations"],
        "report header": round(float(m.group(1)) * 1000) if m else None, "burn-down end": burn_end}
print("figures:", figs, file=sys.stderr)
if any(v != spent for v in figs.values()): fail(f"figures disagree with the ledger's {spent}: {figs}")
if st["stray"] != planted: fail(f"status counts {st['stray']} stray results, {planted} were planted")
if sm["stray_results"] != planted: fail(f"summary.json counts {sm['stray_results']} stray results")
# the reservations (kb_tier_reserve_ms) bound every evaluation: nothing overran
if st["gpu_ms"]["overruns"] != 0 or sm["gpu_ms"]["overruns"] != 0: fail(f"overruns: {st['gpu_ms']}")
PY
grep -q "dropped as forged or stray" "$T/sched.log" || fail "no forged entry logged"
[ "$(rcli HLEN 'kb:{led}:stray')" -eq "$planted" ] || fail "stray hash: $(rcli HGETALL 'kb:{led}:stray')"
[ "$(rcli XLEN 'kb:{led}:results')" -eq $(( $(rcli HGET 'kb:{led}:meta' done) + $(rcli HGET 'kb:{led}:meta' dead) + planted )) ] ||
  fail "results stream holds more than the honest entries and the planted ones"
pending=$(rcli XPENDING 'kb:{led}:results' scheduler | head -1)
[ "$pending" -eq 0 ] || fail "$pending entries left unacknowledged"
"$BIN/kb-submit" status led > "$T/status.txt"
grep -q "$planted forged or stray results dropped" "$T/status.txt" || fail "status text: $(cat "$T/status.txt")"
echo "PASS"
