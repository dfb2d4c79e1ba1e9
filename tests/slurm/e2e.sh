#!/usr/bin/env bash
# kb-launch --slurm end to end on the real Slurm: a redis job, the scheduler job and an 8-task
# runner array (host backend, fake GPUs) run the built-in host tasks to the end; every job
# leaves the queue by itself. Then, from the AOF the redis job left: the campaign is done,
# every result is in the HDF5 files once (rows == items done), the ledger is exact. Launched
# again, the redis job resumes from its AOF and the jobs find the campaign done and leave.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/lib.sh"
slurm_ready
slurm_campaign e2e "[\"$REPO_DIR/tasks/host/sum\", \"$REPO_DIR/tasks/host/matmul\"]"
S=$T/results/e2e/slurm

note "kb-launch --slurm with 8 runners and a redis job"
# what a cluster user puts there: module loads, and HDF5_USE_FILE_LOCKING=FALSE for NFS/Lustre
printf 'export HDF5_USE_FILE_LOCKING=FALSE\necho "setup sourced: $SLURM_JOB_ID" >&2\n' > "$T/setup.sh"
t0=$(date +%s)
"$BIN/kb-launch" --slurm --json --runners 8 --redis-job --setup "$T/setup.sh" "$T/e2e.json" \
  > "$T/launch.json" || fail "kb-launch --slurm failed"
R=$(json_get "$T/launch.json" redis.job)
SC=$(json_get "$T/launch.json" scheduler.job)
A=$(json_get "$T/launch.json" runners.job)
SLURM_JOBS+=("$R" "$SC" "$A")
[ "$(json_get "$T/launch.json" runners.array)" = 0-7 ] || fail "array: $(cat "$T/launch.json")"
cmp -s <($KB_PY -m json.tool "$T/launch.json") <($KB_PY -m json.tool "$S/jobs.json") ||
  fail "jobs.json differs from what kb-launch printed"
grep -qx "KB_JOB_RUNNERS=$A" "$S/jobs.env" || fail "jobs.env: $(cat "$S/jobs.env")"
[ "$(stat -c %a "$S/redis/password")" = 600 ] || fail "password file mode $(stat -c %a "$S/redis/password")"

# the job list while it runs: all eight runner tasks at once (the node has 8 fake GPUs)
running() { [ "$(squeue -h -j "$A" -t RUNNING -o %i | wc -l)" -eq 8 ]; }
wait_until 60 "8 runner tasks running" running
show_jobs "$R,$SC,$A" | tee "$T/jobs.txt" >&2
wait_jobs_gone "$R,$SC,$A" 240
note "all jobs left the queue after $(($(date +%s) - t0)) s"

note "outputs of every job"
for i in $(seq 0 7); do
  log=$S/logs/runner-${A}_$i.out
  grep -q "runner slurm-${A}_$i serving campaign e2e" "$log" || fail "runner $i never served: $(tail -3 "$log" 2>&1)"
  grep -q "campaign e2e is done; leaving" "$log" || fail "runner $i did not leave at the end: $(tail -3 "$log")"
  grep -q "kb-runner exited with 0" "$log" || fail "runner $i: $(tail -3 "$log")"
done
for log in "$S"/logs/*.out; do grep -q "setup sourced" "$log" || fail "$log: --setup not sourced"; done
grep -q "campaign e2e done: every candidate evaluated" "$S/logs/scheduler-$SC.out" ||
  fail "scheduler: $(tail -5 "$S/logs/scheduler-$SC.out")"
grep -q "redis serving at $(hostname):" "$S/logs/redis-$R.out" || fail "redis: $(cat "$S/logs/redis-$R.out")"
grep -q "redis-server stopped" "$S/logs/redis-$R.out" || fail "redis job did not stop its server"
[ ! -e "$S/redis/address" ] || fail "redis job left its address file behind"
for j in "$R" "$SC" "$A"; do job_record "$j"; done | tee "$T/records.txt" >&2
! grep -v "JobState=COMPLETED" "$T/records.txt" | grep JobId > /dev/null || fail "a job did not complete"

note "the campaign, from the AOF the redis job left"
aof_redis "$S/redis"
[ "$(rcli HGET 'kb:{e2e}:meta' state)" = done ] || fail "campaign state $(rcli HGET 'kb:{e2e}:meta' state)"
[ "$(rcli ZCARD 'kb:{e2e}:lease')" -eq 0 ] || fail "leases left"
ledger_exact e2e
ledger_report e2e
done_n=$(rcli HGET 'kb:{e2e}:meta' done)
dead=$(rcli HGET 'kb:{e2e}:meta' dead)
[ "$dead" -eq 0 ] || fail "$dead items dead-lettered"
$KB_PY "$TESTS_DIR/e2e/check_results.py" "$T/results/e2e" --campaign e2e --tasks sum matmul \
  --min-evaluations 6 --baseline-tier 3 --all-ok --done "$done_n"
runners=$(rcli HKEYS 'kb:{e2e}:runners' | grep -c "^slurm-${A}_" || true)
note "$done_n items done by $runners runners (of 8 that served)"
aof_redis_stop

note "launched again: the redis job resumes from its AOF, the jobs find the campaign done"
"$BIN/kb-launch" --slurm --json --runners 2 "$T/e2e.json" > "$T/again.json" || fail "relaunch failed"
R2=$(json_get "$T/again.json" redis.job)
SC2=$(json_get "$T/again.json" scheduler.job)
A2=$(json_get "$T/again.json" runners.job)
SLURM_JOBS+=("$R2" "$SC2" "$A2")
wait_jobs_gone "$R2,$SC2,$A2" 120
grep -q "campaign e2e is in redis already: resuming it" "$S/logs/scheduler-$SC2.out" ||
  fail "second scheduler did not resume: $(tail -5 "$S/logs/scheduler-$SC2.out")"
grep -q "campaign e2e done" "$S/logs/scheduler-$SC2.out" || fail "second scheduler: $(tail -3 "$S/logs/scheduler-$SC2.out")"
aof_redis "$S/redis"
[ "$(rcli HGET 'kb:{e2e}:meta' state)" = done ] || fail "state after the relaunch"
[ "$(rcli HGET 'kb:{e2e}:meta' done)" -eq "$done_n" ] || fail "items done changed on relaunch"
ledger_exact e2e
$KB_PY "$TESTS_DIR/e2e/check_results.py" "$T/results/e2e" --campaign e2e --tasks sum matmul \
  --min-evaluations 6 --done "$done_n" > /dev/null
echo "PASS"
