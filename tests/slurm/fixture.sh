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
    # e2e.sh runs eight host runners at once, 2 CPUs each (docs/cluster.md, CPUs per runner),
    # beside the redis and scheduler jobs: the node offers more CPUs than it has cores
    KB_SLURM_CPUS=${KB_SLURM_CPUS:-24} exec "$SCRIPTS/slurm-start.sh" "$2"
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
