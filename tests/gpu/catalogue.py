#!/usr/bin/env python3
"""The misbehaving-candidate catalogue through kb-sandbox, on a GPU (tests/gpu/catalogue.sh).

Every tests/gpu/catalogue/*.cu starts with a header (CONTRACTS.md of issue 12; the one source of
truth for expected verdicts, shared with tests/runner/test_catalogue.c for the host catalogue):
    // catalogue: expect <status> "<reason substring>"   (or - for any reason)
    // catalogue: source <where the trick comes from>
    // catalogue: task <path relative to the repository root>   (optional, tasks/cuda/rowsum_small)
    // catalogue: tier <smoke|screen|full>                       (optional, default full)
Builds each task's oracle and every candidate with the candidate ABI's nvcc command (in
parallel), starts `kb-sandbox-cuda --backend cuda`, prepares each task and evaluates each
candidate at its tier (smoke: one input set, 3-5 samples; screen: all sets, 10-50; full: all sets,
20-200, L2 flush, re-check after timing, CUPTI trace), speaking the sandbox's framed JSON protocol
(docs/sandbox.md: 4-byte big-endian length, one JSON object). Plays kb-runner's part where the
sandbox leaves it to the parent: a watchdog that kills a sandbox that stops answering (status
`timeout`), a new sandbox after a crash or a fatal verdict, and the import allow-list, which
kb-runner applies at the compile tier (here: the undefined symbols of each library are checked
with `nm` against REFUSED_IMPORTS, a subset of runner/allowlist.c's families). Compares each
verdict with the header and prints one line per candidate, then the table. Exit 0 when every
verdict matched.

Usage: catalogue.py [--sandbox PATH (kb-sandbox-cuda)] [--out DIR] [--only NAME...] [--timeout S]
       catalogue.py --list      (parses every header and prints the plan; needs no GPU)
Standard library only (the GPU machine installs nothing).
"""
import argparse
import concurrent.futures
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CAT = os.path.join(ROOT, "tests", "gpu", "catalogue")
DEFAULT_TASK = "tasks/cuda/rowsum_small"
STATUSES = {"ok", "compile_error", "wrong_output", "crash", "timeout", "rejected", "infra_error"}
TIERS = {  # the default ladder (common/src/campaign.c)
    "smoke": {"sets": 1, "warmup": 1, "min_samples": 3, "max_samples": 5, "max_seconds": 0.5},
    "screen": {"sets": 0, "warmup": 2, "min_samples": 10, "max_samples": 50, "max_seconds": 1.0},
    "full": {"sets": 0, "warmup": 3, "min_samples": 10, "max_samples": 200, "max_seconds": 0.5},
}
HEADER = re.compile(r"catalogue:\s*(\S+)\s*(.*?)\s*$")

# kb-runner refuses these imports at the compile tier (docs/candidate-abi.md); the catalogue
# driver applies the same rule to the few symbols a catalogue candidate could import, so a
# candidate that needs one never reaches the sandbox, as in kb-runner.
REFUSED_IMPORTS = re.compile(
    r"^(cudaStream(Create|Destroy|Synchronize)\w*|cudaDeviceSynchronize|cudaEvent\w+|"
    r"cudaMalloc|cudaFree|cudaMallocManaged|cudaMallocHost|cudaGraph\w+|pthread_create|dlopen|"
    r"dlsym|cudaLaunchHostFunc|cudaStreamSetAttribute|cudaDeviceSetLimit|cudaCtx\w+|syscall|"
    r"getenv|environ|cu[A-Z]\w+|cupti\w+|fopen|open|socket|clock_gettime)$")


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

    def __init__(self, path, workdir, stderr_path, ro):
        self.p = subprocess.Popen([path, "--backend", "cuda", "--device", "0", "--dir", workdir,
                                   "--ro", ro],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(stderr_path, "ab"))

    def call(self, msg, timeout):
        """Sends `msg`, returns the reply (a dict), or None when the sandbox died or stayed
        silent for `timeout` seconds."""
        data = json.dumps(msg).encode()
        self.eof = False
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
                self.eof = True  # the sandbox closed its end: it ended or is ending
                return None
            buf += chunk
        return buf

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


def parse_header(path):
    """The header of one candidate: {"status", "reason" ("" = any), "source", "task", "tier"}.
    Raises ValueError naming the file and the field when it is malformed."""
    h = {"task": DEFAULT_TASK, "tier": "full"}
    with open(path, errors="replace") as f:
        for line in f:
            if not line.startswith("//"):
                break
            m = HEADER.search(line)
            if not m:
                continue
            key, value = m.group(1), m.group(2)
            if key == "expect":
                e = re.match(r'^(\S+)\s+(?:-|"([^"]+)")$', value)
                if not e or e.group(1) not in STATUSES:
                    raise ValueError('%s: catalogue: expect: want <status> "<reason substring>" or '
                                     '<status> -, status one of %s; got "%s"' %
                                     (path, ", ".join(sorted(STATUSES)), value))
                h["status"], h["reason"] = e.group(1), e.group(2) or ""
            elif key in ("source", "task"):
                if not value:
                    raise ValueError("%s: catalogue: %s: empty" % (path, key))
                h[key] = value
            elif key == "tier":
                if value not in TIERS:
                    raise ValueError("%s: catalogue: tier: want smoke, screen or full, got \"%s\"" %
                                     (path, value))
                h["tier"] = value
            else:
                raise ValueError('%s: unknown line "catalogue: %s"' % (path, key))
    for key in ("status", "source"):
        if key not in h:
            raise ValueError('%s: the header has no "catalogue: %s" line' %
                             (path, "expect" if key == "status" else key))
    return h


def load_catalogue():
    """{name: header} for every tests/gpu/catalogue/*.cu, and the list of header errors."""
    cat, errors = {}, []
    for f in sorted(os.listdir(CAT)):
        if f.endswith(".cu"):
            try:
                cat[f[:-3]] = parse_header(os.path.join(CAT, f))
            except ValueError as e:
                errors.append(str(e))
    return cat, errors


def print_plan(cat):
    print("%-22s %-13s %-6s %-24s %s" % ("candidate", "expected", "tier", "task", "reason substring"))
    for n, h in sorted(cat.items()):
        print("%-22s %-13s %-6s %-24s %s" % (n, h["status"], h["tier"], h["task"],
                                            h["reason"] or "-"))
    tasks = sorted({h["task"] for h in cat.values()})
    print("catalogue: %d candidates, %d expect ok, on %s" %
          (len(cat), sum(h["status"] == "ok" for h in cat.values()), ", ".join(tasks)))


def task_requests(rel, build):
    """The oracle job, the prepare request and the task's key for the task folder `rel`."""
    d = os.path.join(ROOT, rel)
    task = json.load(open(os.path.join(d, "task.json")))
    key = task["id"]
    oracle = os.path.join(build, "oracle-%s.so" % key)
    prepare = {
        "op": "prepare", "key": key, "oracle": oracle,
        "inputs": task["inputs"], "outputs": task["outputs"],
        "sets": [{"seed": s["seed"], "distribution": s["distribution"], "low": s["low"],
                  "high": s["high"]} for s in task["input_sets"]],
        "atol": task["tolerance"]["atol"], "rtol": task["tolerance"]["rtol"]}
    return (os.path.join(d, task["oracle"]["source"]), oracle), prepare, len(task["input_sets"])


def eval_request(key, tier, n_sets, library):
    """The eval request of `tier` (TIERS); full keeps the catalogue's historical settings."""
    t = TIERS[tier]
    return {"op": "eval", "key": key, "library": library,
            "sets": t["sets"] if t["sets"] > 0 else n_sets, "warmup": t["warmup"],
            "min_samples": t["min_samples"], "max_samples": t["max_samples"], "noise": 0.01,
            "max_seconds": t["max_seconds"], "flush_l2": True, "recheck": True, "trace": True}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sandbox", default="kb-sandbox-cuda")
    ap.add_argument("--out", default=os.environ.get("OUT", tempfile.mkdtemp()))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--timeout", type=float, default=10.0,
                    help="seconds one eval may take before the sandbox is killed")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--list", action="store_true",
                    help="parse every header, print the plan and exit (no GPU, no build)")
    a = ap.parse_args()
    cat, errors = load_catalogue()
    for e in errors:
        print("FAIL " + e)
    if errors:
        return 1
    unknown = [n for n in (a.only or []) if n not in cat]
    if unknown:
        print("FAIL no such candidate in %s: %s" % (CAT, ", ".join(unknown)))
        return 1
    names = a.only or sorted(cat)
    if a.list:
        print_plan({n: cat[n] for n in names})
        return 0
    build = tempfile.mkdtemp(prefix="kb-cat-")
    tasks = {}
    jobs = {}
    for rel in sorted({cat[n]["task"] for n in names}):
        (src, lib), prepare, n_sets = task_requests(rel, build)
        tasks[rel] = (prepare, n_sets)
        jobs["oracle-" + prepare["key"]] = (src, lib)
    jobs.update({n: (os.path.join(CAT, n + ".cu"), os.path.join(build, n + ".so")) for n in names})
    t0 = time.monotonic()
    built = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        futs = {n: pool.submit(nvcc_build, src, lib, a.arch) for n, (src, lib) in jobs.items()}
        for n, f in futs.items():
            built[n] = f.result()
    print("built %d libraries in %.1f s" % (len(jobs), time.monotonic() - t0), flush=True)
    for n in jobs:
        if n.startswith("oracle-") and built[n][0] != 0:
            print("FAIL the oracle %s does not build:\n%s" % (jobs[n][0], built[n][1]))
            return 1
    workdir = tempfile.mkdtemp(prefix="kb-cat-sb-")
    stderr_path = os.path.join(a.out, "catalogue-sandbox-stderr.txt")
    sb = None
    prepared = set()
    rows, mismatches = [], 0
    log = open(os.path.join(a.out, "catalogue-verdicts.jsonl"), "w")
    for n in names:
        h = cat[n]
        want_status, want_reason = h["status"], h["reason"]
        prepare, n_sets = tasks[h["task"]]
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
                sb = Sandbox(a.sandbox, workdir, stderr_path, build)
                prepared = set()
                hello = sb.call({"op": "hello"}, 60)
            if prepare["key"] not in prepared:
                rep = sb.call(prepare, 120)
                if not rep or not rep.get("ok"):
                    sb.kill()
                    print("FAIL prepare %s: %s (hello %s); the sandbox's stderr:\n%s" %
                          (h["task"], rep, hello,
                           open(stderr_path, errors="replace").read()[-3000:]))
                    return 1
                prepared.add(prepare["key"])
            req = eval_request(prepare["key"], h["tier"], n_sets, os.path.join(build, n + ".so"))
            t1 = time.monotonic()
            verdict = sb.call(req, a.timeout)
            if verdict and verdict.get("op") == "error" and verdict.get("field") == "key":
                # the previous candidate damaged the prepared task, which the sandbox dropped:
                # prepare it again, as kb-runner does
                rep = sb.call(prepare, 120)
                if rep and rep.get("ok"):
                    verdict = sb.call(req, a.timeout)
            if verdict is None:
                if sb.eof:  # end of file comes as the process exits, before it can be reaped
                    try:
                        sb.p.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        pass
                alive = sb.p.poll() is None
                sb_exit = sb.p.returncode
                sb.kill()
                sb = None
                if alive:
                    verdict = {"status": "timeout",
                               "reason": "no answer within %.0f s: the sandbox was killed" %
                               a.timeout}
                elif sb_exit in (-signal.SIGSYS, 159):  # 159: KB__SANDBOX_EXIT_BLOCKED
                    # kb-runner's rule (runner/evaluator.c): a death by SIGSYS is a system call
                    # the confinement refused, named by the sandbox's last stderr line
                    tail = open(stderr_path, errors="replace").read()[-4000:]
                    m = re.findall(r"kb-sandbox: blocked system call (\S+) \(", tail)
                    verdict = {"status": "rejected",
                               "reason": ("called %s(2), which candidates may not use" % m[-1])
                               if m else "killed by SIGSYS: a system call candidates may not use"}
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
        verdict["expected"] = {"status": want_status, "reason": want_reason}
        log.write(json.dumps(verdict) + "\n")
        log.flush()
        st, reason = verdict.get("status"), verdict.get("reason", "")
        ok = st == want_status and want_reason.lower() in reason.lower()
        mismatches += not ok
        med = verdict.get("timing", {}).get("median_us")
        rows.append((n, want_status, st, "%.2f" % med if med else "-", "yes" if ok else "NO",
                     (want_reason or "-")[:40], reason[:110]))
        print("%-22s expected %-13s got %-13s %s" % (n, want_status, st, reason[:150]), flush=True)
    if sb is not None:
        sb.call({"op": "quit"}, 10)
        sb.kill()
    print("\n%-22s %-13s %-13s %10s %-5s %-40s %s" % ("candidate", "expected", "got", "median_us",
                                                       "match", "expected reason", "reason"))
    for r in rows:
        print("%-22s %-13s %-13s %10s %-5s %-40s %s" % r)
    print("catalogue: %d candidates, %d as expected, %d not" % (len(rows), len(rows) - mismatches,
                                                               mismatches))
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
