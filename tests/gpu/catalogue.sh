#!/usr/bin/env bash
# The misbehaving-candidate catalogue (tests/gpu/catalogue/*.cu, each with its expected verdict,
# source, task and tier in its header; tests/catalogue/README.md lists them) through kb-sandbox on
# the GPU machine; called by tests/gpu/run.sh, or alone from the repository root after bundling
# (../shared/gpu/README.md):
#   bash tests/gpu/catalogue.sh [--only NAME...]   (kb-sandbox-cuda on PATH, nvcc and python3)
#   python3 tests/gpu/catalogue.py --list          (anywhere: parses the headers, prints the plan)
# Builds the candidates and the tasks' oracles with nvcc there (in parallel), evaluates each at
# its tier with tests/gpu/catalogue.py, and writes catalogue.txt (one line per candidate and a
# table) and catalogue-verdicts.jsonl under $OUT. Exit 0 when every verdict is the expected one,
# 77 when there is no kb-sandbox-cuda to run (skipped), 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$(mktemp -d)}
if ! command -v kb-sandbox-cuda > /dev/null; then
  echo "catalogue: no kb-sandbox-cuda on PATH: skipped" | tee "$OUT/catalogue.txt"
  exit 77
fi
python3 tests/gpu/catalogue.py --sandbox "$(command -v kb-sandbox-cuda)" --out "$OUT" "$@" \
  2>&1 | tee "$OUT/catalogue.txt"
