#!/usr/bin/env bash
# fixture.sh start|stop STATE_DIR [BIN]: the ctest fixture around the multinode tests: builds
# (scripts/slurm-netns.sh start) or tears down (stop) the multi-node cluster kept in STATE_DIR.
# When the cluster cannot be made here (not root, no network namespaces or veths), start exits 77
# (skipped) and leaves its one-line reason in STATE_DIR/unavailable, which every test prints
# when it skips too.
set -uo pipefail
SCRIPT=$(cd "$(dirname "$0")/../../scripts" && pwd)/slurm-netns.sh
case ${1:-} in
  start)
    mkdir -p "$2"
    rm -f "$2/unavailable"
    rc=0
    bash "$SCRIPT" start "$2" "$3" 2> "$2/start.err" || rc=$?
    cat "$2/start.err" >&2
    if [ "$rc" -eq 77 ]; then sed -n 's/^SKIP: //p' "$2/start.err" | head -1 > "$2/unavailable"; fi
    exit "$rc"
    ;;
  stop)
    if [ "$(id -u)" -ne 0 ]; then exit 0; fi
    exec bash "$SCRIPT" stop "$2"
    ;;
  *)
    echo "usage: $0 start|stop STATE_DIR [BIN]" >&2
    exit 2
    ;;
esac
