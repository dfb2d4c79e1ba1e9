#!/bin/sh
# Installs the Debian/Ubuntu packages kernelbrain needs to build, test and run its demo.
# As root it runs apt-get; otherwise it prints the exact command and stops with exit code 1.
set -eu
# chromium: tests/report/html.sh loads an HTML report in headless Chromium.
# python3-torch: tools/kb-import-kernelbench (tests/tasks) reads KernelBench modules with it.
# iproute2: scripts/slurm-netns.sh (tests/multinode) builds its cluster with ip netns, veth, bridge.
# e2fsprogs, btrfs-progs: tests/e2e/write_faults.sh makes an ext4 (EIO) and a btrfs with quotas
# (EDQUOT, ENOSPC mid-file) on loop files.
# nodejs, npm: mock-llm (scripts/install-mock-llm.sh), the keyless-endpoint test's server; only
# when no npm is on PATH (a NodeSource nodejs bundles npm and conflicts with Debian's npm).
pkgs="build-essential cmake pkg-config libhiredis-dev libjansson-dev libcurl4-openssl-dev
libhdf5-dev hdf5-tools e2fsprogs btrfs-progs libzstd-dev zstd libssl-dev libcmocka-dev libseccomp-dev redis-server redis-tools
python3 python3-jsonschema python3-h5py python3-numpy python3-torch
chromium
slurmctld slurmd slurm-client munge
iproute2"
missing=""
command -v npm >/dev/null 2>&1 || pkgs="$pkgs nodejs npm"
for p in $pkgs; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "missing packages:$missing" >&2
  echo "install them with: sudo apt-get install -y$missing" >&2
  exit 1
fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
