# kernelbrain job helpers for campaign @CAMPAIGN@, sourced by the job scripts beside this file.
# Written by kb-launch --slurm from slurm/templates/kb-job.sh; kb-launch writes it again on
# every launch.
#
# Signals: Slurm sends the batch shell SIGUSR1 some time before the time limit
# (--signal=B:USR1@120) and SIGTERM when it cancels, requeues or preempts the job. The traps only
# note the signal and pass it on to the running program, which leaves cleanly (a runner releases
# its leases, refunding their reservations, and exits 0). SIGCONT is never trapped: Slurm sends
# it just before the signal that matters, and a bash that traps it sometimes loses that one.
# Programs run as `cmd & wait $!`, so a trap runs at once instead of after the program ends.

KB_BIN=@BIN@
KB_CAMPAIGN=@CAMPAIGN@
KB_CAMPAIGN_FILE=@CAMPAIGN_FILE@
KB_DIR=@DIR@
KB_REDIS_GIVEN=@REDIS@
KB_BACKEND=@BACKEND@
KB_WAIT=@WAIT@
KB_POLL=${KB_JOB_POLL:-10}
KB_SETUP=@SETUP@
export KB_LOG=${KB_LOG:-info}
if [ -n "$KB_SETUP" ]; then
  # shellcheck disable=SC1090
  . "$KB_SETUP" || { echo "kb-job: $KB_SETUP failed" >&2; exit 1; }
fi
if [ -z "$KB_REDIS_GIVEN" ]; then
  export KB_REDIS_PASSWORD_FILE=$KB_DIR/redis/password
fi

kb_sig=""    # the last signal Slurm sent us
kb_warned="" # 1 once the time-limit warning (SIGUSR1) came
kb_child=""  # the program running now
kb_pass=""   # the signal it gets when we get one (empty: the same)

kb_log() { printf '%(%Y-%m-%d %H:%M:%S)T kb-job[%s]: %s\n' -1 "${SLURM_JOB_ID:-?}" "$*" >&2; }

kb_forward() {
  kb_sig=$1
  if [ "$1" = USR1 ]; then kb_warned=1; fi
  if [ -n "$kb_child" ]; then kill -s "${kb_pass:-$1}" "$kb_child" 2> /dev/null; fi
}
trap 'kb_forward USR1' USR1
trap 'kb_forward TERM' TERM
trap 'kb_forward INT' INT

# kb_sleep SECONDS: a sleep a signal interrupts at once.
kb_sleep() {
  sleep "$1" &
  wait $!
}

# kb_wait: waits for the program in kb_child through any signals (which the traps pass on).
# Returns its exit status.
kb_wait() {
  local rc=0 again
  while :; do
    wait "$kb_child"
    rc=$?
    if [ "$rc" -gt 128 ] && kill -0 "$kb_child" 2> /dev/null; then
      continue # a trap ran; the program is still leaving
    fi
    if [ "$rc" -gt 128 ]; then # interrupted just as it ended: fetch its own status
      wait "$kb_child" 2> /dev/null
      again=$?
      [ "$again" -eq 127 ] || rc=$again
    fi
    break
  done
  kb_child=""
  return "$rc"
}

# kb_run CMD...: runs CMD in the background and kb_wait()s for it. A signal that came before
# the program's pid was known is passed on now.
kb_run() {
  "$@" &
  kb_child=$!
  if [ -n "$kb_sig" ]; then kill -s "${kb_pass:-$kb_sig}" "$kb_child" 2> /dev/null; fi
  kb_wait
}

# kb_address: sets and exports KB_REDIS: the --redis address kb-launch was given, or the one
# the redis job wrote once its server answered. Waits up to KB_WAIT seconds. Fails when asked
# to leave meanwhile or when nothing appeared.
kb_address() {
  if [ -n "$KB_REDIS_GIVEN" ]; then
    export KB_REDIS=$KB_REDIS_GIVEN
    return 0
  fi
  local f=$KB_DIR/redis/address waited=0
  until [ -s "$f" ]; do
    [ -z "$kb_sig" ] || return 1
    if [ "$waited" -ge "$KB_WAIT" ]; then
      kb_log "no redis address in $f after ${KB_WAIT}s (is the redis job running?)"
      return 1
    fi
    kb_sleep 1
    waited=$((waited + 1))
  done
  read -r KB_REDIS < "$f"
  export KB_REDIS
}

# kb_state: prints the campaign's state (running, draining, done, cancelled...), or nothing when
# redis cannot be asked (KB_REDIS and the password come from the environment).
kb_state() {
  "$KB_BIN/kb-submit" --json status "$KB_CAMPAIGN" 2> /dev/null |
    sed -n 's/.*"state": *"\([a-z]*\)".*/\1/p'
}

# kb_requeue_if_warned [STATE]: after the time-limit warning (SIGUSR1), puts this job back in
# the queue unless the campaign (in STATE, else as redis says now) is over; Slurm starts it again
# later, as it does by itself after a preemption or `scontrol requeue` (which send SIGTERM).
kb_requeue_if_warned() {
  [ -n "$kb_warned" ] || return 0
  local state=${1-}
  [ -n "$state" ] || state=$(kb_state)
  case $state in
    done | cancelled) kb_log "time limit near; campaign $KB_CAMPAIGN is $state: not requeued" ;;
    *)
      kb_log "time limit near; campaign $KB_CAMPAIGN is ${state:-unknown}: requeueing job $SLURM_JOB_ID"
      scontrol requeue "$SLURM_JOB_ID" || kb_log "scontrol requeue $SLURM_JOB_ID failed"
      ;;
  esac
}

# kb_jobs_gone IDS: true when none of the jobs (comma-separated) is pending or running.
kb_jobs_gone() {
  local out rc
  out=$(squeue -h -j "$1" -o %i 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ]; then [ -z "$out" ]; return; fi
  case $out in *"Invalid job id"*) return 0 ;; esac
  return 1
}
