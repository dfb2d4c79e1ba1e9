#!/usr/bin/env bash
# (b) A runner node lost mid-campaign: while the runner on kbmn-n4 holds leases of timed items,
# every process in kbmn-n4's network namespace (slurmd, the job's slurmstepd, shell and kb-runner,
# its sandbox) gets kill -9, as when a node loses power. Its leases expire (lease_seconds 5) and
# are reaped; the items run again on kbmn-n3 with attempt 2; Slurm marks the node down. The
# campaign completes: every item once, nothing lost, nothing charged twice, the ledger exact.
# Then kbmn-n4's slurmd starts again and the node returns for the next test.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/lib.sh"
mn_ready
revive() {
  bash "$MN_SCRIPT" start-node "$MN_STATE" n4 || true
  mn_cleanup
}
trap revive EXIT
cid=mnkill$$  # a fresh campaign id: the Redis keeps the campaigns of earlier runs
t0=$(date +%s)
mn_campaign $cid 5 "$(mn_tasks matmul 3)" 20
mn_launch $cid 2
wait_until 30 "two runner tasks running" bash -c "[ \$(nsenter --net=/run/netns/kbmn-ctl squeue -h -j $A -t RUNNING -o %i | wc -l) -eq 2 ]"
task=$(runner_nodes | awk '$2 == "kbmn-n4" {print $1}')
[ -n "$task" ] || fail "no runner task on kbmn-n4: $(runner_nodes)"
victim=slurm-${A}_$task

# held_by NAME [MIN_TIER]: the items NAME holds leased at MIN_TIER (default 1: a timed tier,
# smoke or screen) or above, one per line, into $T/held.txt
held_by() {
  items_jsonl "kb:{$cid}:items" | $KB_PY -c 'import json, sys
for l in sys.stdin:
    i = json.loads(l)
    if i.get("state") == "leased" and i.get("runner") == sys.argv[1] and i["tier"] >= int(sys.argv[2]):
        print("%s:%d" % (i["cand"], i["tier"]))' "$1" "${2:-1}" > "$T/held.txt"
  [ -s "$T/held.txt" ]
}
wait_until 60 "$victim to hold a lease at a timed tier" held_by "$victim"
note "killing node kbmn-n4 while $victim holds $(wc -l < "$T/held.txt") timed item(s)"
killed=$(bash "$MN_SCRIPT" kill-node "$MN_STATE" n4) || fail "kill-node failed"
t_kill=$(date +%s)
# the leases it held when it died (still there: they expire 5 s later): the runner may have
# completed an item it held a moment before the kill, which is then rightly its own row
held_by "$victim" 0 || fail "$victim held no lease when it was killed"
note "$victim held $(wc -l < "$T/held.txt") item(s) when killed"
note "$killed"
nkilled=$(awk '{print $2}' <<< "$killed")
[ "$nkilled" -ge 4 ] || fail "only $nkilled processes in kbmn-n4: $killed"
[ -z "$(ip netns pids kbmn-n4)" ] || fail "processes left in kbmn-n4"
node_down() { mn sinfo -h -N -n kbmn-n4 -o %T | grep -q '^down'; }
wait_until 40 "Slurm to mark kbmn-n4 down" node_down
down_s=$(($(date +%s) - t_kill))
mn_finish $cid 150

# every item the lost runner held ran again on kbmn-n3 as attempt 2, once
for r in $(items_jsonl "kb:{$cid}:items" | $KB_PY -c 'import json,sys
print(" ".join(sorted({json.loads(l).get("runner", "") for l in sys.stdin} - {""})))'); do
  echo "$r $(runner_node "$r")"
done > "$T/runner-nodes.txt"
$KB_PY - "$T/results/$cid" "$T/held.txt" "$victim" "$T/runner-nodes.txt" << 'PY' || fail "an item of the lost runner was not re-run elsewhere"
import glob, sys, h5py
held = {l.strip() for l in open(sys.argv[2]) if l.strip()}
node = dict(l.split() for l in open(sys.argv[4]) if len(l.split()) == 2)
rows = {}
for f in glob.glob(sys.argv[1] + "/*.h5"):
    with h5py.File(f, "r") as h:
        for e in h["evaluations"][:]:
            rows["%s:%d" % (e["candidate"].decode(), e["tier"])] = (e["runner"].decode(), int(e["attempt"]))
for item in held:
    runner, attempt = rows.get(item, ("none", 0))
    if runner == sys.argv[3] or node.get(runner) != "kbmn-n3" or attempt < 2:
        sys.exit(f"item {item[:12]}...{item[-2:]}: row by {runner} on {node.get(runner)}, attempt {attempt}")
PY
[ "$RETRIED" -ge "$(wc -l < "$T/held.txt")" ] || fail "$RETRIED retried rows for $(wc -l < "$T/held.txt") reaped items"
rec=$(mn scontrol -o show job "${A}_$task" 2> /dev/null | grep -o 'JobState=[A-Z_]* .*Restarts=[0-9]*' | awk '{print $1}')
restarts=$(mn scontrol -o show job "${A}_$task" 2> /dev/null | grep -o 'Restarts=[0-9]*' | head -1)

bash "$MN_SCRIPT" start-node "$MN_STATE" n4 || fail "slurmd of kbmn-n4 did not start again"
node_idle() { mn sinfo -h -N -n kbmn-n4 -o %T | grep -q '^idle$'; }
wait_until 40 "kbmn-n4 to return" node_idle
trap mn_cleanup EXIT
echo "multinode node_kill: items=$ITEMS rows=$ROWS duplicates=0 ledger_spent_ms=$SPENT=rows_cost_ms killed_processes=$nkilled leases_reaped=$(wc -l < "$T/held.txt") rerun_on=kbmn-n3 retried=$RETRIED node_down_after_s=$down_s lost_task=${rec:-?},${restarts:-?} runner_nodes=$NODES reconnects=$RECONNECTS seconds=$(($(date +%s) - t0))"
