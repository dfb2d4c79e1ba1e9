# Sourced by the GPU scripts (tests/gpu/*.sh). They run from the repository root on the GPU
# machine with the kb-* programs bundled into $BUNDLE (default .gpu) and build nothing there.
#
# kb_gpu_env [LIBDIR...]: sets OUT (where the outputs go; default a new temporary folder) and B
# (the bundle), puts the bundle's bin/ on PATH and its lib/, then each LIBDIR (e.g. CUPTI's), on
# LD_LIBRARY_PATH, and exports KB_INCLUDE_DIR and KB_SANDBOX_DIR for kb-runner and kb-test-eval.
kb_gpu_env() {
  OUT=${OUT:-$(mktemp -d)}
  B=${BUNDLE:-.gpu}
  local libs=$PWD/$B/lib d
  for d in "$@"; do libs+=:$d; done
  export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=$PWD/$B/bin:$PATH
  export KB_INCLUDE_DIR=$PWD/common/include KB_SANDBOX_DIR=$PWD/$B/bin
}
