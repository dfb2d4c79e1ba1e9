#!/usr/bin/env bash
# slurm-stop.sh STATE_DIR [--purge]: stops the test cluster scripts/slurm-start.sh started in
# STATE_DIR: cancels its jobs (waiting up to KillWait + 10 s for them to end), then stops slurmd,
# slurmctld and munged by their pid files. Only processes started for this state folder are
# touched (their environment carries KB_SLURM_STATE=STATE_DIR), never by name. Job step daemons
# (slurmstepd) of this cluster that outlive slurmd (they hold its slurmd.log open) are killed.
# --purge also deletes STATE_DIR.
# Safe to run when nothing runs, and more than once. Must run as root.
set -uo pipefail

usage() { echo "usage: $0 STATE_DIR [--purge]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
case $1 in -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
PURGE=0
if [ $# -eq 2 ]; then [ "$2" = --purge ] && PURGE=1 || usage; fi
log() { printf 'slurm-stop: %s\n' "$*" >&2; }
[ "$(id -u)" -eq 0 ] || { log "must run as root"; exit 1; }
[ -d "$1" ] || { log "nothing to stop: no folder $1"; exit 0; }
S=$(cd "$1" && pwd)
export PATH=$PATH:/usr/sbin
export SLURM_CONF=$S/etc/slurm.conf

ours() { # PID: true when the process was started for this state folder
  tr '\0' '\n' < "/proc/$1/environ" 2> /dev/null | grep -qxF "KB_SLURM_STATE=$S"
}
pid_of() { # PIDFILE COMM
  local pid
  pid=$(cat "$1" 2> /dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [ "$(cat "/proc/$pid/comm" 2> /dev/null)" = "$2" ] && ours "$pid" || return 1
  echo "$pid"
}
stop_pid() { # PIDFILE COMM: SIGTERM, up to 15 s, then SIGKILL
  local pid
  if pid=$(pid_of "$1" "$2"); then
    kill "$pid" 2> /dev/null || true
    for _ in $(seq 150); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    if [ -d "/proc/$pid" ]; then
      log "$2 ($pid) ignored SIGTERM: SIGKILL"
      kill -9 "$pid" 2> /dev/null || true
    fi
  fi
  rm -f "$1"
}

# 1. cancel every job while the controller answers, and wait for them to end
if [ -f "$SLURM_CONF" ] && pid_of "$S/run/slurmctld.pid" slurmctld > /dev/null &&
   timeout 5 scontrol ping 2> /dev/null | grep -q UP; then
  jobs=$(timeout 5 squeue -h -o %A 2> /dev/null | sort -u | tr '\n' ' ')
  if [ -n "${jobs// /}" ]; then
    kw=$(sed -n 's/^KillWait=//p' "$SLURM_CONF")
    log "cancelling jobs $jobs(waiting up to $((${kw:-30} + 10)) s)"
    # shellcheck disable=SC2086
    timeout 10 scancel $jobs 2> /dev/null || true
    end=$(($(date +%s) + ${kw:-30} + 10))
    while [ -n "$(timeout 5 squeue -h 2> /dev/null)" ] && [ "$(date +%s)" -lt "$end" ]; do
      sleep 0.2
    done
  fi
fi

# 2. the daemons, then step daemons of this cluster left behind
stop_pid "$S/run/slurmd.pid" slurmd
stop_pid "$S/run/slurmctld.pid" slurmctld
# (slurmd clears the environment of its step daemons; ours write to this cluster's slurmd.log)
stepd_ours() {
  local fd
  for fd in "/proc/$1"/fd/*; do
    [ "$(readlink "$fd" 2> /dev/null)" = "$S/log/slurmd.log" ] && return 0
  done
  return 1
}
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  if [ "$(cat "$p/comm" 2> /dev/null)" = slurmstepd ] && stepd_ours "$pid"; then
    log "killing slurmstepd $pid left by this cluster"
    kill -9 "$pid" 2> /dev/null || true
  fi
done
stop_pid "$S/munge/munged.pid" munged

if [ "$PURGE" = 1 ]; then
  rm -rf "$S"
  log "stopped; removed $S"
else
  log "stopped; state and logs kept in $S"
fi
