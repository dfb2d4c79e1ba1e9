"""The compile tier's seccomp filter on the GPU machine (docs/sandbox.md, "The compile tier"):
honest builds still work under it, and a file's module level still reaches no unix socket.

usage: build_sockets.py OUT_DIR      (from the repository root, after kb_gpu_env: kb-test-torch-eval
                                      and kb-import-kernelbench's bundle on PATH, KB_SANDBOX_DIR)

1. 1_relu imported for cuda; at smoke (tier 1) through kb-test-torch-eval: relu_inline.py
   (load_inline: nvcc, ninja, c++ in the builder), the task's compile seed (torch.compile: the
   warm-up pass runs inductor and ptxas in the builder), relu_triton.py (Triton) -> ok each;
   relu_build_unix.py (connects to the stream and datagram unix sockets this script listens on)
   -> compile_error, PermissionError, nothing reached the listeners.
2. The builder's order outside the builder: the driver's start (cuInit, which probes the MPS
   daemon's unix socket) first, then the filter (libkb-confine.so of KB_SANDBOX_DIR), then
   torch.compile with inductor's compile-worker pool (compile_threads as configured, the
   subprocess pool's fork or spawn workers) -> works. And the other order, the filter first:
   cuInit fails (on the H100 at fd75fd1, "Error 304: OS call failed"), which is why the builder
   starts the driver before its filter; printed, not a failure either way.
Prints one line per check; exits 1 when one failed.
"""
import ctypes
import json
import os
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
failures = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what), flush=True)
    if not cond:
        failures.append(what)


PROBE = r"""
import ctypes, os, sys
import torch
if sys.argv[1] == "driver-first":
    torch.cuda.init()
lib = ctypes.CDLL(os.path.join(os.environ["KB_SANDBOX_DIR"], "libkb-confine.so"))
why = ctypes.create_string_buffer(256)
assert lib.kb_confine_no_unix_sockets(why, 256) == 0, why.value
import torch._inductor.config as cfg
print("cuda", torch.cuda.is_available(), "compile_threads", cfg.compile_threads,
      "start", getattr(cfg, "worker_start_method", None), flush=True)
x = torch.randn(1 << 20, device="cuda")
f = torch.compile(lambda a: torch.nn.functional.gelu(a) + a.sin())
print("compiled", bool(torch.allclose(f(x), torch.nn.functional.gelu(x) + x.sin(), atol=1e-5)))
"""


def main(out):
    w = tempfile.mkdtemp(prefix="kb-sockets.", dir="/tmp")  # short: a unix socket path <108
    tasks = os.path.join(w, "tasks")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "kb-import-kernelbench"),
                    "--out", tasks, os.path.join(ROOT, "tests/tasks/kernelbench/1_relu.py")],
                   check=True, stdout=subprocess.DEVNULL)
    relu = os.path.join(tasks, "1_relu")
    stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stream.bind(os.path.join(w, "kb_listen.sock"))
    stream.listen(8)
    stream.setblocking(False)
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dgram.bind(os.path.join(w, "kb_listen_dgram.sock"))
    dgram.setblocking(False)
    cands = [os.path.join(ROOT, "tests/gpu/kernelbench_candidates/relu_inline.py"),
             os.path.join(relu, "seeds", "compile.py"),
             os.path.join(ROOT, "tests/gpu/kernelbench_candidates/relu_triton.py"),
             os.path.join(ROOT, "tests/tasks/modelnew_candidates/relu_build_unix.py")]
    with open(os.path.join(out, "build_sockets.err"), "w") as err:
        p = subprocess.run(["kb-test-torch-eval", "--backend", "cuda", "--cache",
                            os.path.join(w, "cache"), "--tiers", "1", relu] + cands,
                           stdout=subprocess.PIPE, stderr=err, text=True, timeout=900)
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    got = [(x["status"], x["reason"]) for x in lines]
    for x in got:
        print("   ", x)
    check(len(got) == 4 and [s for s, _ in got[:3]] == ["ok"] * 3,
          "load_inline, torch.compile and Triton build and run under the filter")
    check(len(got) == 4 and got[3][0] == "compile_error" and "PermissionError" in got[3][1],
          "relu_build_unix.py: compile_error, PermissionError")
    reached = []
    try:
        reached.append(stream.accept())
    except BlockingIOError:
        pass
    try:
        reached.append(dgram.recv(64))
    except BlockingIOError:
        pass
    check(not reached, "nothing reached the listeners: %s" % reached)
    p = subprocess.run([sys.executable, "-c", PROBE, "driver-first"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    print(p.stdout[-3000:])
    check(p.returncode == 0 and "cuda True" in p.stdout and "compiled True" in p.stdout,
          "cuInit, then the filter, then inductor's compile workers (the builder's order)")
    p = subprocess.run([sys.executable, "-c", PROBE, "filter-first"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    print("note: the filter first, then cuInit: %s" %
          ("works" if p.returncode == 0 and "cuda True" in p.stdout else
           "fails (why the builder starts the driver first): " + p.stdout.strip()[-300:]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
