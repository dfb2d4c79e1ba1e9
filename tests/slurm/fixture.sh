#!/usr/bin/env bash
# fixture.sh start|stop STATE_DIR: the ctest fixture around the slurm tests. As root, starts
# (scripts/slurm-start.sh, which installs the packages through scripts/install-deps.sh when they
# are missing) or stops (scripts/slurm-stop.sh) a single-node Slurm kept in STATE_DIR. Without
# root there is nothing it may start: the start is skipped (77) and so are the tests.
set -euo pipefail
SCRIPTS=$(cd "$(dirname "$0")/../../scripts" && pwd)
case ${1:-} in
  start)
    if [ "$(id -u)" -ne 0 ]; then
      echo "SKIP: starting a Slurm needs root" >&2
      exit 77
    fi
    exec "$SCRIPTS/slurm-start.sh" "$2"
    ;;
  stop)
    if [ "$(id -u)" -ne 0 ]; then exit 0; fi
    exec "$SCRIPTS/slurm-stop.sh" "$2"
    ;;
  *)
    echo "usage: $0 start|stop STATE_DIR" >&2
    exit 2
    ;;
esac
