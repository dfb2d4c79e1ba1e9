#!/usr/bin/env python3
"""The misbehaving-candidate catalogue through kb-sandbox, on a GPU (tests/gpu/catalogue.sh).

Builds the task's oracle and every tests/gpu/catalogue/*.cu with the candidate ABI's nvcc command
(in parallel), starts `kb-sandbox-cuda --backend cuda`, prepares tasks/cuda/rowsum_small and evaluates
each candidate at the full tier (every input set, L2 flush, re-check after timing, CUPTI trace),
speaking the sandbox's framed JSON protocol (docs/sandbox.md: 4-byte big-endian length, one JSON
object). Plays kb-runner's part where the sandbox leaves it to the parent: a watchdog that kills
a sandbox that stops answering (status `timeout`), a new sandbox after a crash or a fatal
verdict, and the import allow-list, which kb-runner applies at the compile tier (here: the
symbols of tests/gpu/catalogue/expected.txt's compile-tier rows are checked with `nm`, see
REFUSED_IMPORTS). Compares each verdict with expected.txt and prints one line per candidate,
then a summary. Exit 0 when every verdict matched.

Usage: catalogue.py [--sandbox PATH (kb-sandbox-cuda)] [--out DIR] [--only NAME...] [--timeout S]
Standard library only (the GPU machine installs nothing).
"""
import argparse
import concurrent.futures
import json
import os
import re
import select
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CAT = os.path.join(ROOT, "tests", "gpu", "catalogue")
TASK = os.path.join(ROOT, "tasks", "cuda", "rowsum_small")

# kb-runner refuses these imports at the compile tier (docs/candidate-abi.md); the catalogue
# driver applies the same rule to the few symbols a catalogue candidate could import, so a
# candidate that needs one never reaches the sandbox, as in kb-runner.
REFUSED_IMPORTS = re.compile(
    r"^(cudaStream(Create|Destroy|Synchronize)\w*|cudaDeviceSynchronize|cudaEvent\w+|"
    r"cudaMalloc|cudaFree|cudaMallocManaged|cudaMallocHost|cudaGraph\w+|pthread_create|dlopen|"
    r"cu[A-Z]\w+|cupti\w+|fopen|open|socket|clock_gettime)$")


def nvcc_build(src, out, arch):
    cmd = ["nvcc", "-O3", "-arch=" + arch, "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared",
           "-I" + os.path.join(ROOT, "common", "include"), "-o", out, src]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, (p.stdout + p.stderr).strip()


def refused_import(lib):
    p = subprocess.run(["nm", "-D", "--undefined-only", lib], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        sym = line.split()[-1].split("@")[0]
        if REFUSED_IMPORTS.match(sym):
            return sym
    return None


class Sandbox:
    """One kb-sandbox process; its stderr is appended to `stderr_path`."""

    def __init__(self, path, workdir, stderr_path):
        self.p = subprocess.Popen([path, "--backend", "cuda", "--device", "0", "--dir", workdir],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(stderr_path, "ab"))

    def call(self, msg, timeout):
        """Sends `msg`, returns the reply (a dict), or None when the sandbox died or stayed
        silent for `timeout` seconds."""
        data = json.dumps(msg).encode()
        try:
            self.p.stdin.write(struct.pack(">I", len(data)) + data)
            self.p.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        head = self._read(4, timeout)
        if head is None:
            return None
        (n,) = struct.unpack(">I", head)
        body = self._read(n, timeout)
        return None if body is None else json.loads(body)

    def _read(self, n, timeout):
        buf = b""
        deadline = time.monotonic() + timeout
        fd = self.p.stdout.fileno()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                return None
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


def load_expected():
    exp = {}
    with open(os.path.join(CAT, "expected.txt")) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, status, reason = line.split(None, 2)
            exp[name] = (status, reason)
    return exp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sandbox", default="kb-sandbox-cuda")
    ap.add_argument("--out", default=os.environ.get("OUT", tempfile.mkdtemp()))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--timeout", type=float, default=10.0,
                    help="seconds one eval may take before the sandbox is killed")
    ap.add_argument("--arch", default="sm_90")
    a = ap.parse_args()
    task = json.load(open(os.path.join(TASK, "task.json")))
    exp = load_expected()
    names = a.only or sorted(exp)
    build = tempfile.mkdtemp(prefix="kb-cat-")
    jobs = {"oracle": os.path.join(TASK, task["oracle"]["source"])}
    jobs.update({n: os.path.join(CAT, n + ".cu") for n in names})
    t0 = time.monotonic()
    built = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        futs = {n: pool.submit(nvcc_build, src, os.path.join(build, n + ".so"), a.arch)
                for n, src in jobs.items()}
        for n, f in futs.items():
            built[n] = f.result()
    print("built %d libraries in %.1f s" % (len(jobs), time.monotonic() - t0), flush=True)
    if built["oracle"][0] != 0:
        print("FAIL the oracle does not build:\n" + built["oracle"][1])
        return 1
    prepare = {
        "op": "prepare", "key": "rowsum_small", "oracle": os.path.join(build, "oracle.so"),
        "inputs": task["inputs"], "outputs": task["outputs"],
        "sets": [{"seed": s["seed"], "distribution": s["distribution"], "low": s["low"],
                  "high": s["high"]} for s in task["input_sets"]],
        "atol": task["tolerance"]["atol"], "rtol": task["tolerance"]["rtol"]}
    full = {"op": "eval", "key": "rowsum_small", "sets": len(task["input_sets"]), "warmup": 3,
            "min_samples": 10, "max_samples": 200, "noise": 0.01, "max_seconds": 0.5,
            "flush_l2": True, "recheck": True, "trace": True}
    workdir = tempfile.mkdtemp(prefix="kb-cat-sb-")
    stderr_path = os.path.join(a.out, "catalogue-sandbox-stderr.txt")
    sb = None
    rows, mismatches = [], 0
    log = open(os.path.join(a.out, "catalogue-verdicts.jsonl"), "w")
    for n in names:
        want_status, want_reason = exp[n]
        rc, out = built[n]
        verdict = None
        if rc != 0:
            verdict = {"status": "compile_error", "reason": out.splitlines()[0] if out else ""}
        else:
            sym = refused_import(os.path.join(build, n + ".so"))
            if sym:
                verdict = {"status": "rejected", "reason": 'imports "%s" (compile tier)' % sym}
        if verdict is None:
            if sb is None:
                sb = Sandbox(a.sandbox, workdir, stderr_path)
                hello = sb.call({"op": "hello"}, 60)
                rep = sb.call(prepare, 120)
                if not rep or not rep.get("ok"):
                    sb.kill()
                    print("FAIL prepare: %s (hello %s); the sandbox's stderr:\n%s" %
                          (rep, hello, open(stderr_path, errors="replace").read()[-3000:]))
                    return 1
            req = dict(full, library=os.path.join(build, n + ".so"))
            t1 = time.monotonic()
            verdict = sb.call(req, a.timeout)
            if verdict is None:
                alive = sb.p.poll() is None
                sb_exit = sb.p.returncode
                sb.kill()
                sb = None
                if alive:
                    verdict = {"status": "timeout",
                               "reason": "no answer within %.0f s: the sandbox was killed" %
                               a.timeout}
                else:
                    verdict = {"status": "crash",
                               "reason": "the sandbox died without an answer (exit %s)" %
                               sb_exit}
            elif verdict.get("op") == "error":
                verdict = {"status": "infra_error", "reason": verdict.get("reason", str(verdict))}
            elif verdict.get("fatal") or verdict.get("status") == "crash":
                sb.kill()
                sb = None
            verdict["wall_s"] = round(time.monotonic() - t1, 2)
        verdict["name"] = n
        log.write(json.dumps(verdict) + "\n")
        log.flush()
        st, reason = verdict.get("status"), verdict.get("reason", "")
        ok = st == want_status and (want_reason == "-" or want_reason.lower() in reason.lower())
        mismatches += not ok
        med = verdict.get("timing", {}).get("median_us")
        rows.append((n, want_status, st, "%.2f" % med if med else "-", "yes" if ok else "NO",
                     reason[:110]))
        print("%-18s expected %-13s got %-13s %s" % (n, want_status, st, reason[:150]), flush=True)
    if sb is not None:
        sb.call({"op": "quit"}, 10)
        sb.kill()
    print("\n%-18s %-13s %-13s %10s %-5s %s" % ("candidate", "expected", "got", "median_us",
                                                 "match", "reason"))
    for r in rows:
        print("%-18s %-13s %-13s %10s %-5s %s" % r)
    print("catalogue: %d candidates, %d as expected, %d not" % (len(rows), len(rows) - mismatches,
                                                               mismatches))
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
