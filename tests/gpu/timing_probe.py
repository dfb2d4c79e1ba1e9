#!/usr/bin/env python3
"""Why the sandbox and the independent timer disagree on one candidate (issue 17: honest_twopass
26.70 us in the sandbox against 21.92 us independent, while other kernels agree within 1.3%):
every hypothesis in one GPU run (tests/gpu/timing_probe.sh).

Sandbox side: the candidates (default honest_twopass, and honest_vec4 as the control that
agrees) evaluated by kb-sandbox-cuda at the catalogue's full tier (tests/gpu/catalogue.py) in
variants, each with "dump_samples" (every sample and every timed call back in the reply):
  base            the catalogue's full tier (L2 flush, re-check, CUPTI kernel trace)
  no_trace        without the kernel trace (CUPTI activity records cost host time per launch)
  no_flush        without the L2 flush
  no_trace_flush  neither
  wait_each       a host wait after every timed sample ("sample_chunk": 1, before issue 17)
  base_again      base once more at the end (clocks and the stream-ordered pool warm)
For the traced variants the kernel records give, per timed call, the span from its first kernel's
start to its last kernel's end and the gaps between its kernels: a call's event time well above
its kernel span is time inside the timed window with no kernel of the candidate running (the host
queueing the call behind an idle GPU, the pool's allocation).
Independent side: bench/gpu/indep_timer.cu (built here by timing_probe.sh) as compare.sh runs
it, and with the sandbox's habits added one at a time: --pool-keep, --l2-reset, --device-sync,
all three, and --no-flush.
Prints one row per variant (median, p10, p90, noise, samples, batch, flushed, waits; calls over
1.1x the median; median kernel span and gap) and the ratios that answer each hypothesis; writes
$OUT/timing-probe.jsonl (every reply and timer line, with the samples).
Standard library only (the GPU machine installs nothing).
usage: timing_probe.py --sandbox PATH --indep DIR [--only NAME...] [--out DIR]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import catalogue  # noqa: E402  (the sandbox protocol, the builds, the requests)

VARIANTS = [
    ("base", {}),
    ("no_trace", {"trace": False}),
    ("no_flush", {"flush_l2": False}),
    ("no_trace_flush", {"trace": False, "flush_l2": False}),
    ("wait_each", {"sample_chunk": 1}),
    ("base_again", {}),
]
INDEP = [("indep", []), ("indep_pool_keep", ["--pool-keep"]), ("indep_l2_reset", ["--l2-reset"]),
         ("indep_device_sync", ["--device-sync"]),
         ("indep_all3", ["--pool-keep", "--l2-reset", "--device-sync"]),
         ("indep_no_flush", ["--no-flush"])]
SHAPES = ["--in", "f32:2048x4096", "--out", "f32:2048"]  # tasks/cuda/rowsum_small


def quant(v, q):
    s = sorted(v)
    if not s:
        return float("nan")
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def spans(rep):
    """Per timed call of a flushed sample: (span of its kernels, sum of gaps between them), us,
    from the reply's kernel records (the candidate's; calls split where a gap exceeds 20 us,
    the flush between two calls being longer than that)."""
    ks = sorted((k["start_ns"], k["end_ns"]) for k in rep.get("kernels", []))
    calls, cur = [], []
    for s, e in ks:
        if cur and s - cur[-1][1] > 20000:
            calls.append(cur)
            cur = []
        cur.append((s, e))
    if cur:
        calls.append(cur)
    out = []
    for c in calls:
        gap = sum(max(0, c[i + 1][0] - c[i][1]) for i in range(len(c) - 1))
        out.append(((c[-1][1] - c[0][0]) / 1e3, gap / 1e3))
    return out


def row(label, med, p10, p90, noise, n, batch, flushed, waits, calls, span=None):
    over = sum(1 for c in calls if c > 1.1 * med) if calls else 0
    sp = "%8.2f %8.2f" % (statistics.median(x[0] for x in span),
                          statistics.median(x[1] for x in span)) if span else "%8s %8s" % ("-", "-")
    print("%-28s %9.3f %9.3f %9.3f %6.2f%% %6d %5d %4s %5s %5d/%-5d %s" %
          (label, med, p10, p90, 100 * noise, n, batch, "yes" if flushed else "no",
           waits if waits is not None else "-", over, len(calls), sp), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sandbox", required=True)
    ap.add_argument("--indep", required=True, help="folder of indep_<name> builds")
    ap.add_argument("--only", nargs="*", default=["honest_twopass", "honest_vec4"])
    ap.add_argument("--out", default=os.environ.get("OUT", tempfile.mkdtemp()))
    ap.add_argument("--arch", default="sm_90")
    a = ap.parse_args()
    build = tempfile.mkdtemp(prefix="kb-probe-")
    (src, lib), prepare, n_sets = catalogue.task_requests(catalogue.DEFAULT_TASK, build)
    rc, out = catalogue.nvcc_build(src, lib, a.arch)
    if rc:
        print("FAIL the oracle does not build:\n" + out)
        return 1
    libs = {}
    for n in a.only:
        libs[n] = os.path.join(build, n + ".so")
        rc, out = catalogue.nvcc_build(os.path.join(catalogue.CAT, n + ".cu"), libs[n], a.arch)
        if rc:
            print("FAIL %s does not build:\n%s" % (n, out))
            return 1
    log = open(os.path.join(a.out, "timing-probe.jsonl"), "w")
    sb = catalogue.Sandbox(a.sandbox, tempfile.mkdtemp(prefix="kb-probe-sb-"),
                           os.path.join(a.out, "timing-probe-sandbox-stderr.txt"), build)
    sb.call({"op": "hello"}, 60)
    rep = sb.call(prepare, 120)
    if not rep or not rep.get("ok"):
        print("FAIL prepare: %s" % rep)
        return 1
    print("%-28s %9s %9s %9s %7s %6s %5s %4s %5s %11s %8s %8s" % (
        "variant", "median_us", "p10_us", "p90_us", "noise", "samp", "batch", "fl", "waits",
        "calls>1.1x", "span_us", "gap_us"))
    med = {}
    for n in a.only:
        for label, extra in VARIANTS:
            req = catalogue.eval_request(prepare["key"], "full", n_sets, libs[n])
            req.update(extra)
            req["dump_samples"] = True
            v = sb.call(req, 60)
            if v is None or v.get("op") != "eval" or "timing" not in v:
                print("%-28s no timing: %s" % (n + ":" + label, v and {k: v.get(k) for k in
                                                                        ("status", "reason")}))
                if v is None:
                    sb.kill()
                    sb = catalogue.Sandbox(a.sandbox, tempfile.mkdtemp(prefix="kb-probe-sb-"),
                                           os.path.join(a.out, "timing-probe-sandbox-stderr.txt"),
                                           build)
                    sb.call({"op": "hello"}, 60)
                    sb.call(prepare, 120)
                continue
            sp = spans(v) if v.get("kernels") else None
            kept = {k: x for k, x in v.items() if k != "kernels"}  # the spans say enough
            log.write(json.dumps(dict(kept, name=n, variant=label, spans_us=sp)) + "\n")
            t = v["timing"]
            med[(n, label)] = t["median_us"]
            row(n + ":" + label, t["median_us"], t["p10_us"], t["p90_us"], t["noise"],
                t["samples"], v.get("batch", 1), v.get("batch_flushed"), v.get("chunks"),
                v.get("calls_us", []), sp)
        exe = os.path.join(a.indep, "indep_" + n)
        for label, flags in INDEP:
            if not os.path.exists(exe):
                print("%-28s no build at %s" % (n + ":" + label, exe))
                break
            p = subprocess.run([exe] + SHAPES + ["--label", n + ":" + label, "--noise", "0.005",
                                                 "--max-seconds", "2", "--samples", "2000",
                                                 "--dump"] + flags,
                               capture_output=True, text=True)
            last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
            try:
                j = json.loads(last)
            except ValueError:
                print("%-28s failed: %s" % (n + ":" + label, (p.stdout + p.stderr)[-300:]))
                continue
            log.write(json.dumps(dict(j, name=n, variant=label)) + "\n")
            med[(n, label)] = j["median_us"]
            row(n + ":" + label, j["median_us"], j["p10_us"], j["p90_us"], j["noise"],
                j["samples"], j["batch"], j["batch_flushed"], None, j.get("calls_us", []))
    sb.call({"op": "quit"}, 10)
    print("\n# ratios (median / the independent timer's plain median; within 0.98..1.02 agrees)")
    for n in a.only:
        ref = med.get((n, "indep"))
        if not ref:
            continue
        print("%-16s " % n + "  ".join("%s %.3f" % (lab, med[(n, lab)] / ref)
                                       for lab, _ in VARIANTS + INDEP if (n, lab) in med))
    print("# reading: base/indep off 1 and no_trace near 1: the CUPTI trace; wait_each near base:"
          " not the chunking; indep_* near base: that habit of the sandbox's; calls>1.1x many"
          " and span well under the median: time in the window with no kernel of the call"
          " running (the host queueing behind an idle GPU, the pool's allocation)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
