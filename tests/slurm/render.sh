#!/usr/bin/env bash
# kb-launch --slurm --dry-run (no Slurm needed): the job scripts it renders from the templates
# carry the #SBATCH lines asked for, are valid bash, forward signals without trapping SIGCONT,
# wait with `cmd & wait $!`, keep the password out of every script (0600 file); bad options and
# campaigns are refused with the documented exit codes, and nothing is submitted.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/lib.sh"
slurm_campaign render "[\"$REPO_DIR/tasks/host/sum\", \"$REPO_DIR/tasks/host/matmul\"]"
S=$T/results/render/slurm
export PATH="$T/nobin:$PATH" # sbatch here would fail the test: a dry run must not submit
mkdir -p "$T/nobin"
for c in sbatch squeue scancel; do printf '#!/bin/sh\necho "%s called" >&2\nexit 99\n' "$c" > "$T/nobin/$c"; done
chmod +x "$T/nobin"/*

"$BIN/kb-launch" --slurm --dry-run --runners 8 --throttle 4 --partition gpu --cpu-partition cpu \
  --time 2:00:00 --account proj-1 --gres gpu:h200:1 "$T/render.json" > "$T/out.txt" 2> "$T/err.txt" ||
  fail "dry run failed: $(cat "$T/err.txt")"
[ ! -s "$T/err.txt" ] || fail "dry run wrote to stderr: $(cat "$T/err.txt")"
grep -q "sbatch --parsable --dependency=after:<scheduler> --kill-on-invalid-dep=yes $S/runners.sbatch" \
  "$T/out.txt" || fail "no runner sbatch line: $(cat "$T/out.txt")"
for f in kb-job.sh redis.sbatch scheduler.sbatch runners.sbatch; do
  [ -f "$S/$f" ] || fail "$f not written"
  bash -n "$S/$f" || fail "$f is not valid bash"
  ! grep -q '@[A-Z_]*@' "$S/$f" || fail "$f keeps a placeholder: $(grep -o '@[A-Z_]*@' "$S/$f")"
  ! grep -Eq "trap .*(CONT|SIGCONT)" "$S/$f" || fail "$f traps SIGCONT"
  ! grep -qF "$(cat "$S/redis/password")" "$S/$f" || fail "$f holds the password"
done
want() { grep -qxF -- "$2" "$S/$1" || fail "$1 lacks \"$2\": $(grep '^#SBATCH' "$S/$1")"; }
want runners.sbatch "#SBATCH --array=0-7%4"
want runners.sbatch "#SBATCH --gres=gpu:h200:1"
want runners.sbatch "#SBATCH --signal=B:USR1@120"
want runners.sbatch "#SBATCH --requeue"
want runners.sbatch "#SBATCH --partition=gpu"
want runners.sbatch "#SBATCH --time=2:00:00"
want runners.sbatch "#SBATCH --account=proj-1"
want runners.sbatch "#SBATCH --open-mode=append"
want runners.sbatch "#SBATCH --output=$S/logs/runner-%A_%a.out"
want scheduler.sbatch "#SBATCH --partition=cpu"
want redis.sbatch "#SBATCH --partition=cpu"
want redis.sbatch "#SBATCH --requeue"
! grep -q -- "--gres" "$S/scheduler.sbatch" "$S/redis.sbatch" || fail "a CPU job asks for a GPU"
# the Redis job's config gets kb_redis_server_settings (kb/redis.h): what its printf line writes
conf=$(bash -c "$(grep -m1 "^ *printf '%s\\\\n' " "$S/redis.sbatch")")
for line in "appendonly yes" "appendfsync everysec" "maxmemory-policy noeviction" \
  "hash-max-listpack-entries 128" 'save ""'; do
  grep -qxF -- "$line" <<< "$conf" || fail "redis.sbatch's config lacks '$line': $conf"
done
grep -q "trap 'kb_forward USR1' USR1" "$S/kb-job.sh" || fail "USR1 is not forwarded"
grep -q "trap 'kb_forward TERM' TERM" "$S/kb-job.sh" || fail "TERM is not forwarded"
grep -A2 '^kb_run() {' "$S/kb-job.sh" | grep -q '"\$@" &' || fail "kb_run does not run in the background"
grep -q 'wait "\$kb_child"' "$S/kb-job.sh" || fail "no wait on the child"
grep -qx "KB_CAMPAIGN='render'" "$S/kb-job.sh" || fail "campaign id not quoted: $(grep KB_CAMPAIGN= "$S/kb-job.sh")"
[ "$(stat -c %a "$S/redis/password")" = 600 ] || fail "password mode $(stat -c %a "$S/redis/password")"
[ "$(stat -c %a "$S/redis")" = 700 ] || fail "redis folder mode $(stat -c %a "$S/redis")"
[ ! -e "$S/jobs.json" ] || fail "a dry run recorded jobs"

# the runners' CPUs: the compile-ahead pool's compilers plus one (host campaign: 2); redis and
# the scheduler 1
want runners.sbatch "#SBATCH --cpus-per-task=2"
want scheduler.sbatch "#SBATCH --cpus-per-task=1"
want redis.sbatch "#SBATCH --cpus-per-task=1"

note "per-job options: --time, --qos, --constraint, --mem, --cpus-per-task, --sbatch-arg"
"$BIN/kb-launch" --slurm --dry-run --runners 2 --partition gpu --backend cuda --time 1:00:00 \
  --time runners=8:00:00 --qos high --qos redis=low --constraint 'h200|h100' --mem scheduler=4G \
  --cpus-per-task scheduler=2 --sbatch-arg=--mail-type=END --sbatch-arg runners=--exclusive \
  "$T/render.json" > "$T/opts.txt" 2> "$T/opts-err.txt" || fail "dry run with per-job options: $(cat "$T/opts-err.txt")"
want runners.sbatch "#SBATCH --time=8:00:00"
want scheduler.sbatch "#SBATCH --time=1:00:00"
want redis.sbatch "#SBATCH --time=1:00:00"
want runners.sbatch "#SBATCH --qos=high"
want redis.sbatch "#SBATCH --qos=low"
for f in redis scheduler runners; do
  want $f.sbatch "#SBATCH --constraint=h200|h100"
  want $f.sbatch "#SBATCH --mail-type=END"
  want $f.sbatch "#SBATCH --partition=gpu"
  [ "$(grep -c -- '--time=' "$S/$f.sbatch")" -eq 1 ] || fail "$f.sbatch: more than one --time"
done
want scheduler.sbatch "#SBATCH --mem=4G"
! grep -q -- "--mem" "$S/runners.sbatch" "$S/redis.sbatch" || fail "--mem scheduler= reached another job"
want scheduler.sbatch "#SBATCH --cpus-per-task=2"
want runners.sbatch "#SBATCH --cpus-per-task=4" # a cuda runner: three nvcc and the evaluation
want runners.sbatch "#SBATCH --exclusive"
! grep -q -- "--exclusive" "$S/scheduler.sbatch" || fail "--sbatch-arg runners= reached the scheduler"
for line in "#SBATCH --time=8:00:00" "#SBATCH --mem=4G" "#SBATCH --exclusive" "runners.sbatch:"; do
  grep -qF -- "$line" "$T/opts.txt" || fail "the dry run does not show \"$line\": $(cat "$T/opts.txt")"
done
grep -q 'note: the redis and scheduler jobs run on partition "gpu"' "$T/opts-err.txt" ||
  fail "no note that redis and the scheduler share the GPU partition: $(cat "$T/opts-err.txt")"
[ "$(wc -l < "$T/opts-err.txt")" -eq 1 ] || fail "stderr: $(cat "$T/opts-err.txt")"

note "the helpers forward USR1 and TERM to the program and wait for it"
cat > "$T/prog.sh" << 'EOF'
#!/bin/bash
trap 'echo "got USR1" >> "$1"; exit 0' USR1
trap 'echo "got TERM" >> "$1"; exit 0' TERM
echo ready >> "$1"
for _ in $(seq 100); do sleep 0.1; done
EOF
chmod +x "$T/prog.sh"
for sig in USR1 TERM; do
  rm -f "$T/prog.log"
  bash -c ". '$S/kb-job.sh'; kb_run '$T/prog.sh' '$T/prog.log'; echo \"rc=\$? sig=\$kb_sig\" >> '$T/prog.log'" &
  job=$!
  wait_until 10 "the program to start" grep -qs ready "$T/prog.log"
  kill -s "$sig" "$job"
  wait_pid "$job" 10 || true
  grep -q "got $sig" "$T/prog.log" || fail "$sig not passed on: $(cat "$T/prog.log")"
  grep -q "rc=0 sig=$sig" "$T/prog.log" || fail "after $sig: $(cat "$T/prog.log")"
done

note "--redis: no redis job, the address goes to the jobs"
"$BIN/kb-launch" --slurm --dry-run --json --redis redis-host:6379 --gres none "$T/render.json" \
  > "$T/given.json" || fail "dry run with --redis failed"
[ "$(json_get "$T/given.json" redis.address)" = redis-host:6379 ] || fail "$(cat "$T/given.json")"
[ "$(json_get "$T/given.json" runners.array)" = 0-0 ] || fail "$(cat "$T/given.json")"
[ ! -e "$S/redis.sbatch" ] || fail "redis.sbatch of the earlier run left behind"
grep -qx "KB_REDIS_GIVEN='redis-host:6379'" "$S/kb-job.sh" || fail "address not in kb-job.sh"
! grep -q -- "--gres" "$S/runners.sbatch" || fail "--gres none still asks for a GPU"

note "refused: exit 2 for bad command lines, 3 for bad campaigns, nothing submitted"
expect() { # CODE ARGS...
  local want=$1 rc=0
  shift
  "$BIN/kb-launch" "$@" > "$T/o.txt" 2> "$T/e.txt" || rc=$?
  [ "$rc" -eq "$want" ] || fail "kb-launch $*: exit $rc, want $want: $(cat "$T/e.txt")"
  [ -s "$T/e.txt" ] || fail "kb-launch $*: no message"
  ! grep -q "called" "$T/e.txt" || fail "kb-launch $* ran a Slurm command"
}
expect 2 --slurm --partition 'gpu a100' "$T/render.json"
expect 2 --slurm --time '1:00;rm' "$T/render.json"
expect 2 --slurm --runners 0 "$T/render.json"
expect 2 --slurm --throttle x "$T/render.json"
expect 2 --local --throttle 2 "$T/render.json"
expect 2 --slurm --local "$T/render.json"
expect 2 --slurm --redis-job --redis h:1 "$T/render.json"
expect 2 --cancel --runners 2 "$T/render.json"
expect 2 --slurm --cpus-per-task 0 "$T/render.json"
expect 2 --slurm --mem 'runners=4G;x' "$T/render.json"
expect 2 --slurm --sbatch-arg exclusive "$T/render.json"
expect 2 --slurm --sbatch-arg "$(printf -- '--comment=a\n#SBATCH --uid=0')" "$T/render.json"
expect 2 --slurm --sbatch-arg=--array=0-9 "$T/render.json"
expect 2 --local --qos high "$T/render.json"
expect 1 --slurm "$T/missing.json"
echo '{"schema": "kernelbrain.campaign/1", "id": "bad"' > "$T/bad.json"
expect 3 --slurm "$T/bad.json"
chmod 644 "$S/redis/password"
expect 3 --slurm --dry-run "$T/render.json"
grep -q "readable by others" "$T/e.txt" || fail "unsafe password file: $(cat "$T/e.txt")"
chmod 600 "$S/redis/password"
slurm_campaign spaced "[\"$REPO_DIR/tasks/host/sum\"]"
sed -i "s#\"results_dir\": \"$T/results\"#\"results_dir\": \"$T/with space\"#" "$T/spaced.json"
expect 3 --slurm --dry-run "$T/spaced.json"
expect 3 --slurm --dry-run --setup "$T/no-such-setup.sh" "$T/render.json"
(cd "$T" && echo 'module load redis' > setup.sh &&
  "$BIN/kb-launch" --slurm --dry-run --setup setup.sh render.json > /dev/null) || fail "--setup"
grep -qx "KB_SETUP='$T/setup.sh'" "$S/kb-job.sh" || fail "--setup not made absolute: $(grep KB_SETUP= "$S/kb-job.sh")"
expect 1 --cancel "$T/render.json"
grep -q "no Slurm jobs recorded" "$T/e.txt" || fail "--cancel without jobs: $(cat "$T/e.txt")"
echo "PASS"
