#!/usr/bin/env python3
"""Checks the built-in CUDA suite on a real GPU (a manual check, not a ctest: CI has no GPU).

usage: gpu_check.py [--sets N] [--variants N] [--reps N] [--json FILE] TASK_DIR...

For every task: builds the oracle and every seed with the candidates' nvcc line
(nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC -cudart shared), draws input sets on the GPU with
PyTorch in the task's distributions (torch's generator, not the runner's splitmix64 one: same
distributions, other values), and for each set
  - runs the oracle and compares it with an independent PyTorch float64 reference of the op
    (REFERENCES below), so the oracle's semantics are checked, not only its self-consistency;
  - runs every seed with its outputs poisoned with NaN first and checks it against the oracle
    with the task's tolerance (the runner's rule: |got - want| <= atol + rtol |want|, NaN fails),
    and with room to spare: the most of its tolerance an element uses, |got - want| / (atol +
    rtol |want|), at most MARGIN_MAX (a third, tests/tasks/test_seed_margin.c's bound for the
    host tasks: the witness draws inputs no set has, and a seed near its tolerance fails some);
  - checks the inputs are unchanged.
It also times the oracle and each seed (CUDA events, median of --reps calls), and with
--variants N builds N random knob settings of each "tuned" seed (its `// kb:param` lines) and
checks them on the first set. Needs torch with CUDA and nvcc; prints one line per check and
exits 1 when any check failed.
"""
import argparse
import ctypes
import itertools
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import zlib
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn.functional as F

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
INCLUDE = os.path.join(ROOT, "common", "include")
NVCC = ["nvcc", "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared",
        "-I" + INCLUDE]
DTYPES = {"f32": (0, torch.float32), "f16": (1, torch.float16), "bf16": (2, torch.bfloat16),
          "f64": (3, torch.float64), "i32": (4, torch.int32), "i64": (5, torch.int64),
          "u8": (6, torch.uint8), "bool": (7, torch.bool)}


class KbTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * 8)]


def _attention(q, k, v):
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.matmul(torch.softmax(s, -1), v)


# PyTorch float64 references, one per task id: inputs as float64 (labels as int64)
REFERENCES = {
    "gelu": lambda x: F.gelu(x),
    "row_sum": lambda x: x.sum(1),
    "softmax": lambda x: torch.softmax(x, 1),
    "layernorm": lambda x, w, b: F.layer_norm(x, (x.shape[1],), w, b, 1e-5),
    "matmul_f32": lambda a, b: a @ b,
    "matmul_f16": lambda a, b: a @ b,
    "bmm": lambda a, b: torch.bmm(a, b),
    "transpose": lambda x: x.t(),
    "conv2d": lambda x, w, b: F.conv2d(x, w, b, padding=1),
    "maxpool2d": lambda x: F.max_pool2d(x, 3, 2, 1),
    "attention": _attention,
    "cross_entropy": lambda x, t: F.cross_entropy(x, t.remainder(x.shape[1]), reduction="none"),
    "scan": lambda x: torch.cumsum(x, 1),
}


def draw(spec, index, s, gen):
    """One input tensor of set `s` on the GPU."""
    shape, dt = spec["shape"], DTYPES[spec["dtype"]][1]
    kind = s["distribution"]
    if kind == "uniform":
        t = torch.rand(shape, generator=gen, device="cuda", dtype=torch.float64)
        t = t * (s["high"] - s["low"]) + s["low"]
    elif kind == "normal":
        t = torch.randn(shape, generator=gen, device="cuda", dtype=torch.float64)
        t = t * s["high"] + s["low"]
    else:
        t = torch.randint(math.ceil(s["low"]), math.ceil(s["high"]), shape, generator=gen,
                          device="cuda", dtype=torch.int64)
    if not dt.is_floating_point:
        t = torch.floor(t) if t.is_floating_point() else t
    return t.to(dt).contiguous()


def kb_view(t):
    kt = KbTensor()
    kt.data = t.data_ptr()
    kt.dtype = [v[0] for v in DTYPES.values() if v[1] == t.dtype][0]
    kt.ndim = t.dim()
    for i, n in enumerate(t.shape):
        kt.shape[i] = n
    return kt


def build(src, out, defines=()):
    cmd = NVCC + ["-D%s=%s" % d for d in defines] + ["-o", out, src]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return out if r.returncode == 0 else None, r.stderr[-2000:]


class Lib:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.fn = self.lib.kb_forward
        self.fn.restype = ctypes.c_int
        self.fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
                            ctypes.c_void_p]

    def __call__(self, ins, outs):
        a = (KbTensor * len(ins))(*[kb_view(t) for t in ins])
        b = (KbTensor * len(outs))(*[kb_view(t) for t in outs])
        return self.fn(a, len(ins), b, len(outs), torch.cuda.current_stream().cuda_stream)


MARGIN_MAX = 1.0 / 3.0  # the most of its tolerance an element of an honest seed may use


def compare(got, want, atol, rtol):
    """(ok, bad count, max abs error, max rel error, the most of the tolerance an element used:
    |got - want| / (atol + rtol |want|), infinite where they differ under a tolerance of 0 or
    an element is not finite) by the runner's rule."""
    g, w = got.double(), want.double()
    diff = (g - w).abs()
    finite = torch.isfinite(g) & torch.isfinite(w)
    tol = atol + rtol * w.abs()
    good = finite & (diff <= tol)
    bad = int((~good).sum())
    d = torch.where(finite, diff, torch.zeros_like(diff))
    rel = torch.where(finite & (w != 0), diff / w.abs(), torch.zeros_like(diff))
    use = torch.where(d == 0, torch.zeros_like(d), d / tol)  # d / 0 is inf
    worst = float(use.max()) if bool(finite.all()) else math.inf
    return bad == 0, bad, float(d.max()), float(rel.max()), worst


def timed(fn, reps):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    times = []
    for _ in range(reps):
        start.record()
        rc = fn()
        end.record()
        torch.cuda.synchronize()
        if rc:
            return None
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def knob_space(src_path):
    knobs = []
    for line in open(src_path):
        m = re.match(r"\s*//\s*kb:param\s+([A-Za-z_][A-Za-z0-9_]*)\s+(.+)", line)
        if m:
            knobs.append((m.group(1), m.group(2).split()))
    return knobs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", type=int, default=0, help="input sets per task (0: all)")
    ap.add_argument("--variants", type=int, default=0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("tasks", nargs="+")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kb-gpucheck-")
    specs = {}
    jobs = []
    for d in args.tasks:
        spec = json.load(open(os.path.join(d, "task.json")))
        specs[d] = spec
        jobs.append((d, "oracle", os.path.join(d, spec["oracle"]["source"]), ()))
        for s in spec["seeds"]:
            jobs.append((d, s["name"], os.path.join(d, s["source"]), ()))
            if s["name"] == "tuned" and args.variants:
                space = knob_space(os.path.join(d, s["source"]))
                combos = list(itertools.product(*[v for _, v in space]))
                rnd = random.Random(zlib.crc32(spec["id"].encode()))
                for combo in rnd.sample(combos, min(args.variants, len(combos))):
                    defs = tuple(zip([n for n, _ in space], combo))
                    tag = "tuned[" + ",".join("%s=%s" % x for x in defs) + "]"
                    jobs.append((d, tag, os.path.join(d, s["source"]), defs))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        outs = list(pool.map(lambda j: build(j[2], os.path.join(
            work, "%s-%d.so" % (specs[j[0]]["id"], jobs.index(j))), j[3]), jobs))
    libs = {}
    failures = 0
    report = []
    for job, (path, log) in zip(jobs, outs):
        d, name = job[0], job[1]
        if path is None:
            variant = name.startswith("tuned[")
            print("%-14s %-40s %s" % (specs[d]["id"], name,
                                      "does not build (a knob setting the compile tier rejects)"
                                      if variant and "#error" in log else "BUILD FAILED\n" + log))
            if not (variant and "#error" in log):
                failures += 1
            continue
        libs.setdefault(d, []).append((name, Lib(path)))
    for d in args.tasks:
        spec = specs[d]
        tid = spec["id"]
        atol = spec.get("tolerance", {}).get("atol", 1e-4)
        rtol = spec.get("tolerance", {}).get("rtol", 1e-4)
        entries = dict((n, l) for n, l in libs.get(d, []))
        if "oracle" not in entries:
            failures += 1
            continue
        sets = spec["input_sets"][: args.sets or None]
        for si, s in enumerate(sets):
            gen = torch.Generator(device="cuda")
            gen.manual_seed(s["seed"])
            ins = [draw(t, i, s, gen) for i, t in enumerate(spec["inputs"])]
            sums = [t.double().sum().item() if t.dtype != torch.bool else 0 for t in ins]
            outs = [torch.full(t["shape"], float("nan"), device="cuda",
                               dtype=DTYPES[t["dtype"]][1]) for t in spec["outputs"]]
            rc = entries["oracle"](ins, outs)
            torch.cuda.synchronize()
            want = [o.clone() for o in outs]
            ref_in = [t.double() if t.is_floating_point() else t.long() for t in ins]
            ref = REFERENCES[tid](*ref_in)
            ref = ref.to(want[0].dtype).double()
            ok, bad, mabs, mrel, _ = compare(want[0], ref, atol / 10, rtol / 10)
            line = "%-14s set %d %-8s oracle vs torch: %s (bad %d, max abs %.3g, max rel %.3g)" % (
                tid, si, s["distribution"], "ok" if ok and rc == 0 else "FAIL", bad, mabs, mrel)
            print(line, flush=True)
            failures += 0 if ok and rc == 0 else 1
            del ref, ref_in
            for name, lib in libs[d]:
                if name == "oracle" or (name.startswith("tuned[") and si > 0):
                    continue
                for o in outs:
                    o.fill_(float("nan")) if o.is_floating_point() else o.fill_(0xa5)
                rc = lib(ins, outs)
                torch.cuda.synchronize()
                res = [compare(o, w, atol, rtol) for o, w in zip(outs, want)]
                ok = rc == 0 and all(r[0] for r in res)
                use = max(r[4] for r in res)
                near = ok and not use <= MARGIN_MAX
                unchanged = all((t.double().sum().item() if t.dtype != torch.bool else 0) == v
                                for t, v in zip(ins, sums))
                t_ms = timed(lambda: lib(ins, outs), args.reps) if si == 0 and ok else None
                print("%-14s set %d %-40s %s%s (bad %d, max abs %.3g, max rel %.3g, tolerance "
                      "used %.3f)%s" % (
                          tid, si, name, "ok" if ok else "FAIL rc=%d" % rc,
                          "" if unchanged else " INPUTS CHANGED", res[0][1], res[0][2],
                          res[0][3], use, "  %.3f ms" % t_ms if t_ms is not None else ""),
                      flush=True)
                if near:
                    print("%-14s set %d %-40s FAIL: uses %.3f of its tolerance, over %.3f: "
                          "other draws would fail it now and then" % (tid, si, name, use,
                                                                    MARGIN_MAX), flush=True)
                failures += 0 if ok and unchanged and not near else 1
                report.append({"task": tid, "set": si, "candidate": name, "ok": ok,
                               "max_abs": res[0][2], "max_rel": res[0][3], "tol_used": use,
                               "ms": t_ms})
            if si == 0:
                t_ms = timed(lambda: entries["oracle"](ins, outs), max(1, args.reps // 2))
                print("%-14s oracle time %.3f ms" % (tid, t_ms), flush=True)
                report.append({"task": tid, "set": 0, "candidate": "oracle", "ms": t_ms})
            del ins, outs, want
            torch.cuda.empty_cache()
    if args.json:
        json.dump(report, open(args.json, "w"), indent=1)
    print("%d failures" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
