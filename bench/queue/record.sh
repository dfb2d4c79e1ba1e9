#!/bin/sh
# Runs one benchmark command and saves its output under bench/results/queue/ with a header line that
# says when, on which commit, on which machine and with which exact command it was measured.
#
# usage: bench/queue/record.sh WHAT COMMAND [ARGS...]
#   e.g. bench/queue/record.sh 256-runners-1 build/bin/kb-bench-queue --runners 256 --seconds 10
# writes bench/results/queue/queue-<date>-WHAT.txt (date as YYYY-MM-DD) and exits with the command's
# status. The machine may be shared: first it waits (up to $KB_BENCH_QUIET_WAIT seconds, default
# 600) until the CPUs were less than 15% busy over 3 s, and the header says how busy they were.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 WHAT COMMAND [ARGS...]" >&2; exit 2; }
what=$1
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
day=$(date +%Y-%m-%d)
out="$root/bench/results/queue/queue-$day-$what.txt"
mkdir -p "$root/bench/results/queue"
# share of all CPUs busy over the next 3 s, in percent (from /proc/stat)
busy() {
  a=$(awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat)
  sleep 3
  b=$(awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat)
  echo "$a $b" | awk '{ t = ($3 - $1) + ($4 - $2); p = 0; if (t > 0) p = 100 * ($3 - $1) / t
                       printf "%d", p }'
}
waited=0
limit=${KB_BENCH_QUIET_WAIT:-600}
pct=$(busy)
while [ "$pct" -ge 15 ] && [ "$waited" -lt "$limit" ]; do
  waited=$((waited + 3))
  pct=$(busy)
done
rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$root" status --porcelain -- common/lua common/src 2>/dev/null | wc -l)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
load=$(cut -d' ' -f1-3 /proc/loadavg)
# when the program was built: results must not be credited to a commit the binary predates
built=""
if [ -f "$1" ]; then
  built=", $(basename "$1") built $(date -u -r "$1" +%Y-%m-%dT%H:%M:%SZ)"
fi
{
  printf '# %s, commit %s%s%s, %s CPUs (%s), CPUs %s%% busy just before (load average %s);'\
' command: %s\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$rev" \
    "$([ "$dirty" -gt 0 ] && echo ' (common/ has uncommitted changes)' || true)" "$built" \
    "$(nproc)" "$cpu" "$pct" "$load" "$*"
} >"$out"
status=0
"$@" >>"$out" 2>&1 || status=$?
echo "$out (exit $status)"
exit $status
