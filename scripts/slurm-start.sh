#!/usr/bin/env bash
# slurm-start.sh STATE_DIR: a real single-node Slurm (Debian's slurmctld, slurmd, munge) for the
# tests, without systemd, with every file under STATE_DIR: its own munged (socket and key there),
# slurm.conf, gres.conf, pid files, spool, state and logs. Nothing in /etc is touched, so it can
# run beside a system Slurm or another test cluster: clients find it through SLURM_CONF, which
# STATE_DIR/slurm.env exports (`source STATE_DIR/slurm.env`).
#
# Idempotent: run again while the cluster is up with the same settings, it only waits until the
# node answers; changed settings restart the daemons. Exits 0 once `sinfo` shows the node usable.
# Must run as root (slurmd starts jobs as their users). Installs the packages through
# scripts/install-deps.sh when they are missing.
#
# Settings (environment):
#   KB_SLURM_CPUS=N        CPUs the node offers (default 10; may exceed the real cores)
#   KB_SLURM_GPUS=N        fake GPUs: gres.conf File= names character devices (links to
#                          /dev/null), so each --gres=gpu:1 task gets its own CUDA_VISIBLE_DEVICES
#                          (default 8; 0 = none)
#   KB_SLURM_CRED_EXPIRE=S AuthInfo cred_expire: a requeued job waits S+1 seconds (default 5;
#                          Slurm's default is 120)
#   KB_SLURM_KILLWAIT=S    seconds from SIGTERM to SIGKILL at cancel and time limit (default 10)
#   KB_SLURM_PORT=P        slurmctld port; slurmd uses P+1 (default: the first free pair from 26817)
#   KB_SLURM_TIMEOUT=S     how long to wait for the node (default 60)
set -euo pipefail

usage() { echo "usage: $0 STATE_DIR" >&2; exit 2; }
[ $# -eq 1 ] || usage
case $1 in -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
log() { printf 'slurm-start: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (slurmd starts jobs as their users)"
mkdir -p "$1"
S=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
CPUS=${KB_SLURM_CPUS:-10}
GPUS=${KB_SLURM_GPUS:-8}
CRED_EXPIRE=${KB_SLURM_CRED_EXPIRE:-5}
KILLWAIT=${KB_SLURM_KILLWAIT:-10}
TIMEOUT=${KB_SLURM_TIMEOUT:-60}
NODE=$(hostname -s)
[ -n "$NODE" ] || die "hostname -s is empty"
# munged's socket lives in the state folder: a unix socket path holds at most 107 bytes
[ ${#S} -le 80 ] || die "state folder path too long for a unix socket (${#S} > 80 bytes): $S"

# --- packages ------------------------------------------------------------------------------
for b in slurmctld slurmd munged sbatch munge mungekey; do
  if ! command -v "$b" > /dev/null && [ ! -x "/usr/sbin/$b" ]; then
    log "Slurm or munge missing: installing through scripts/install-deps.sh"
    sh "$HERE/install-deps.sh" >&2 || die "cannot install the Slurm packages"
    break
  fi
done
export PATH=$PATH:/usr/sbin

# pid_of PIDFILE COMM: the pid when the file names a live process of that name that this script
# started for this state folder (its environment carries KB_SLURM_STATE=$S).
pid_of() {
  local pid
  pid=$(cat "$1" 2> /dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [ "$(cat "/proc/$pid/comm" 2> /dev/null)" = "$2" ] || return 1
  tr '\0' '\n' < "/proc/$pid/environ" 2> /dev/null | grep -qxF "KB_SLURM_STATE=$S" || return 1
  echo "$pid"
}
stop_pid() { # PIDFILE COMM: SIGTERM, up to 15 s, then SIGKILL
  local pid
  pid=$(pid_of "$1" "$2") || { rm -f "$1"; return 0; }
  kill "$pid" 2> /dev/null || true
  for _ in $(seq 150); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
  if [ -d "/proc/$pid" ]; then kill -9 "$pid" 2> /dev/null || true; fi
  rm -f "$1"
}
port_free() { ! (: < "/dev/tcp/127.0.0.1/$1") 2> /dev/null; }

mkdir -p "$S/etc" "$S/run" "$S/ctld" "$S/spool" "$S/log" "$S/gpu" "$S/munge/private"
chmod 0755 "$S" "$S/munge"
chmod 0700 "$S/munge/private"

# --- munge: its own daemon, key and socket ----------------------------------------------------
export KB_SLURM_STATE=$S
MSOCK=$S/munge/munge.socket
if [ ! -s "$S/munge/private/munge.key" ]; then
  mungekey --create --keyfile="$S/munge/private/munge.key"
fi
chmod 0400 "$S/munge/private/munge.key"
if ! pid_of "$S/munge/munged.pid" munged > /dev/null ||
   ! munge -S "$MSOCK" -n < /dev/null 2> /dev/null | unmunge -S "$MSOCK" > /dev/null 2>&1; then
  stop_pid "$S/munge/munged.pid" munged
  rm -f "$MSOCK" "$MSOCK.lock"
  munged --socket="$MSOCK" --key-file="$S/munge/private/munge.key" \
    --pid-file="$S/munge/munged.pid" --log-file="$S/log/munged.log" \
    --seed-file="$S/munge/private/munged.seed"
  for _ in $(seq 50); do
    munge -S "$MSOCK" -n < /dev/null 2> /dev/null | unmunge -S "$MSOCK" > /dev/null 2>&1 && break
    sleep 0.1
  done
  munge -S "$MSOCK" -n < /dev/null | unmunge -S "$MSOCK" > /dev/null ||
    die "munged does not answer; see $S/log/munged.log"
fi

# --- configuration ---------------------------------------------------------------------------
CONF=$S/etc/slurm.conf
running=0
if pid_of "$S/run/slurmctld.pid" slurmctld > /dev/null; then running=1; fi
if [ -n "${KB_SLURM_PORT:-}" ]; then
  PORT=$KB_SLURM_PORT
elif [ "$running" = 1 ] && [ -f "$CONF" ]; then
  PORT=$(sed -n 's/^SlurmctldPort=//p' "$CONF")
else
  PORT=26817
  until port_free "$PORT" && port_free $((PORT + 1)); do
    PORT=$((PORT + 2))
    [ "$PORT" -lt 27817 ] || die "no free port pair in 26817..27816"
  done
fi
MEM=$(slurmd -C 2> /dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -1)
GRES_NODE=""
GRES_LINE=""
if [ "$GPUS" -gt 0 ]; then
  for i in $(seq 0 $((GPUS - 1))); do ln -sfn /dev/null "$S/gpu/gpu$i"; done
  GRES_NODE=" Gres=gpu:$GPUS"
  GRES_LINE="NodeName=$NODE Name=gpu File=$S/gpu/gpu[0-$((GPUS - 1))]"
fi
new=$(mktemp)
new_gres=$(mktemp)
trap 'rm -f "$new" "$new_gres"' EXIT
cat > "$new" << EOF
# Written by kernelbrain's scripts/slurm-start.sh: a single-node test cluster, no systemd.
ClusterName=kbtest
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# Our own munged; a low cred_expire so a requeued job starts again after seconds, not 121 s.
AuthInfo=socket=$MSOCK,cred_expire=$CRED_EXPIRE
MpiDefault=none
# cgroup plugins fail in containers and then report jobs COMPLETED that never ran.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$S/log/jobcomp.log
ReturnToService=2
SlurmctldPidFile=$S/run/slurmctld.pid
SlurmdPidFile=$S/run/slurmd.pid
SlurmdSpoolDir=$S/spool
StateSaveLocation=$S/ctld
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
SchedulerType=sched/backfill
# Schedule pending jobs every 2 s (Slurm: 60 s main loop, 30 s backfill) so a requeued job
# or a throttled array task starts as soon as it may.
SchedulerParameters=batch_sched_delay=0,sched_interval=2,bf_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
KillWait=$KILLWAIT
MinJobAge=600
GresTypes=gpu
NodeName=$NODE NodeAddr=127.0.0.1 NodeHostname=$NODE CPUs=$CPUS RealMemory=${MEM:-1000}$GRES_NODE State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
{
  echo "# Written by kernelbrain's scripts/slurm-start.sh"
  echo "AutoDetect=off"
  [ -z "$GRES_LINE" ] || echo "$GRES_LINE"
} > "$new_gres"
changed=0
cmp -s "$new" "$CONF" || { install -m 0644 "$new" "$CONF"; changed=1; }
cmp -s "$new_gres" "$S/etc/gres.conf" || { install -m 0644 "$new_gres" "$S/etc/gres.conf"; changed=1; }
printf 'export SLURM_CONF=%q\n' "$CONF" > "$S/slurm.env"
export SLURM_CONF=$CONF

# --- daemons ---------------------------------------------------------------------------------
if [ "$changed" = 1 ]; then
  stop_pid "$S/run/slurmd.pid" slurmd
  stop_pid "$S/run/slurmctld.pid" slurmctld
fi
started=0
if ! pid_of "$S/run/slurmctld.pid" slurmctld > /dev/null; then
  # a fresh controller: no jobs, node states or job ids from an earlier run
  find "$S/ctld" -mindepth 1 -delete
  slurmctld -f "$CONF" || die "slurmctld did not start; see $S/log/slurmctld.log"
  started=1
fi
if ! pid_of "$S/run/slurmd.pid" slurmd > /dev/null; then
  find "$S/spool" -mindepth 1 -delete
  slurmd -f "$CONF" -N "$NODE" || die "slurmd did not start; see $S/log/slurmd.log"
  started=1
fi

# --- wait until the node takes jobs -----------------------------------------------------------
end=$(($(date +%s) + TIMEOUT))
resumed=0
state=""
while :; do
  state=$(timeout 10 sinfo -h -N -n "$NODE" -o '%T' 2> /dev/null | head -1 || true)
  case $state in
    idle) break ;;
    mixed | allocated | completing) [ "$started" = 1 ] || break ;;
    drain* | down* | inval* | fail*)
      if [ "$resumed" = 0 ]; then
        scontrol update nodename="$NODE" state=resume 2> /dev/null || true
        resumed=1
      fi
      ;;
  esac
  if [ "$(date +%s)" -ge "$end" ]; then
    scontrol show node "$NODE" >&2 || true
    tail -n 20 "$S/log/slurmctld.log" "$S/log/slurmd.log" >&2 || true
    die "node $NODE is \"${state:-unknown}\" after ${TIMEOUT}s"
  fi
  sleep 0.2
done
log "up: node $NODE $state, $CPUS CPUs, $GPUS fake GPUs, port $PORT; SLURM_CONF=$CONF"
