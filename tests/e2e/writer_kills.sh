#!/usr/bin/env bash
# The HDF5 writer under kill -9 (issue 5, item 3). A real campaign runs (host backend, one real
# runner, eight tasks built from tasks/host/sum with 24 seeds each) while the real kb-scheduler
# is killed with SIGKILL again and again. The runner is paused (SIGSTOP) while the scheduler is
# down, so the campaign advances only while a scheduler runs and outlives the kills on a fast
# machine as on a slow one. Half of the kills land at a random moment, half right after a new
# result reached the stream (when the scheduler is storing, flushing and acknowledging).
# After every kill, before the restart:
#   - h5py reads each file as the killed writer left it, as a SWMR reader (check_writer.py
#     --swmr): no (candidate, tier, attempt) twice, every result redis counts as acknowledged
#     in its file;
#   - every other kill, each file is also opened as the restarted scheduler opens it
#     (h5_recover: kb__store_open), then read by h5dump and by a plain h5py open, with the same
#     checks; on the other kills the restarted scheduler recovers the files itself;
#   - once, mid-way, one file is overwritten with garbage, next to the garbage a killed rebuild
#     would leave: the restarted scheduler must rebuild it from the results redis retains
#     (checked at the next kill, with the bad file kept aside).
# A second runner, tests/e2e/profile_runner.c, posts results with CUPTI profiles (one every 0.2 s,
# paused like the real runner), so the kills also land while kernel records are written:
# check_writer.py checks every /profiles/kernels row belongs to exactly one committed evaluation.
# After the kills the campaign is drained; it must end done, with the ledger exact and the files
# holding every result once, and they must export as a benchmark pool that kb-bench-ladder
# replays.
# "eta": 1 sends every candidate up every tier, so the campaign's length does not depend on the
# promotion policy (it must outlive the kills).
# KB_WRITER_KILLS sets the number of kills (ctest: the CMake cache variable, default 20).
# usage: writer_kills.sh BIN_DIR H5_RECOVER PROFILE_RUNNER
BIN=$1
RECOVER=$2
PROFILER_BIN=$3
source "$(dirname "$0")/../lib/common.sh"
KILLS=${KB_WRITER_KILLS:-20}
CORRUPT_AT=$((KILLS / 2))
start_redis

# Eight tasks of small sums: the naive baseline and 24 unrolled variants each.
TASKS=(w1 w2 w3 w4 w5 w6 w7 w8)
task_dirs=""
for task in "${TASKS[@]}"; do
  task_dirs="$task_dirs${task_dirs:+, }\"$T/tasks/$task\""
  mkdir -p "$T/tasks/$task/seeds"
  cp "$REPO_DIR/tasks/host/sum/oracle.c" "$REPO_DIR/tasks/host/sum/reference.c" "$T/tasks/$task/"
  cp "$REPO_DIR/tasks/host/sum/seeds/naive.c" "$T/tasks/$task/seeds/"
  seeds='{"name": "naive", "source": "seeds/naive.c"}'
  for k in $(seq 24); do
    acc=$((1 << (k % 6)))
    { echo "/* variant $k of $task */"
      sed "s/^#define ACC 16$/#define ACC $acc/" "$REPO_DIR/tasks/host/sum/seeds/unrolled.c"
    } > "$T/tasks/$task/seeds/v$k.c"
    seeds="$seeds, {\"name\": \"v$k\", \"source\": \"seeds/v$k.c\"}"
  done
  $KB_PY - "$REPO_DIR/tasks/host/sum/task.json" "$T/tasks/$task/task.json" "$task" "[$seeds]" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["id"] = sys.argv[3]
spec["inputs"][0]["shape"] = [65536]
spec["seeds"] = json.loads(sys.argv[4])
json.dump(spec, open(sys.argv[2], "w"), indent=2)
PY
done
cat > "$T/wk.json" <<JSON
{
  "schema": "kernelbrain.campaign/1",
  "id": "wk",
  "backend": "host",
  "tasks": [$task_dirs],
  "budget": {"gpu_seconds": 3600},
  "lease_seconds": 30,
  "results_dir": "$T/results",
  "ladder": [{"name": "compile"}, {"name": "smoke"},
             {"name": "screen", "max_seconds": 0.2},
             {"name": "full", "min_samples": 10, "max_seconds": 0.3}],
  "search": {"stagnation_evaluations": 0, "eta": 1}
}
JSON
"$BIN/kb-submit" -q submit "$T/wk.json" > /dev/null

start_sched() {
  "$BIN/kb-scheduler" --campaign wk --cache "$T/sched" 2>> "$T/sched.log" &
  SCHED=$!; BG_PIDS+=($SCHED)
}
results() { rcli XLEN 'kb:{wk}:results'; }
# Whether the scheduler logged fixed string $1 after line $mark. grep reads the whole log (no -q):
# with pipefail, grep -q quitting at its first match would let tail die of SIGPIPE mid-write and
# fail the pipeline although the line is there (the clean-clone CI of 584dc20 failed on it).
logged_since_mark() { tail -n "+$((mark + 1))" "$T/sched.log" | grep -F -- "$1" > /dev/null; }
files() { for t in "${TASKS[@]}"; do [ -e "$T/results/wk/$t.h5" ] && echo "$T/results/wk/$t.h5"; done; true; }

"$BIN/kb-runner" --campaign wk --cache "$T/cache" --name r1 2>> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
"$PROFILER_BIN" wk 1000 200 > "$T/profiled" 2> "$T/profiler.log" &
PROFILER=$!; BG_PIDS+=($PROFILER)
start_sched
skip=()
mark=0
for k in $(seq "$KILLS"); do
  if [ $((k % 2)) -eq 0 ]; then
    before=$(results)
    for _ in $(seq 200); do [ "$(results)" -gt "$before" ] && break; sleep 0.02; done
    sleep "0.0$((RANDOM % 6))"
  else
    sleep "$((RANDOM % 2)).$((RANDOM % 10))"
  fi
  kill -0 "$SCHED" 2>/dev/null ||
    fail "the scheduler ended before kill $k (campaign too short?): $(tail -3 "$T/sched.log")"
  kill -9 "$SCHED"; wait "$SCHED" 2>/dev/null || true
  kill -STOP "$RUNNER" "$PROFILER"
  note "kill $k after $(results) results"
  mapfile -t fs < <(files)
  if [ ${#skip[@]} -gt 0 ]; then
    # the file overwritten at the previous kill: rebuilt by the restarted scheduler by now
    logged_since_mark "/${skip[0]}.h5: rebuilt from" ||
      fail "garbage file ${skip[0]}.h5 not rebuilt: $(tail -5 "$T/sched.log")"
    ls "$T/results/wk/${skip[0]}.h5".corrupt-* > /dev/null || fail "the bad file was not kept aside"
    [ ! -e "$T/results/wk/${skip[0]}.h5.rebuild" ] || fail "the rebuild left its temporary file"
    skip=()
  fi
  # As the killed writer left them, through h5py's SWMR reader; then, every other kill,
  # recovered as the restart recovers them and read by h5dump and a plain h5py open (the other
  # kills leave the recovery to the restarted scheduler itself).
  $KB_PY "$TESTS_DIR/e2e/check_writer.py" "$T/redis/redis.sock" wk "$T/results/wk" "${TASKS[@]}" \
    --swmr > "$T/check.json" || fail "after kill $k (SWMR read)"
  if [ ${#fs[@]} -gt 0 ] && [ $((k % 2)) -eq 0 ]; then
    "$RECOVER" "${fs[@]}" > /dev/null || fail "a file could not be recovered after kill $k"
    for f in "${fs[@]}"; do
      h5dump -d /evaluations "$f" > /dev/null || fail "h5dump cannot read $f after kill $k"
    done
    $KB_PY "$TESTS_DIR/e2e/check_writer.py" "$T/redis/redis.sock" wk "$T/results/wk" "${TASKS[@]}" \
      > "$T/check.json" || fail "after kill $k (recovered)"
  fi
  if [ "$k" -eq "$CORRUPT_AT" ] && [ ${#fs[@]} -gt 0 ]; then
    victim=$(basename "${fs[0]}" .h5)
    head -c 4096 /dev/urandom > "${fs[0]}"
    head -c 1000 /dev/urandom > "${fs[0]}.rebuild" # as if an earlier rebuild had been killed
    note "overwrote $victim.h5 with 4 KiB of garbage (and left a half-made $victim.h5.rebuild)"
    skip=("$victim")
    mark=$(wc -l < "$T/sched.log") # its rebuild is looked for in what the restart logs
  fi
  start_sched
  kill -CONT "$RUNNER" "$PROFILER"
  if [ ${#skip[@]} -gt 0 ]; then # let it get to the rebuild before the next kill
    # (the victim's own line, logged after the overwrite: a file the killed writer had not
    # made yet is rebuilt too, the victim itself perhaps at an earlier kill)
    for _ in $(seq 300); do logged_since_mark "/${skip[0]}.h5: rebuilt from" && break; sleep 0.1; done
  fi
done
note "$KILLS kills done: $(cat "$T/check.json")"
[ "$(grep -c 'rebuilt from' "$T/sched.log" || true)" -ge 1 ] || fail "no file was rebuilt"
# The rest of the campaign would add nothing: drain it (evaluations under way are recorded).
"$BIN/kb-submit" -q drain wk > /dev/null
wait_pid "$SCHED" 240 || fail "scheduler failed: $(tail -5 "$T/sched.log")"
wait_pid "$RUNNER" 30 || fail "runner failed: $(tail -5 "$T/runner.log")"
wait_pid "$PROFILER" 60 || fail "profile_runner failed: $(cat "$T/profiler.log")"
note "profile_runner posted $(cat "$T/profiled") results"
[ "$(rcli HGET 'kb:{wk}:meta' state)" = done ] || fail "campaign not done"
ledger_exact wk
done_n=$(rcli HGET 'kb:{wk}:meta' done)
dead=$(rcli HGET 'kb:{wk}:meta' dead)
mapfile -t done_tasks < <(files | xargs -n1 basename | sed 's/\.h5$//')
$KB_PY "$TESTS_DIR/e2e/check_results.py" "$T/results/wk" --campaign wk --tasks "${done_tasks[@]}" \
  --min-evaluations 1 --done $((done_n + dead))
$KB_PY "$TESTS_DIR/e2e/check_writer.py" "$T/redis/redis.sock" wk "$T/results/wk" "${TASKS[@]}" > /dev/null
for task in "${done_tasks[@]}"; do
  h5dump -H "$T/results/wk/$task.h5" > /dev/null || fail "h5dump cannot read $task.h5"
done
note "the files export as a benchmark pool (tools/export_pool.py) that kb-bench-ladder replays"
$KB_PY "$REPO_DIR/tools/export_pool.py" "$T/results/wk" -o "$T/pool.csv"
# (a task whose baseline was never timed before the drain is left out, with a message)
[ "$(grep -c ',1,' "$T/pool.csv")" -ge 1 ] || fail "pool: no task with a timed baseline"
"$BIN/kb-bench-ladder" --json-only "$T/pool.csv" | grep -q '^{"gpu_s_ratio":' ||
  fail "kb-bench-ladder cannot replay the exported pool"
echo "PASS"
