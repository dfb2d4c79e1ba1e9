"""Checks a finished host-suite campaign (test_host_suite.sh).

usage: test_host_suite.py RESULTS_DIR REPORT_JSON TASK...
With h5py (Debian's /usr/bin/python3), for every task's <task>.h5: an evaluation with status ok
at the top tier ("full"), among them the naive baseline's; a candidate made by the tune
generator; the top-tier timings positive. In REPORT_JSON (`kb-submit report --format json`):
every task listed, its rank-1 candidate with a finite positive speedup over the baseline.
Prints one line per task (best candidate, speedup) and exits 1 at the first failed check.
"""
import json
import math
import os
import sys

import h5py


def s(b):
    return b.decode("utf-8") if isinstance(b, bytes) else str(b)


def fail(msg):
    print("test_host_suite: %s" % msg, file=sys.stderr)
    sys.exit(1)


def check_file(path, task):
    with h5py.File(path, "r") as f:
        spec = json.loads(f["task/spec_json"][()].tobytes().decode())
        if spec["id"] != task or spec["backend"] != "host":
            fail("%s: spec is %s/%s" % (path, spec["id"], spec["backend"]))
        cands = {s(c["id"]): c for c in f["candidates"][:]}
        evals = f["evaluations"][:]
        top = max(int(e["tier"]) for e in evals)
        if top != 3:
            fail("%s: highest tier evaluated is %d, want 3 (full)" % (path, top))
        ok_top = [e for e in evals if int(e["tier"]) == 3 and s(e["status"]) == "ok"]
        if not ok_top:
            fail("%s: no ok evaluation at the full tier" % path)
        if not all(e["median_us"] > 0 and e["samples"] >= 2 for e in ok_top):
            fail("%s: a full-tier evaluation without timing" % path)
        names = {s(cands[s(e["candidate"])]["name"]) for e in ok_top}
        if "naive" not in names:
            fail("%s: the naive baseline did not pass the full tier (ok there: %s)" % (
                path, sorted(names)))
        gens = {s(c["generator"]) for c in cands.values()}
        if "tune" not in gens:
            fail("%s: no candidate from the tune generator (generators: %s)" % (path, sorted(gens)))
        return len(cands), len(evals)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    results, report_path, tasks = sys.argv[1], sys.argv[2], sys.argv[3:]
    counts = {t: check_file(os.path.join(results, "%s.h5" % t), t) for t in tasks}
    report = json.load(open(report_path))
    listed = {t["task"]: t for t in report["tasks"]}
    if sorted(listed) != sorted(tasks):
        fail("the report lists %s" % sorted(listed))
    for t in tasks:
        cands = sorted(listed[t]["candidates"], key=lambda c: c["rank"])
        best = cands[0] if cands else None
        sp = best.get("speedup") if best else None
        if not isinstance(sp, (int, float)) or not math.isfinite(sp) or sp <= 0:
            fail("report: task %s has no best speedup (rank 1: %s)" % (
                t, best and {k: best.get(k) for k in ("name", "status", "tier_name", "speedup")}))
        print("%-14s %2d candidates %3d evaluations  best %-28s %6.2fx (%s)" % (
            t, counts[t][0], counts[t][1], best["name"], sp, best["tier_name"]))


if __name__ == "__main__":
    main()
