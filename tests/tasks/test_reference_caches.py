"""torch.compile of a task's module compiled ahead (docs/sandbox.md, "torch.compile compiled
ahead"): the two ends that run in Python (ctest tasks_reference_caches).

- kb_build_modelnew.py --reference: its command line (a source with --reference, or neither, is
  a usage error, exit 2); on the host backend, or where torch has no torch.compile or no device
  is visible, build.json says "warmed": false and why, exit 0, and nothing is written to the
  caches; with both (a GPU machine with torch 2), "warmed": true and inductor's cache holds the
  compiled module.
- kb_sandbox_torch.py --jit DIR: refused without --trusted (exit 2); reference_caches(DIR) points
  TRITON_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR at DIR/triton and DIR/inductor, made.

usage: test_reference_caches.py BUILDER WORKER MODULE
  (the build's kb_build_modelnew.py and kb_sandbox_torch.py, and a task's torch module)
"""
import json
import os
import subprocess
import sys
import tempfile

from worker_module import load_worker

failures = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def builder(script, args, env):
    return subprocess.run([sys.executable, "-I", "-B", script] + args, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__)
    script, worker, module = argv[1:]
    tmp = tempfile.mkdtemp(prefix="kb-test-refcache.")
    jit = os.path.join(tmp, "reference.jit")
    env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(jit, "triton"),
               TORCHINDUCTOR_CACHE_DIR=os.path.join(jit, "inductor"))
    for sub in ("triton", "inductor"):
        os.makedirs(os.path.join(jit, sub))
    out = os.path.join(tmp, "out")
    os.makedirs(out)
    # the command line
    for bad in (["--reference", "--source", module, "--oracle", module, "--out", out],
                ["--oracle", module, "--out", out],
                ["--reference", "--out", out]):
        p = builder(script, bad, env)
        check(p.returncode == 2 and "usage" in p.stderr, "builder %s: usage error (exit %d)"
              % (" ".join(a for a in bad if a.startswith("--")), p.returncode))
    # the host backend: nothing compiled, said why
    p = builder(script, ["--reference", "--oracle", module, "--out", out, "--backend", "host"],
                env)
    m = json.load(open(os.path.join(out, "build.json")))
    check(p.returncode == 0 and m.get("status") == "ok" and m.get("label") == "reference" and
          m.get("warmed") is False and "host" in m.get("reason", ""),
          "host backend: not compiled, said why: %s" % m)
    # the cuda backend: compiled where torch.compile and a device are there, else said why
    p = builder(script, ["--reference", "--oracle", module, "--out", out, "--backend", "cuda"],
                env)
    m = json.load(open(os.path.join(out, "build.json")))
    cached = sum(len(files) for _, _, files in os.walk(os.path.join(jit, "inductor")))
    print("cuda backend: %s; %d file(s) in inductor's cache; stderr tail: %s"
          % (m, cached, p.stderr.strip().splitlines()[-1:] if p.stderr.strip() else "-"))
    check(p.returncode == 0 and m.get("status") == "ok" and m.get("label") == "reference",
          "cuda backend: a build.json, never a verdict")
    check((m.get("warmed") is True) == (cached > 0),
          "compiled exactly when inductor's cache has the module (warmed %s, %d files)"
          % (m.get("warmed"), cached))
    check(m.get("warmed") is True or bool(m.get("reason")), "not compiled: said why")
    # the worker's --jit
    p = subprocess.run([sys.executable, "-I", worker, "--backend", "host", "--device", "0",
                        "--dir", tmp, "--parent", "1", "--jit", jit],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 2 and "trusted" in p.stderr,
          "worker: --jit without --trusted refused (exit %d: %s)" % (p.returncode,
                                                                      p.stderr.strip()))
    w = load_worker(worker)
    folder = os.path.join(tmp, "worker.jit")
    w.reference_caches(folder)
    check(os.environ.get("TRITON_CACHE_DIR") == os.path.join(folder, "triton") and
          os.environ.get("TORCHINDUCTOR_CACHE_DIR") == os.path.join(folder, "inductor") and
          os.path.isdir(os.path.join(folder, "triton")) and
          os.path.isdir(os.path.join(folder, "inductor")),
          "worker: reference_caches points both caches into the folder, made")
    subprocess.run(["rm", "-rf", tmp])
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
