#!/usr/bin/env bash
# kb-launch --cancel mid-run on the real Slurm: four runner tasks throttled to two at once
# (--array=0-3%2) and a redis job. While the two running runners hold leases, --cancel moves
# the campaign to "cancelled" in redis and ends every job: the runners release their leases,
# the scheduler records what was done and ends the campaign, the redis job saves its AOF, the
# runner tasks still waiting never start. From that AOF: no lease and nothing held is left, the
# ledger is exact and the HDF5 files hold exactly the items done.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/lib.sh"
slurm_ready
cid=cancel
# matmul and a copy under another id: four candidates whose timing tiers take seconds, so the
# cancel finds both runners in the middle of an evaluation
cp -r "$REPO_DIR/tasks/host/matmul" "$T/matmul2"
sed -i 's/"id": "matmul"/"id": "matmul2"/' "$T/matmul2/task.json"
slurm_campaign $cid "[\"$REPO_DIR/tasks/host/matmul\", \"$T/matmul2\"]" \
  '"ladder": [{"name": "compile"}, {"name": "smoke"},
    {"name": "screen", "min_samples": 60, "max_samples": 60, "max_seconds": 60, "timeout_seconds": 120},
    {"name": "full", "min_samples": 150, "max_samples": 150, "max_seconds": 90, "timeout_seconds": 180}]'
S=$T/results/$cid/slurm

"$BIN/kb-launch" --slurm --json --runners 4 --throttle 2 "$T/$cid.json" > "$T/launch.json" ||
  fail "kb-launch failed"
R=$(json_get "$T/launch.json" redis.job)
SC=$(json_get "$T/launch.json" scheduler.job)
A=$(json_get "$T/launch.json" runners.job)
SLURM_JOBS+=("$R" "$SC" "$A")
[ "$(json_get "$T/launch.json" runners.array)" = "0-3%2" ] || fail "array $(json_get "$T/launch.json" runners.array)"

wait_until 60 "the redis job's address" test -s "$S/redis/address"
ADDR=$(cat "$S/redis/address")
rcli() {
  REDISCLI_AUTH=$(cat "$S/redis/password") redis-cli --no-auth-warning -h "${ADDR%:*}" -p "${ADDR##*:}" "$@"
}
# two runners evaluating at tier screen or full
two_busy() {
  [ "$(items_jsonl "kb:{$cid}:items" 2> /dev/null | grep '"state": "leased"' |
    grep -c '"tier": [23]')" -ge 2 ]
}
wait_until 120 "two runners evaluating at tier screen or full" two_busy
show_jobs "$R,$SC,$A" | tee "$T/jobs.txt" >&2
[ "$(squeue -h -j "$A" -t RUNNING -o %i | wc -l)" -eq 2 ] || fail "throttle %2 not kept: $(cat "$T/jobs.txt")"

note "kb-launch --cancel"
t0=$(date +%s)
"$BIN/kb-launch" --cancel --json "$T/$cid.json" > "$T/cancel-out.json" || fail "kb-launch --cancel failed"
cat "$T/cancel-out.json" >&2
note "--cancel returned after $(($(date +%s) - t0)) s"
grep -q '"cancelled in redis at ' "$T/cancel-out.json" || fail "campaign not cancelled in redis"
jobs_gone "$R,$SC,$A" || fail "jobs still queued after --cancel: $(show_jobs "$R,$SC,$A")"

ran=0
for i in 0 1 2 3; do
  log=$S/logs/runner-${A}_$i.out
  if [ -f "$log" ] && grep -q "serving campaign $cid" "$log"; then
    ran=$((ran + 1))
    grep -q "kb-runner exited with 0" "$log" || fail "runner $i: $(tail -3 "$log")"
  fi
done
[ "$ran" -eq 2 ] || fail "$ran runner tasks ran, want the 2 the throttle let start"
grep -q "stopping: released" "$S"/logs/runner-*.out || fail "no runner released a lease"
grep -q "campaign $cid cancelled" "$S/logs/scheduler-$SC.out" ||
  fail "the scheduler did not end the campaign: $(tail -5 "$S/logs/scheduler-$SC.out")"
grep -q "redis-server stopped" "$S/logs/redis-$R.out" || fail "redis job: $(tail -3 "$S/logs/redis-$R.out")"

note "from the AOF: cancelled, nothing held, ledger exact, files complete"
rcli() { redis-cli -s "$T/redis/redis.sock" "$@"; } # as tests/lib/common.sh has it
aof_redis "$S/redis"
[ "$(rcli HGET "kb:{$cid}:meta" state)" = cancelled ] || fail "state $(rcli HGET "kb:{$cid}:meta" state)"
[ "$(rcli ZCARD "kb:{$cid}:lease")" -eq 0 ] || fail "leases left"
ledger_exact $cid
ledger_report $cid
done_n=$(rcli HGET "kb:{$cid}:meta" done)
open_n=$(rcli HGET "kb:{$cid}:meta" open)
[ "$open_n" -gt 0 ] || fail "the cancel came too late to leave anything undone"
rows=$($KB_PY -c 'import h5py,sys; print(sum(len(h5py.File(f,"r")["evaluations"]) for f in sys.argv[1:]))' \
  "$T/results/$cid"/*.h5)
[ "$rows" -eq "$done_n" ] || fail "$rows rows in the files, $done_n items done"
grep -q '"state": "cancelled"' "$T/results/$cid/summary.json" || fail "summary.json not cancelled"
note "$done_n items done, $open_n left undone"
echo "PASS"
