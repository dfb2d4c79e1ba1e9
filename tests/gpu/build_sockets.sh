#!/usr/bin/env bash
# The compile tier's seccomp filter (no unix sockets) on the GPU machine: honest load_inline,
# torch.compile and Triton builds still work under it, relu_build_unix.py reaches nothing, and
# cuInit and inductor's compile workers work with the filter applied first
# (tests/gpu/build_sockets.py says what each check is). From the repository root, with the
# bundle (../shared/gpu/README.md; it must hold kb-test-torch-eval, kb_build_modelnew.py,
# kb_sandbox_torch.py and libkb-confine.so):
#   KB_COMMIT=<sha> bash tests/gpu/build_sockets.sh      (outputs under $OUT)
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/gpu/lib.sh
kb_gpu_env /usr/local/cuda/extras/CUPTI/lib64
mkdir -p "$OUT"
kb_gpu_log "$OUT/build-sockets.txt"
python3 tests/gpu/build_sockets.py "$OUT" 2>&1 | tee -a "$OUT/build-sockets.txt"
exit "${PIPESTATUS[0]}"
