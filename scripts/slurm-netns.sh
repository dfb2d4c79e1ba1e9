#!/usr/bin/env bash
# slurm-netns.sh COMMAND STATE_DIR [ARG]: a multi-node Slurm test cluster on one machine, each
# daemon in its own network namespace with its own address, for the tests of label multinode.
#
#   start STATE_DIR BIN   builds it (after removing what a crashed earlier run left) and waits
#                         until every node is idle and Redis answers; BIN: kernelbrain's bin
#                         folder (kb-launch --redis-config gives Redis its settings)
#   stop STATE_DIR        cancels every job, kills every process in the namespaces, deletes them
#                         (and with them the veths), stops munged; safe to run more than once
#   kill-node STATE_DIR N kill -9 of every process in node N's namespace (slurmd, its job steps,
#                         the jobs' processes), as when a node loses power
#   start-node STATE_DIR N  starts node N's slurmd again (the node returns: ReturnToService=2)
#   redis-stop STATE_DIR  SHUTDOWN of the Redis node's redis-server (the AOF is fsynced)
#   redis-start STATE_DIR starts it again on the same AOF; waits until it answers PING
#   link STATE_DIR N up|down  host N's cable: the bridge side of its veth
#
# The network: namespace kbmn-br holds the bridge (no address) and one end of each veth pair;
# the other end is eth0 in kbmn-ctl (slurmctld, 10.254.77.1) and in kbmn-n1..kbmn-n4 (.11 .. .14).
# Those namespaces have no other interface but lo and no default route, so their traffic goes
# only to each other; the machine's own network is untouched. Each daemon also has its own UTS
# namespace, so `hostname` in a job says its node. Host kbmn-n1 runs Redis on 10.254.77.11:6379
# (ACL user kbtest, password in STATE_DIR/redis/password, 0600; the default user has a random
# password nobody is given), as a service host beside a cluster would; kbmn-n2..kbmn-n4 run a
# slurmd each: kbmn-n2 (partition svc) the scheduler job, kbmn-n3 and kbmn-n4 (partition run,
# least loaded first) the runners. munged runs in the machine's namespace: its socket is a
# file, reachable from every network namespace. Clients (sbatch,
# kb-launch, redis-cli) run in kbmn-ctl: `nsenter --net=/run/netns/kbmn-ctl CMD` after
# `source STATE_DIR/cluster.env` (SLURM_CONF, KB_REDIS, KB_REDIS_USER, KB_REDIS_PASSWORD_FILE).
#
# Must run as root. Exit 77 with one line naming what is missing when the cluster cannot be
# made (not root, no ip, no network namespaces or veths); 1 on any other failure.
set -euo pipefail

usage() {
  echo "usage: $0 start|stop|kill-node|start-node|redis-stop|redis-start|link STATE_DIR [ARG...]" >&2
  exit 2
}
case ${1:-} in -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
[ $# -ge 2 ] || usage
CMD=$1
log() { printf 'slurm-netns: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }

HERE=$(cd "$(dirname "$0")" && pwd)
export PATH=$PATH:/usr/sbin:/sbin
P=kbmn              # prefix of every namespace, so leftovers are found by name
NET=10.254.77       # the private /24
CTL_IP=$NET.1
HOSTS=(n1 n2 n3 n4)  # every host's namespace; n1 holds Redis, no slurmd
NODES=(n2 n3 n4)     # the Slurm nodes
node_ip() { case $1 in n1) echo "$NET.11" ;; n2) echo "$NET.12" ;; n3) echo "$NET.13" ;; n4) echo "$NET.14" ;; *) return 1 ;; esac; }
REDIS_IP=$NET.11
REDIS_PORT=6379
REDIS_USER=kbtest
NODE_CPUS=4

[ "$(id -u)" -eq 0 ] || skip "the multi-node cluster needs root (network namespaces, slurmd)"
command -v ip > /dev/null || skip "no ip command (Debian package iproute2)"
for b in nsenter unshare; do command -v $b > /dev/null || skip "no $b command (Debian package util-linux)"; done
mkdir -p "$2"
S=$(cd "$2" && pwd)
# munged's socket lives in the state folder: a unix socket path holds at most 107 bytes
[ ${#S} -le 80 ] || die "state folder path too long for a unix socket (${#S} > 80 bytes): $S"
export KB_SLURM_STATE=$S
CONF=$S/etc/slurm.conf
MSOCK=$S/munge/munge.socket

# nsenter, not `ip netns exec`: that remounts /sys in a new mount namespace, where slurmd finds
# no cgroup filesystem
in_ns() { local ns=$1; shift; nsenter --net="/run/netns/$P-$ns" "$@"; }
ns_exists() { [ -e "/run/netns/$P-$1" ]; }

# kill_ns NS [TERM first]: every process in the namespace, SIGTERM (up to 5 s) then SIGKILL
kill_ns() {
  local ns=$P-$1 term=${2:-} pids
  [ -e "/run/netns/$ns" ] || return 0
  if [ -n "$term" ]; then
    pids=$(ip netns pids "$ns" 2> /dev/null | tr '\n' ' ')
    # shellcheck disable=SC2086
    [ -z "${pids// /}" ] || kill $pids 2> /dev/null || true
    for _ in $(seq 50); do
      [ -n "$(ip netns pids "$ns" 2> /dev/null)" ] || return 0
      sleep 0.1
    done
  fi
  for _ in $(seq 50); do
    pids=$(ip netns pids "$ns" 2> /dev/null | tr '\n' ' ')
    [ -n "${pids// /}" ] || return 0
    # shellcheck disable=SC2086
    kill -9 $pids 2> /dev/null || true
    sleep 0.1
  done
  die "processes left in namespace $ns: $(ip netns pids "$ns" | tr '\n' ' ')"
}

munged_pid() {
  local pid
  pid=$(cat "$S/munge/munged.pid" 2> /dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] && [ "$(cat "/proc/$pid/comm" 2> /dev/null)" = munged ] || return 1
  tr '\0' '\n' < "/proc/$pid/environ" 2> /dev/null | grep -qxF "KB_SLURM_STATE=$S" || return 1
  echo "$pid"
}

# --- stop: jobs, every process in our namespaces, the namespaces, munged --------------------------
teardown() {
  local ns pid
  if ns_exists ctl && [ -f "$CONF" ] && in_ns ctl timeout 5 env SLURM_CONF="$CONF" scontrol ping 2> /dev/null | grep -q UP; then
    in_ns ctl timeout 10 env SLURM_CONF="$CONF" scancel --full --quiet --user=root 2> /dev/null || true
  fi
  for ns in "${HOSTS[@]}" ctl br; do kill_ns "$ns" term; done
  for ns in "/run/netns/$P"-*; do
    [ -e "$ns" ] || continue
    kill_ns "${ns#/run/netns/"$P"-}"
    ip netns del "${ns#/run/netns/}" || die "cannot delete namespace ${ns#/run/netns/}"
  done
  if pid=$(munged_pid); then
    kill "$pid" 2> /dev/null || true
    for _ in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    kill -9 "$pid" 2> /dev/null || true
  fi
  rm -f "$S/munge/munged.pid"
  # the /run/netns mount `ip netns add` made, when it was ours and nothing else uses it
  if [ -f "$S/run/made-run-netns" ] && [ -z "$(ls -A /run/netns 2> /dev/null)" ]; then
    umount /run/netns 2> /dev/null || true
    rmdir /run/netns 2> /dev/null || true
  fi
  rm -f "$S/run/made-run-netns"
}

# --- start ---------------------------------------------------------------------------------------
network() {
  if ! mountpoint -q /run/netns 2> /dev/null; then touch "$S/run/made-run-netns"; fi
  ip netns add "$P-br" 2> "$S/log/netns.err" ||
    skip "cannot create a network namespace ($(head -1 "$S/log/netns.err"))"
  ip -n "$P-br" link add br0 type bridge 2> "$S/log/netns.err" ||
    skip "cannot create a bridge in a network namespace ($(head -1 "$S/log/netns.err"))"
  ip -n "$P-br" link set br0 up
  local ns ip
  for ns in ctl "${HOSTS[@]}"; do
    ip netns add "$P-$ns"
    ip -n "$P-br" link add "v-$ns" type veth peer name eth0 netns "$P-$ns" 2> "$S/log/netns.err" ||
      skip "cannot create a veth pair ($(head -1 "$S/log/netns.err"))"
    ip -n "$P-br" link set "v-$ns" master br0 up
    if [ "$ns" = ctl ]; then ip=$CTL_IP; else ip=$(node_ip "$ns"); fi
    ip -n "$P-$ns" addr add "$ip/24" dev eth0
    ip -n "$P-$ns" link set lo up
    ip -n "$P-$ns" link set eth0 up
  done
  # nothing outside the /24 is routed (the nodes reach each other: slurmd registration shows it)
  if in_ns n1 ip route get 1.1.1.1 > /dev/null 2>&1; then die "namespace $P-n1 routes outside"; fi
}

start_munged() {
  mkdir -p "$S/munge/private"
  chmod 0755 "$S/munge"
  chmod 0700 "$S/munge/private"
  [ -s "$S/munge/private/munge.key" ] || mungekey --create --keyfile="$S/munge/private/munge.key"
  chmod 0400 "$S/munge/private/munge.key"
  rm -f "$MSOCK" "$MSOCK.lock"
  munged --socket="$MSOCK" --key-file="$S/munge/private/munge.key" --pid-file="$S/munge/munged.pid" \
    --log-file="$S/log/munged.log" --seed-file="$S/munge/private/munged.seed"
  for _ in $(seq 50); do
    munge -S "$MSOCK" -n < /dev/null 2> /dev/null | unmunge -S "$MSOCK" > /dev/null 2>&1 && return 0
    sleep 0.1
  done
  die "munged does not answer; see $S/log/munged.log"
}

write_conf() {
  local mem n
  mem=$(slurmd -C 2> /dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -1)
  {
    cat << EOF
# Written by kernelbrain's scripts/slurm-netns.sh: a multi-node test cluster in network namespaces.
ClusterName=kbmn
SlurmctldHost=$P-ctl($CTL_IP)
SlurmctldPort=6817
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MSOCK,cred_expire=5
MpiDefault=none
# cgroup plugins fail in containers and then report jobs COMPLETED that never ran.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$S/log/jobcomp.log
ReturnToService=2
# A node that stops answering is DOWN after 6 s (its jobs requeued), not 300 s.
SlurmdTimeout=6
SlurmctldTimeout=10
MessageTimeout=5
SlurmctldPidFile=$S/run/slurmctld.pid
SlurmdPidFile=$S/run/slurmd-%n.pid
SlurmdSpoolDir=$S/spool/%n
StateSaveLocation=$S/ctld
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_interval=2,bf_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
KillWait=5
MinJobAge=600
EOF
    for n in "${NODES[@]}"; do
      echo "NodeName=$P-$n NodeAddr=$(node_ip "$n") NodeHostname=$P-$n CPUs=$NODE_CPUS RealMemory=${mem:-1000} State=UNKNOWN"
    done
    echo "PartitionName=svc Nodes=$P-n2 MaxTime=INFINITE State=UP"
    echo "PartitionName=run Nodes=$P-n3,$P-n4 Default=YES LLN=YES MaxTime=INFINITE State=UP"
  } > "$CONF"
  chmod 0644 "$CONF"
}

# start_slurmd N: slurmd of node N in its namespace, with the node's name as hostname
start_slurmd() {
  local n=$1
  mkdir -p "$S/spool/$P-$n"
  find "$S/spool/$P-$n" -mindepth 1 -delete
  in_ns "$n" unshare --uts sh -c "hostname $P-$n && exec slurmd -f '$CONF' -N $P-$n" ||
    die "slurmd of $P-$n did not start; see $S/log/slurmd-$P-$n.log"
}

rcli() {
  REDISCLI_AUTH=$(cat "$S/redis/password") in_ns ctl redis-cli --no-auth-warning --user "$REDIS_USER" \
    -h "$REDIS_IP" -p "$REDIS_PORT" "$@"
}

redis_conf() {
  local bin=$1
  mkdir -p "$S/redis"
  chmod 0700 "$S/redis"
  if [ ! -s "$S/redis/password" ]; then
    (umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$S/redis/password")
  fi
  chmod 0600 "$S/redis/password"
  (
    umask 077
    "$bin/kb-launch" --redis-config
    printf 'port %s\nbind %s\ndir %s\nlogfile %s\npidfile %s\n' "$REDIS_PORT" "$REDIS_IP" \
      "$S/redis" "$S/redis/redis.log" "$S/redis/redis.pid"
    # Not `user default off`: Redis before 8 replays the AOF's MULTI/EXEC blocks (every Lua
    # script's writes) as the default user and drops them, silently, when that user may not
    # run them (redis/redis#14541). The default user keeps every right behind a random password
    # nobody is given.
    printf 'user default on >%s ~* &* +@all\nuser %s on >%s ~* &* +@all\n' \
      "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" "$REDIS_USER" "$(cat "$S/redis/password")"
  ) > "$S/redis/redis.conf" || die "kb-launch --redis-config failed"
}

redis_start() {
  in_ns n1 unshare --uts sh -c "hostname $P-n1 && exec redis-server '$S/redis/redis.conf' --daemonize yes" \
    > /dev/null || die "redis-server did not start; see $S/redis/redis.log"
  for _ in $(seq 200); do
    if rcli ping 2> /dev/null | grep -q PONG; then return 0; fi
    sleep 0.05
  done
  die "redis-server on $REDIS_IP:$REDIS_PORT does not answer; see $S/redis/redis.log"
}

wait_nodes_idle() {
  local end=$(($(date +%s) + 60)) states
  while :; do
    states=$(in_ns ctl timeout 10 env SLURM_CONF="$CONF" sinfo -h -N -o '%N=%T' 2> /dev/null | sort -u || true)
    [ "$(grep -c '=idle$' <<< "$states")" -lt ${#NODES[@]} ] || return 0
    [ "$(date +%s)" -lt "$end" ] || die "nodes not idle after 60 s: ${states//$'\n'/ }"
    sleep 0.2
  done
}

start() {
  local bin=${1:?start needs BIN}
  for b in slurmctld slurmd munged sbatch munge mungekey redis-server; do
    if ! command -v "$b" > /dev/null; then
      log "$b missing: installing through scripts/install-deps.sh"
      sh "$HERE/install-deps.sh" >&2 || die "cannot install the packages"
      break
    fi
  done
  mkdir -p "$S/etc" "$S/run" "$S/ctld" "$S/spool" "$S/log"
  teardown # what a crashed earlier run left
  # a start that fails (or is skipped) half-way leaves nothing behind
  # shellcheck disable=SC2154 # rc is assigned in the trap itself
  trap 'rc=$?; if [ $rc -ne 0 ]; then teardown; fi; exit $rc' EXIT
  find "$S/ctld" "$S/spool" "$S/log" -mindepth 1 -delete
  rm -rf "$S/redis"
  network
  start_munged
  write_conf
  in_ns ctl unshare --uts sh -c "hostname $P-ctl && exec slurmctld -f '$CONF'" ||
    die "slurmctld did not start; see $S/log/slurmctld.log"
  local n
  for n in "${NODES[@]}"; do start_slurmd "$n"; done
  redis_conf "$bin"
  redis_start
  {
    printf 'export SLURM_CONF=%q\n' "$CONF"
    printf 'export KB_REDIS=%s:%s KB_REDIS_USER=%s KB_REDIS_PASSWORD_FILE=%q\n' "$REDIS_IP" \
      "$REDIS_PORT" "$REDIS_USER" "$S/redis/password"
  } > "$S/cluster.env"
  wait_nodes_idle
  log "up: slurmctld $CTL_IP, nodes ${NODES[*]/#/$P-} (${NODE_CPUS} CPUs each), redis $REDIS_IP:$REDIS_PORT user $REDIS_USER"
}

case $CMD in
  start) start "${3:-}" ;;
  stop) teardown; log "stopped; logs kept in $S/log" ;;
  kill-node)
    node_ip "${3:-}" > /dev/null || usage
    pids=$(ip netns pids "$P-$3" | tr '\n' ' ')
    names=$(for p in $pids; do cat "/proc/$p/comm" 2> /dev/null; done | sort | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
    kill_ns "$3"
    echo "killed $(wc -w <<< "$pids") processes in $P-$3: $names"
    ;;
  start-node)
    node_ip "${3:-}" > /dev/null || usage
    start_slurmd "$3"
    ;;
  redis-stop)
    rcli shutdown > /dev/null 2>&1 || true
    for _ in $(seq 100); do [ -e "$S/redis/redis.pid" ] || exit 0; sleep 0.1; done
    die "redis-server did not stop"
    ;;
  redis-start) redis_start ;;
  link)
    node_ip "${3:-}" > /dev/null || usage
    case ${4:-} in up | down) ip -n "$P-br" link set "v-$3" "$4" ;; *) usage ;; esac
    ;;
  *) usage ;;
esac
