# Sourced by the GPU scripts (tests/gpu/*.sh). They run from the repository root on the GPU
# machine with the kb-* programs bundled into $BUNDLE (default .gpu) and build nothing there.
#
# kb_gpu_env [LIBDIR...]: sets OUT (where the outputs go; default a new temporary folder) and B
# (the bundle), puts the bundle's bin/ on PATH and its lib/, then each LIBDIR (e.g. CUPTI's), on
# LD_LIBRARY_PATH, and exports KB_INCLUDE_DIR and KB_SANDBOX_DIR for kb-runner and kb-test-eval,
# and KB_PYTHON: the interpreter first on PATH, the one with torch on the GPU machine (the
# runner's default, /usr/bin/python3, has none there: the suite campaign's torch baselines at
# 24c9959 were "not timed: No module named 'torch'", 74 times).
kb_gpu_env() {
  OUT=${OUT:-$(mktemp -d)}
  B=${BUNDLE:-.gpu}
  local libs=$PWD/$B/lib d
  for d in "$@"; do libs+=:$d; done
  export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=$PWD/$B/bin:$PATH
  export KB_INCLUDE_DIR=$PWD/common/include KB_SANDBOX_DIR=$PWD/$B/bin
  export KB_PYTHON=${KB_PYTHON:-$(command -v python3)}
}

# kb_gpu_log LOG: starts LOG with the time, $KB_COMMIT, the CPU count and the GPUs
# (nvidia-smi's index, name and driver per GPU, or its error on a machine without one).
kb_gpu_log() {
  {
    echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) commit ${KB_COMMIT:-unknown}; $(nproc) CPUs;"
    nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>&1
  } > "$1"
}

# kb_six_task_campaign DIR ID PER_TASK [BACKEND]: prints the campaign of the multi-runner tests
# (two_gpus.sh, two_runners.sh): six tasks of the built-in suite (gelu, row_sum, softmax,
# transpose, cross_entropy, maxpool2d; BACKEND host: the first six of examples/suite-host),
# seeds and up to PER_TASK tune proposals each, id ID, results under DIR/results.
kb_six_task_campaign() {
  python3 - "$PWD" "$1" "$2" "$3" "${4:-cuda}" <<'PY'
import json, os, sys
root, d, cid, per_task, backend = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), \
    sys.argv[5]
if backend == "host":
    c = json.load(open(root + "/examples/suite-host/campaign.json"))
    c["tasks"] = [os.path.normpath(os.path.join(root, "examples/suite-host", t))
                  for t in c["tasks"]][:6]
else:
    c = json.load(open(root + "/examples/suite/campaign.json"))
    keep = ["gelu", "row_sum", "softmax", "transpose", "cross_entropy", "maxpool2d"]
    c["tasks"] = [root + "/tasks/cuda/" + t for t in keep]
c["id"] = cid
c["results_dir"] = d + "/results"
c["generators"]["max_per_task"] = per_task
print(json.dumps(c, indent=1))
PY
}
