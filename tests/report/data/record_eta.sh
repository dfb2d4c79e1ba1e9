#!/usr/bin/env bash
# Records a campaign for test_eta: a host campaign of the given tasks/host tasks (default
# ladder, budget 600 GPU seconds, lease_seconds 5) run by `kb-launch --local --runners N`,
# watched twice a second with `kb-submit --json watch`, reduced by make_eta_fixture.py to OUT.
# Run once, from the repository root, on an otherwise quiet machine; commit OUT.
# Usage: tests/report/data/record_eta.sh BIN_DIR OUT.json RUNNERS ID TASK...
#   e.g. tests/report/data/record_eta.sh build/bin tests/report/data/eta_campaign4.json 2 rec4 \
#        bmm maxpool2d cross_entropy gelu
set -euo pipefail
[ $# -ge 5 ] || { echo "usage: $0 BIN_DIR OUT.json RUNNERS ID TASK..." >&2; exit 2; }
bin=$(cd "$1" && pwd) out=$2 runners=$3 id=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
# KB_RECORD_KEEP=DIR: the campaign's folder (results, watch.jsonl, launch.log) is kept there.
trap 'kill "$launch" 2>/dev/null || true; if [ -n "${KB_RECORD_KEEP:-}" ]; then mkdir -p "$KB_RECORD_KEEP"; cp -r "$work"/. "$KB_RECORD_KEEP"/; fi; rm -rf "$work"' EXIT
tasks=""
for t in "$@"; do tasks="$tasks${tasks:+, }\"$root/tasks/host/$t\""; done
cat >"$work/campaign.json" <<EOF
{"schema": "kernelbrain.campaign/1", "id": "$id", "backend": "host", "tasks": [$tasks],
 "budget": {"gpu_seconds": 600}, "lease_seconds": 5, "results_dir": "$work/results"}
EOF
"$bin/kb-launch" --local "$work/campaign.json" --runners "$runners" >"$work/launch.log" 2>&1 &
launch=$!
for _ in $(seq 600); do
  [ -f "$work/results/$id/redis.env" ] && break
  sleep 0.1
done
"$bin/kb-submit" --json watch "$work/campaign.json" -i 0.5 >"$work/watch.jsonl"
wait "$launch"
/usr/bin/python3 "$here/make_eta_fixture.py" "$work/watch.jsonl" \
  "$work/results/$id/summary.json" >"$out"
echo "$out: $(grep -c . "$work/watch.jsonl") snapshots, load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
